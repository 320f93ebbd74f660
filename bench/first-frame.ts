import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import createFFmpegCore from '@ffmpeg/core';
import { FirstFrames } from '../src/video/first-frame.ts';
import { percentile } from '../test/support/percentile.ts';
import { collectGarbage, loopDelayP99Ms, startLoopDelay } from './measure.ts';

// What Vary's first frame costs (`npm run bench -- --only first-frame`): the time from a video file to its
// frame as a PNG or JPEG, the process's memory meanwhile and after, and the event loop's delay while it
// runs (the decode is in a worker: what delay there is comes from the wasm compile's threads competing
// for the cores, not from the loop waiting on it). The baseline is an empty worker
// thread started and ended the same way, measured in the same run. Clips: the emulator's 160x90 Constrained
// Baseline clip, a 64x36 High-profile one, and a 1 s 1080p High-profile clip made here by the same
// ffmpeg.wasm (libx264, `testsrc2`): a provider's full-size video.

const RUNS = 5;
const RSS_SAMPLE_MS = 10;
const MB = 1024 * 1024;

interface ClipFigures {
  name: string;
  bytes: number;
  frame: string;
  ms: { p50: number; max: number };
  peakRssMb: number;
  afterRssMb: number;
  loopDelayP99Ms: number;
}

export interface FirstFrameReport {
  baselineMs: number;
  startRssMb: number;
  clips: ClipFigures[];
}

/** A 1 s 1080p High-profile H.264 clip, encoded by ffmpeg.wasm itself (a few seconds, offline). */
async function fullHdClip(path: string): Promise<void> {
  Object.defineProperty(globalThis, 'self', { value: { location: { href: import.meta.url } }, configurable: true });
  const wasmBinary = await readFile(new URL(import.meta.resolve('@ffmpeg/core/wasm')));
  const core = await createFFmpegCore({ wasmBinary });
  const code = core.exec(
    ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=24', '-t', '1'],
    ...['-c:v', 'libx264', '-profile:v', 'high', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '/clip.mp4'],
  );
  if (code !== 0) throw new Error(`ffmpeg.wasm could not make the 1080p clip (exit ${code})`);
  await writeFile(path, core.FS.readFile('/clip.mp4'));
}

async function emptyWorkerMs(): Promise<number> {
  const started = performance.now();
  const worker = new Worker('require("node:worker_threads").parentPort.postMessage(1)', { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  await worker.terminate();
  return performance.now() - started;
}

async function measureClip(frames: FirstFrames, name: string, path: string, bytes: number): Promise<ClipFigures> {
  const times: number[] = [];
  let peak = 0;
  let frame = '';
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  const loop = startLoopDelay();
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    const result = await frames.extract(path);
    times.push(performance.now() - started);
    if (!result.ok) throw new Error(`${name}: ${result.message}`);
    frame = `${result.frame.width}x${result.frame.height} ${result.frame.mediaType} ${(result.frame.bytes.length / 1024).toFixed(0)} KiB`;
  }
  loop.disable();
  clearInterval(sampler);
  collectGarbage();
  return {
    name,
    bytes,
    frame,
    ms: { p50: percentile(times, 50), max: Math.max(...times) },
    peakRssMb: peak / MB,
    afterRssMb: process.memoryUsage.rss() / MB,
    loopDelayP99Ms: loopDelayP99Ms(loop),
  };
}

export async function benchmarkFirstFrame(): Promise<FirstFrameReport> {
  const directory = await mkdtemp(join(tmpdir(), 'first-frame-bench-'));
  try {
    const fullHd = join(directory, 'full-hd.mp4');
    await fullHdClip(fullHd);
    collectGarbage();
    const clips = [
      { name: 'emulator clip, 160x90 Baseline', path: fileURLToPath(new URL('../src/emulator/fixtures/sample.mp4', import.meta.url)) },
      { name: '64x36 High', path: fileURLToPath(new URL('../test/video/fixtures/high-profile.mp4', import.meta.url)) },
      { name: '1080p High, 1 s', path: fullHd },
    ];
    const baselines: number[] = [];
    for (let run = 0; run < RUNS; run++) baselines.push(await emptyWorkerMs());
    collectGarbage();
    const startRssMb = process.memoryUsage.rss() / MB;
    const frames = new FirstFrames();
    const figures: ClipFigures[] = [];
    for (const clip of clips) {
      figures.push(await measureClip(frames, clip.name, clip.path, (await stat(clip.path)).size));
    }
    return { baselineMs: percentile(baselines, 50), startRssMb, clips: figures };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

export function printFirstFrameReport(report: FirstFrameReport): void {
  const lines = [
    `first-frame: a video file to its first frame (ffmpeg.wasm in a worker), ${RUNS} runs per clip;` +
      ` baseline: an empty worker started and ended, p50 ${report.baselineMs.toFixed(1)} ms; process RSS before ${report.startRssMb.toFixed(0)} MB`,
    ...report.clips.map(
      (clip) =>
        `  ${clip.name.padEnd(32)} ${(clip.bytes / 1024).toFixed(0).padStart(6)} KiB -> ${clip.frame.padEnd(30)}` +
        ` p50 ${clip.ms.p50.toFixed(0).padStart(5)} ms (${(clip.ms.p50 / report.baselineMs).toFixed(0)}x baseline), max ${clip.ms.max.toFixed(0)} ms;` +
        ` RSS peak ${clip.peakRssMb.toFixed(0)} MB, after ${clip.afterRssMb.toFixed(0)} MB; event loop p99 +${clip.loopDelayP99Ms.toFixed(1)} ms`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
