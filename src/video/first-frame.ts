import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseJsonText, readNumber, readString } from '../lib/json.ts';
import { KeyedLock } from '../lib/keyed-lock.ts';
import { refuse, type Result } from '../lib/result.ts';

// The first frame of a video file, as a picture the gateway takes as `image` (Vary sends it): decoded by
// ffmpeg compiled to WebAssembly (@ffmpeg/core) in a program of its own, first-frame-decoder.ts, run as a
// child process with the same Node, the way a bot runs an ffmpeg binary: a file in, a picture out. Not in
// the bot's process: the core takes 160-190 MB while it runs, which a process of its own gives back to the
// system when it exits (a worker thread's stayed with the bot's allocator), and it runs at a lower CPU
// priority, so the bot's event loop (and the voice part's 20 ms audio clock) keeps its cores meanwhile.
// Bounded in time (killed at the deadline), in input size, picture size and answer size, one at a time
// per process. @ffmpeg/core is an optional dependency: without it there is no frame, and Vary says so.

export interface FirstFrame {
  mediaType: 'image/png' | 'image/jpeg';
  bytes: Buffer;
  width: number;
  height: number;
}

export interface FirstFrameLimits {
  /** A larger file is not decoded: the decoder holds it in memory twice (its read, and the core's copy). */
  maxInputBytes: number;
  /** The PNG is sent up to this size, else the JPEG; a frame larger in both is not sent. */
  maxFrameBytes: number;
  /** The decoder refuses a larger picture: its memory grows with the picture. */
  maxPixels: number;
  /** From the decoder's start (Node, the wasm compiled, the file decoded) to its answer; then it is killed. */
  deadlineMs: number;
}

/**
 * 64 MiB is a 15 s 1080p video at over 30 Mbit/s, beyond what the providers deliver. 384 KiB of picture
 * is 512 KiB as a data URI: a request with it stays well under a megabyte (the gateway shows no limit
 * for images; common HTTP front ends refuse bodies from 1 MiB). 4K is the largest picture decoded. The
 * deadline leaves room for a busy machine: a frame takes 0.3-0.5 s, a 1080p one 0.5-0.9 s, most of it
 * the core's start (npm run bench -- --only first-frame).
 */
export const FIRST_FRAME_LIMITS: FirstFrameLimits = {
  maxInputBytes: 64 * 1024 * 1024,
  maxFrameBytes: 384 * 1024,
  maxPixels: 3840 * 2160,
  deadlineMs: 15_000,
};

/** The package that holds the decoder: optional (README, "Third-party licences"). */
const CORE_PACKAGE = '@ffmpeg/core';
/** The decoder's program, run from the bot's own source folder (the image copies it with the rest of src). */
export const FIRST_FRAME_DECODER = fileURLToPath(new URL('./first-frame-decoder.ts', import.meta.url));
/**
 * How the decoder is run: with the Node running the bot, stripping types as scripts/node does. Its own
 * JavaScript needs little (the core's memory is wasm memory, outside V8's heap limits). `--liftoff-only`:
 * the wasm runs once, for one frame, and V8's optimising tier would compile its busy functions again in
 * the background for nothing (a 1080p frame: 0.51 s of CPU and 213 MB without it, 0.40 s and 175 MB with).
 */
const DECODER_NODE_OPTIONS = [
  '--experimental-strip-types',
  '--disable-warning=ExperimentalWarning',
  '--max-old-space-size=64',
  '--liftoff-only',
];
/** The decoder's CPU priority, above the bot's 0 (the lowest is 19): it gets what the bot leaves. */
const DECODER_NICENESS = 10;
/** Of what the decoder says on stderr, the last this many bytes are kept, for a failure's message. */
const STDERR_TAIL_BYTES = 2048;
/** Its answer's JSON around the picture's base64. */
const ANSWER_OVERHEAD_BYTES = 1024;

const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');
const JPEG_START = Buffer.from('ffd8ff', 'hex');

/** Whether the decoder's package is installed (it is optional). */
export function decoderInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve(CORE_PACKAGE);
    return true;
  } catch {
    return false;
  }
}

/** The decoder's answer, read as anything from outside the process is: checked, never trusted. */
function readAnswer(text: string, maxFrameBytes: number, maxPixels: number): Result<{ frame: FirstFrame }> {
  const parsed = parseJsonText(text);
  if (!parsed.ok) return refuse('the first-frame decoder answered something else than JSON');
  const answer = parsed.value;
  const mediaType = readString(answer, 'mediaType');
  const width = readNumber(answer, 'width');
  const height = readNumber(answer, 'height');
  const base64 = readString(answer, 'base64');
  if (mediaType === undefined || width === undefined || height === undefined || base64 === undefined) {
    return refuse(readString(answer, 'message') ?? 'the first-frame decoder answered without a picture');
  }
  const bytes = Buffer.from(base64, 'base64');
  const sized = Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0 && width * height <= maxPixels;
  const png = mediaType === 'image/png' && bytes.subarray(0, 8).equals(PNG_SIGNATURE);
  const jpeg = mediaType === 'image/jpeg' && bytes.subarray(0, 3).equals(JPEG_START);
  if (!sized || !(png || jpeg) || bytes.length > maxFrameBytes)
    return refuse('the first-frame decoder answered a picture out of its bounds');
  return { ok: true, frame: { mediaType: png ? 'image/png' : 'image/jpeg', bytes, width, height } };
}

/** A frame as the gateway takes it in `image.url`: a base64 data URI (docs/gateway.md, "Image inputs"). */
export function frameDataUri(frame: FirstFrame): string {
  return `data:${frame.mediaType};base64,${frame.bytes.toString('base64')}`;
}

export class FirstFrames {
  readonly #limits: FirstFrameLimits;
  /** One decode at a time: each takes a core of its own (160-190 MB while it runs). */
  readonly #lock = new KeyedLock();
  /** Looked up once: an operator installs the package, or leaves it out, before the bot starts. */
  readonly installed: boolean;

  constructor(limits: FirstFrameLimits = FIRST_FRAME_LIMITS, installed = decoderInstalled()) {
    this.#limits = limits;
    this.installed = installed;
  }

  /** The largest video file a frame is taken from: a download for one stops there. */
  get maxInputBytes(): number {
    return this.#limits.maxInputBytes;
  }

  /** The first frame of the video file at `path`, or why not (in words for a log or a card). */
  extract(path: string): Promise<Result<{ frame: FirstFrame }>> {
    if (!this.installed) return Promise.resolve(refuse(`the frame decoder (${CORE_PACKAGE}) is not installed`));
    return this.#lock.run('decode', () => this.#decode(path));
  }

  #decode(path: string): Promise<Result<{ frame: FirstFrame }>> {
    const { maxInputBytes, maxPixels, deadlineMs, maxFrameBytes } = this.#limits;
    const settings = { path, maxInputBytes, maxFrameBytes, maxPixels, timeoutMs: deadlineMs, niceness: DECODER_NICENESS };
    const maxAnswerBytes = Math.ceil(maxFrameBytes / 3) * 4 + ANSWER_OVERHEAD_BYTES;
    return new Promise((resolve) => {
      // No environment of the bot's: the decoder needs none, and the bot's secrets stay with the bot.
      const child = spawn(process.execPath, [...DECODER_NODE_OPTIONS, FIRST_FRAME_DECODER, JSON.stringify(settings)], {
        env: {},
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      if (child.pid !== undefined) {
        try {
          setPriority(child.pid, DECODER_NICENESS);
        } catch {
          // A platform that refuses: the decoder lowers its own threads (first-frame-decoder.ts), or runs as it is.
        }
      }
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      let stderr = Buffer.alloc(0);
      let settled = false;
      const finish = (result: Result<{ frame: FirstFrame }>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.kill('SIGKILL');
        resolve(result);
      };
      const timer = setTimeout(() => finish(refuse(`the first frame took longer than ${deadlineMs} ms to decode`)), deadlineMs);
      child.stdout.on('data', (chunk: Buffer) => {
        stdoutBytes += chunk.length;
        if (stdoutBytes > maxAnswerBytes) finish(refuse(`the first-frame decoder answered more than ${maxAnswerBytes} bytes`));
        else stdout.push(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr = Buffer.concat([stderr, chunk]).subarray(-STDERR_TAIL_BYTES);
      });
      child.once('error', (error) => finish(refuse(`the first-frame decoder could not be started: ${error.message}`)));
      child.once('close', (code, signal) => {
        if (code === 0) {
          finish(readAnswer(Buffer.concat(stdout).toString('utf8'), maxFrameBytes, maxPixels));
          return;
        }
        const said = stderr.toString('utf8').trim().split('\n').slice(-3).join(' ');
        finish(refuse(`the first-frame decoder stopped (${signal ?? `exit ${code}`}) before it answered${said ? `: ${said}` : ''}`));
      });
    });
  }
}
