import { readFile, stat } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import createFFmpegCore from '@ffmpeg/core';
import { readNumber, readString } from '../lib/json.ts';

// A worker thread that decodes the first frame of one video file and encodes it as a PNG and a JPEG, with
// ffmpeg compiled to WebAssembly (@ffmpeg/core): no ffmpeg on the machine, nothing fetched. One worker per
// frame, ended after it, so the ~130 MB the core takes while it runs is given back at once. first-frame.ts
// starts it, bounds it in time and reads its answer; this file only decodes.

/** The core's emscripten build thinks it runs in a browser worker and reads `self.location` when created. */
Object.defineProperty(globalThis, 'self', { value: { location: { href: import.meta.url } }, configurable: true });

const INPUT = '/input';
const PNG = '/frame.png';
const JPEG = '/frame.jpg';

async function decode(): Promise<unknown> {
  const path = readString(workerData, 'path');
  const maxInputBytes = readNumber(workerData, 'maxInputBytes');
  const maxPixels = readNumber(workerData, 'maxPixels');
  const timeoutMs = readNumber(workerData, 'timeoutMs');
  if (path === undefined || maxInputBytes === undefined || maxPixels === undefined || timeoutMs === undefined) {
    return { ok: false, message: 'the first-frame worker was started without its settings' };
  }
  const { size } = await stat(path);
  if (size > maxInputBytes) return { ok: false, message: `the video is ${size} bytes, over the ${maxInputBytes} a frame is taken from` };
  const wasmBinary = await readFile(new URL(import.meta.resolve('@ffmpeg/core/wasm')));
  const core = await createFFmpegCore({ wasmBinary });
  const errors: string[] = [];
  core.setLogger(({ type, message }) => {
    if (type === 'stderr' && message.trim() !== '' && !message.startsWith('Aborted(')) errors.push(message);
  });
  core.setTimeout(timeoutMs);
  core.FS.writeFile(INPUT, await readFile(path));
  // One decode, two encodings: the PNG is sent when it is small enough, else the JPEG. `-max_pixels` makes
  // the decoder refuse a picture larger than 4K (its memory grows with the picture). The JPEG's optimal
  // Huffman tables crash this wasm build on frames of 1080p and more (a memory access out of bounds):
  // `-huffman default` uses the standard tables, a few percent larger.
  const frame = ['-map', '0:v:0', '-frames:v', '1', '-f', 'image2', '-update', '1'];
  const code = core.exec(
    ...['-v', 'error', '-max_pixels', String(maxPixels), '-i', INPUT],
    ...[...frame, '-c:v', 'png', PNG],
    ...[...frame, '-c:v', 'mjpeg', '-huffman', 'default', '-q:v', '2', JPEG],
  );
  if (code !== 0 || !core.FS.analyzePath(PNG).exists || !core.FS.analyzePath(JPEG).exists) {
    return { ok: false, message: `ffmpeg could not decode a frame (exit ${code}): ${errors.slice(-3).join(' ') || 'no message'}` };
  }
  return { ok: true, png: core.FS.readFile(PNG), jpeg: core.FS.readFile(JPEG) };
}

decode().then(
  (answer) => parentPort?.postMessage(answer),
  (error: unknown) => parentPort?.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) }),
);
