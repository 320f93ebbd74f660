import { Worker } from 'node:worker_threads';
import { isRecord } from '../lib/json.ts';
import { KeyedLock } from '../lib/keyed-lock.ts';
import { refuse, type Result } from '../lib/result.ts';

// The first frame of a video file, as a picture the gateway takes as `image` (Vary sends it): decoded by
// ffmpeg compiled to WebAssembly in a worker thread (first-frame-worker.ts), so the event loop never waits
// on it, bounded in time, in input size and in picture size, one at a time per process.

export interface FirstFrame {
  mediaType: 'image/png' | 'image/jpeg';
  bytes: Buffer;
  width: number;
  height: number;
}

export interface FirstFrameLimits {
  /** A larger file is not decoded: the worker holds it in memory twice (its read, and the core's copy). */
  maxInputBytes: number;
  /** The PNG is sent up to this size, else the JPEG; a frame larger in both is not sent. */
  maxFrameBytes: number;
  /** The decoder refuses a larger picture: its memory grows with the picture. */
  maxPixels: number;
  /** From the worker's start (its wasm compiled, the file decoded) to its answer. */
  deadlineMs: number;
}

/**
 * 64 MiB is a 15 s 1080p video at over 30 Mbit/s, beyond what the providers deliver. 384 KiB of picture
 * is 512 KiB as a data URI: a request with it stays well under a megabyte (the gateway shows no limit
 * for images; common HTTP front ends refuse bodies from 1 MiB). 4K is the largest picture decoded. The
 * deadline leaves room for a busy machine: a frame takes 0.3-0.5 s, a 1080p one about 0.8 s, most of it
 * the core's start (npm run bench -- --only first-frame).
 */
export const FIRST_FRAME_LIMITS: FirstFrameLimits = {
  maxInputBytes: 64 * 1024 * 1024,
  maxFrameBytes: 384 * 1024,
  maxPixels: 3840 * 2160,
  deadlineMs: 15_000,
};

const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');

/** A PNG's width and height, from its IHDR chunk (the first, by the format's rule). */
function pngSize(png: Buffer): { width: number; height: number } | undefined {
  if (png.length < 24 || !png.subarray(0, 8).equals(PNG_SIGNATURE) || png.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

function bytesOf(value: unknown): Buffer | undefined {
  return value instanceof Uint8Array ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : undefined;
}

/** The worker's answer, read as any message is: checked, never trusted. */
function readAnswer(answer: unknown, maxFrameBytes: number): Result<{ frame: FirstFrame }> {
  if (!isRecord(answer)) return refuse('the first-frame worker answered something else than a frame');
  if (answer.ok !== true) return refuse(typeof answer.message === 'string' ? answer.message : 'the first frame could not be decoded');
  const png = bytesOf(answer.png);
  const jpeg = bytesOf(answer.jpeg);
  const size = png && pngSize(png);
  if (!png || !jpeg || !size) return refuse('the first-frame worker answered without a picture');
  if (png.length <= maxFrameBytes) return { ok: true, frame: { mediaType: 'image/png', bytes: png, ...size } };
  if (jpeg.length <= maxFrameBytes) return { ok: true, frame: { mediaType: 'image/jpeg', bytes: jpeg, ...size } };
  return refuse(`the first frame is ${jpeg.length} bytes even as a JPEG, over the ${maxFrameBytes} sent`);
}

/** A frame as the gateway takes it in `image.url`: a base64 data URI (docs/gateway.md, "Image inputs"). */
export function frameDataUri(frame: FirstFrame): string {
  return `data:${frame.mediaType};base64,${frame.bytes.toString('base64')}`;
}

export class FirstFrames {
  readonly #limits: FirstFrameLimits;
  /** One decode at a time: each takes a core of its own (~130 MB while it runs). */
  readonly #lock = new KeyedLock();

  constructor(limits: FirstFrameLimits = FIRST_FRAME_LIMITS) {
    this.#limits = limits;
  }

  /** The largest video file a frame is taken from: a download for one stops there. */
  get maxInputBytes(): number {
    return this.#limits.maxInputBytes;
  }

  /** The first frame of the video file at `path`, or why not (in words for a log or a card). */
  extract(path: string): Promise<Result<{ frame: FirstFrame }>> {
    return this.#lock.run('decode', () => this.#decode(path));
  }

  #decode(path: string): Promise<Result<{ frame: FirstFrame }>> {
    const { maxInputBytes, maxPixels, deadlineMs, maxFrameBytes } = this.#limits;
    return new Promise((resolve) => {
      const worker = new Worker(new URL('./first-frame-worker.ts', import.meta.url), {
        workerData: { path, maxInputBytes, maxPixels, timeoutMs: deadlineMs },
        // The core's memory is wasm memory, outside these; its JavaScript needs little.
        resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
      });
      let settled = false;
      const finish = (result: Result<{ frame: FirstFrame }>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
        void worker.terminate();
      };
      const timer = setTimeout(() => finish(refuse(`the first frame took longer than ${deadlineMs} ms to decode`)), deadlineMs);
      worker.once('message', (answer: unknown) => finish(readAnswer(answer, maxFrameBytes)));
      worker.once('error', (error) => finish(refuse(`the first-frame worker failed: ${error.message}`)));
      worker.once('exit', (code) => finish(refuse(`the first-frame worker stopped (exit ${code}) before it answered`)));
    });
  }
}
