import { execFile, spawn } from 'node:child_process';
import { readFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { FirstFrames } from '../src/video/first-frame.ts';
import { percentile } from '../test/support/percentile.ts';
import { collectGarbage } from './measure.ts';

// What Vary's first frame costs (`npm run bench -- --only first-frame`): the time from a video file to its
// frame as a PNG or JPEG, and what the bot's process (this one) sees meanwhile: its memory, during and
// after, and its event loop's delay. The decoder is a child process at a lower CPU priority
// (src/video/first-frame.ts): its own memory, sampled from /proc (Linux), is reported beside. Baselines,
// measured in the same run: an empty Node process started and ended the way the decoder is (the cost of a
// process of its own), an empty worker thread (what the decoder cost before, in a worker, is compared
// against it), and the event loop's delay while nothing runs, for as long as each decode took, right
// after it (what the machine's other work causes). Clips: the emulator's 160x90 Constrained
// Baseline clip, a 64x36 High-profile one, and a 1 s 1080p High-profile clip made by ffmpeg.wasm in a
// process of its own (bench/first-frame-clip.ts): a provider's full-size video.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = 5;
const SAMPLE_MS = 10;
const LOOP_TICK_MS = 5;
const MB = 1024 * 1024;
const NODE_OPTIONS = ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'];

interface ClipFigures {
  name: string;
  bytes: number;
  frame: string;
  ms: { p50: number; max: number };
  /** CPU time of the bot's process (all its threads) per frame. */
  botCpuMs: number;
  peakRssMb: number;
  afterRssMb: number;
  decoderPeakRssMb: number | undefined;
  loopDelayP99Ms: number;
  idleLoopDelayP99Ms: number;
}

export interface FirstFrameReport {
  processBaselineMs: number;
  workerBaselineMs: number;
  startRssMb: number;
  clips: ClipFigures[];
}

/**
 * Records, into `histogram`, how late each of a chain of 5 ms timers fires (ns), until the function it
 * returns is called: the event loop's delay over windows apart (a perf_hooks monitor disabled and enabled
 * again counts the pause between as a delay).
 */
function recordLoopDelay(histogram: RecordableHistogram): () => void {
  let due = performance.now() + LOOP_TICK_MS;
  let timer = setTimeout(function tick() {
    const now = performance.now();
    histogram.record(Math.max(1, Math.round((now - due) * 1e6)));
    due = now + LOOP_TICK_MS;
    timer = setTimeout(tick, LOOP_TICK_MS);
  }, LOOP_TICK_MS);
  return () => clearTimeout(timer);
}

async function emptyProcessMs(): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [...NODE_OPTIONS, '--max-old-space-size=64', '-e', ''], { env: {}, stdio: 'ignore' });
  await new Promise((resolve) => child.once('close', resolve));
  return performance.now() - started;
}

async function emptyWorkerMs(): Promise<number> {
  const started = performance.now();
  const worker = new Worker('require("node:worker_threads").parentPort.postMessage(1)', { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  await worker.terminate();
  return performance.now() - started;
}

/** The largest high-water mark of this process's children's resident sets (Linux's /proc), in bytes. */
async function childrenPeakRss(): Promise<number | undefined> {
  try {
    const children = (await readFile(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8')).split(' ').filter(Boolean);
    let peak = 0;
    for (const pid of children) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb * 1024);
    }
    return peak;
  } catch {
    return undefined;
  }
}

/** The decoder's peak resident set for one frame, sampled apart from the timed runs (reading /proc costs the loop). */
async function decoderPeakRss(frames: FirstFrames, path: string): Promise<number | undefined> {
  let peak: number | undefined;
  const sampler = setInterval(() => {
    void childrenPeakRss().then((rss) => (peak = rss === undefined ? peak : Math.max(peak ?? 0, rss)));
  }, SAMPLE_MS);
  await frames.extract(path);
  clearInterval(sampler);
  return peak;
}

async function measureClip(frames: FirstFrames, name: string, path: string, bytes: number): Promise<ClipFigures> {
  const times: number[] = [];
  let peak = 0;
  let frame = '';
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), SAMPLE_MS);
  const loop = createHistogram();
  const idle = createHistogram();
  let cpuMicros = 0;
  for (let run = 0; run < RUNS; run++) {
    const stopDecoding = recordLoopDelay(loop);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const result = await frames.extract(path);
    const ms = performance.now() - started;
    const { user, system } = process.cpuUsage(cpu);
    stopDecoding();
    cpuMicros += user + system;
    times.push(ms);
    if (!result.ok) throw new Error(`${name}: ${result.message}`);
    frame = `${result.frame.width}x${result.frame.height} ${result.frame.mediaType} ${(result.frame.bytes.length / 1024).toFixed(0)} KiB`;
    // As long again with nothing running: the delay the machine's other work causes meanwhile.
    const stopWaiting = recordLoopDelay(idle);
    await new Promise((resolve) => setTimeout(resolve, ms));
    stopWaiting();
  }
  clearInterval(sampler);
  collectGarbage();
  const decoderPeak = await decoderPeakRss(frames, path);
  return {
    name,
    bytes,
    frame,
    ms: { p50: percentile(times, 50), max: Math.max(...times) },
    botCpuMs: cpuMicros / 1000 / RUNS,
    peakRssMb: peak / MB,
    afterRssMb: process.memoryUsage.rss() / MB,
    decoderPeakRssMb: decoderPeak === undefined ? undefined : decoderPeak / MB,
    loopDelayP99Ms: loop.percentile(99) / 1e6,
    idleLoopDelayP99Ms: idle.percentile(99) / 1e6,
  };
}

export async function benchmarkFirstFrame(): Promise<FirstFrameReport> {
  const directory = await mkdtemp(join(tmpdir(), 'first-frame-bench-'));
  try {
    const fullHd = join(directory, 'full-hd.mp4');
    await promisify(execFile)(join(ROOT, 'scripts', 'node'), [join(ROOT, 'bench', 'first-frame-clip.ts'), fullHd]);
    const clips = [
      { name: 'emulator clip, 160x90 Baseline', path: join(ROOT, 'src', 'emulator', 'fixtures', 'sample.mp4') },
      { name: '64x36 High', path: join(ROOT, 'test', 'video', 'fixtures', 'high-profile.mp4') },
      { name: '1080p High, 1 s', path: fullHd },
    ];
    const processBaselines: number[] = [];
    const workerBaselines: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      processBaselines.push(await emptyProcessMs());
      workerBaselines.push(await emptyWorkerMs());
    }
    collectGarbage();
    const startRssMb = process.memoryUsage.rss() / MB;
    const frames = new FirstFrames();
    const figures: ClipFigures[] = [];
    for (const clip of clips) {
      figures.push(await measureClip(frames, clip.name, clip.path, (await stat(clip.path)).size));
    }
    return {
      processBaselineMs: percentile(processBaselines, 50),
      workerBaselineMs: percentile(workerBaselines, 50),
      startRssMb,
      clips: figures,
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

export function printFirstFrameReport(report: FirstFrameReport): void {
  const { processBaselineMs: process_, workerBaselineMs: worker } = report;
  const lines = [
    `first-frame: a video file to its first frame (ffmpeg.wasm in a child process at lower priority), ${RUNS} runs per clip;` +
      ` baselines: an empty child process p50 ${process_.toFixed(1)} ms, an empty worker thread p50 ${worker.toFixed(1)} ms;` +
      ` bot process RSS before ${report.startRssMb.toFixed(0)} MB`,
    ...report.clips.map(
      (clip) =>
        `  ${clip.name.padEnd(32)} ${(clip.bytes / 1024).toFixed(0).padStart(6)} KiB -> ${clip.frame.padEnd(30)}` +
        ` p50 ${clip.ms.p50.toFixed(0).padStart(5)} ms (${(clip.ms.p50 / process_).toFixed(1)}x empty process,` +
        ` ${(clip.ms.p50 / worker).toFixed(0)}x empty worker), max ${clip.ms.max.toFixed(0)} ms;` +
        ` bot CPU ${clip.botCpuMs.toFixed(0)} ms a frame; bot RSS peak ${clip.peakRssMb.toFixed(0)} MB, after ${clip.afterRssMb.toFixed(0)} MB;` +
        ` decoder RSS peak ${clip.decoderPeakRssMb === undefined ? 'n/a' : `${clip.decoderPeakRssMb.toFixed(0)} MB`};` +
        ` bot event loop p99 +${clip.loopDelayP99Ms.toFixed(1)} ms (as long idle after each: +${clip.idleLoopDelayP99Ms.toFixed(1)} ms)`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
