import { readdirSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { setPriority } from 'node:os';
import createFFmpegCore from '@ffmpeg/core';
import { isRecord, parseJsonText, readNumber, readString } from '../lib/json.ts';

// The program that decodes Vary's first frame: ffmpeg compiled to WebAssembly (@ffmpeg/core, GPL-2.0-or-
// later), run by first-frame.ts as a process of its own, the way a bot would run an ffmpeg binary: it gets
// the path of a video file (and its bounds) as its argument, and writes the first frame back on stdout as
// one JSON line, `{ ok, mediaType, width, height, base64 }` or `{ ok: false, message }`. Nothing of it runs
// in the bot's process, and its memory (the core takes 160-190 MB while it runs) goes back to the system
// when it exits, after one frame.

/** The core's emscripten build thinks it runs in a browser worker and reads `self.location` when created. */
Object.defineProperty(globalThis, 'self', { value: { location: { href: import.meta.url } }, configurable: true });

const INPUT = '/input';
const PNG = '/frame.png';
const JPEG = '/frame.jpg';
const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');

interface Settings {
  path: string;
  maxInputBytes: number;
  maxFrameBytes: number;
  maxPixels: number;
  timeoutMs: number;
  niceness: number;
}

function readSettings(text: string | undefined): Settings | undefined {
  const parsed = parseJsonText(text ?? '');
  const raw = parsed.ok ? parsed.value : undefined;
  const path = readString(raw, 'path');
  const [maxInputBytes, maxFrameBytes, maxPixels, timeoutMs, niceness] = [
    'maxInputBytes',
    'maxFrameBytes',
    'maxPixels',
    'timeoutMs',
    'niceness',
  ].map((key) => readNumber(raw, key));
  if (path === undefined || maxInputBytes === undefined || maxFrameBytes === undefined || maxPixels === undefined) return undefined;
  if (timeoutMs === undefined || niceness === undefined) return undefined;
  return { path, maxInputBytes, maxFrameBytes, maxPixels, timeoutMs, niceness };
}

/**
 * Lowers the priority of every thread of this process. first-frame.ts lowered the process's, but on Linux a
 * nice value is a thread's: V8's threads, which compile the 32 MB of wasm, started before it did and kept
 * theirs. A platform without /proc or that refuses (setPriority throws) runs it at the priority it has.
 */
function lowerPriority(niceness: number): void {
  let threads: number[];
  try {
    threads = readdirSync('/proc/self/task').map(Number);
  } catch {
    threads = [0];
  }
  for (const thread of threads) {
    try {
      setPriority(thread, niceness);
    } catch {
      // Refused: this thread keeps its priority; the frame is made all the same.
    }
  }
}

/** A PNG's width and height, from its IHDR chunk (the first, by the format's rule). */
function pngSize(png: Uint8Array): { width: number; height: number } | undefined {
  const bytes = Buffer.from(png.buffer, png.byteOffset, png.byteLength);
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE) || bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

async function decode(settings: Settings): Promise<Record<string, unknown>> {
  const { path, maxInputBytes, maxFrameBytes, maxPixels, timeoutMs } = settings;
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
  const png = core.FS.readFile(PNG);
  const size2d = pngSize(png);
  if (!size2d) return { ok: false, message: 'ffmpeg wrote no PNG' };
  const picked =
    png.byteLength <= maxFrameBytes ? { mediaType: 'image/png', bytes: png } : { mediaType: 'image/jpeg', bytes: core.FS.readFile(JPEG) };
  if (picked.bytes.byteLength > maxFrameBytes) {
    return { ok: false, message: `the first frame is ${picked.bytes.byteLength} bytes even as a JPEG, over the ${maxFrameBytes} sent` };
  }
  const base64 = Buffer.from(picked.bytes.buffer, picked.bytes.byteOffset, picked.bytes.byteLength).toString('base64');
  return { ok: true, mediaType: picked.mediaType, ...size2d, base64 };
}

async function main(): Promise<Record<string, unknown>> {
  const settings = readSettings(process.argv[2]);
  if (!settings) return { ok: false, message: 'the first-frame decoder was started without its settings' };
  lowerPriority(settings.niceness);
  return decode(settings);
}

function answer(result: unknown): void {
  // Exits once the line is written: nothing of the core is left to keep the process alive meanwhile.
  process.stdout.write(`${JSON.stringify(isRecord(result) ? result : { ok: false, message: 'no answer' })}\n`, () => process.exit(0));
}

main().then(answer, (error: unknown) => answer({ ok: false, message: error instanceof Error ? error.message : String(error) }));
