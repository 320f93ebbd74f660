import { createRequire } from 'node:module';
import { OpusScriptCodec } from 'opusscript-codec';
import { CHANNELS, FRAME_SAMPLES, SAMPLE_RATE } from './format.ts';

// Which libopus the bot runs. Native libopus (@discordjs/opus, an optional dependency built from source
// where no prebuilt binary can be fetched) where it built; opusscript, libopus compiled to WebAssembly,
// where it did not: the same codec, at about three times the CPU. @discordjs/voice and prism-media pick the
// native build on their own when it is there; the bot's own encoders and decoders pick it here. The choice
// is made once per process (OPUS_CODEC can force the fallback) and logged at the start.

/** libopus as the bot runs it: natively, or opusscript's WebAssembly build. */
export const OPUS_CODECS = ['native', 'opusscript'] as const;
export type OpusCodecKind = (typeof OPUS_CODECS)[number];
/** OPUS_CODEC: `auto` takes the native build when it loads. */
export type OpusCodecChoice = 'auto' | 'opusscript';

/** In words, for the start's log and the benchmarks. */
export const OPUS_CODEC_NAMES: Record<OpusCodecKind, string> = {
  native: 'native libopus (@discordjs/opus)',
  opusscript: 'opusscript (libopus in WebAssembly)',
};

/** One libopus encoder or decoder at the bot's format (24 kHz mono, 20 ms frames). */
export interface OpusCodec {
  /** One 20 ms frame to one Opus packet. */
  encode(frame: Int16Array): Buffer;
  /** One Opus packet to its samples; throws on a packet libopus refuses. */
  decode(packet: Buffer): Int16Array;
  encoderCtl(request: number, value: number): void;
  /** Frees what the codec holds outside the JavaScript heap (the native build frees it when collected). */
  delete(): void;
}

export type OpusApplication = 'voip' | 'audio';

/** The parts of @discordjs/opus's OpusEncoder the bot uses (it holds an encoder and a decoder state). */
interface NativeOpus {
  encode(pcm: Buffer): Buffer;
  decode(packet: Buffer): Buffer;
  applyEncoderCTL(request: number, value: number): void;
}

type NativeOpusConstructor = new (sampleRate: number, channels: number) => NativeOpus;

const OPUS_SET_APPLICATION = 4000;
const APPLICATIONS: Record<OpusApplication, number> = { voip: 2048, audio: 2049 };

/** @discordjs/opus's encoder class, or why it is not there (not installed, or its build failed). */
function loadNative(): { ok: true; OpusEncoder: NativeOpusConstructor } | { ok: false; reason: string } {
  let loaded: unknown;
  try {
    loaded = createRequire(import.meta.url)('@discordjs/opus');
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
  }
  const OpusEncoder: unknown = typeof loaded === 'object' && loaded !== null ? Reflect.get(loaded, 'OpusEncoder') : undefined;
  if (typeof OpusEncoder !== 'function') return { ok: false, reason: '@discordjs/opus has no OpusEncoder' };
  // Its class, as the package's own typings declare it: checked above to be a constructor.
  return { ok: true, OpusEncoder: OpusEncoder as NativeOpusConstructor };
}

let native: ReturnType<typeof loadNative> | undefined;

function nativeBuild(): ReturnType<typeof loadNative> {
  native ??= loadNative();
  return native;
}

/** The codecs this process can run: opusscript always, the native build when it loads. */
export function availableOpusCodecs(): OpusCodecKind[] {
  return nativeBuild().ok ? ['native', 'opusscript'] : ['opusscript'];
}

let chosen: OpusCodecKind | undefined;

/**
 * Settles the codec every encoder and decoder made from now on runs (the start calls it once with
 * OPUS_CODEC); without a call, the native build when it loads. Returns the codec, and why not the native
 * one when it was wanted and is not there.
 */
export function chooseOpusCodec(choice: OpusCodecChoice): { codec: OpusCodecKind; nativeMissing: string | undefined } {
  const build = nativeBuild();
  chosen = choice === 'auto' && build.ok ? 'native' : 'opusscript';
  return { codec: chosen, nativeMissing: choice === 'auto' && !build.ok ? build.reason : undefined };
}

/** The codec this process runs. */
export function opusCodecInUse(): OpusCodecKind {
  chosen ??= nativeBuild().ok ? 'native' : 'opusscript';
  return chosen;
}

/** The samples of a Buffer of 16-bit little-endian PCM, without a copy when it is aligned (the native build's are). */
function samplesOf(bytes: Buffer): Int16Array {
  if (bytes.byteOffset % Int16Array.BYTES_PER_ELEMENT === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  return new Int16Array(Uint8Array.from(bytes).buffer);
}

class NativeCodec implements OpusCodec {
  readonly #opus: NativeOpus;

  constructor(OpusEncoder: NativeOpusConstructor, application: OpusApplication) {
    this.#opus = new OpusEncoder(SAMPLE_RATE, CHANNELS);
    // Its encoder defaults to `audio`; its decoder has no application.
    if (application !== 'audio') this.#opus.applyEncoderCTL(OPUS_SET_APPLICATION, APPLICATIONS[application]);
  }

  encode(frame: Int16Array): Buffer {
    return this.#opus.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
  }

  decode(packet: Buffer): Int16Array {
    return samplesOf(this.#opus.decode(packet));
  }

  encoderCtl(request: number, value: number): void {
    this.#opus.applyEncoderCTL(request, value);
  }

  delete(): void {}
}

// Through OpusScriptCodec: with opusscript's own encode() and decode(), a process past about 38
// conversations had codecs that threw, and one that grew its heap further crashed (see packages/opusscript-codec).
class WebAssemblyCodec implements OpusCodec {
  readonly #codec: OpusScriptCodec;

  constructor(application: OpusApplication) {
    this.#codec = new OpusScriptCodec(SAMPLE_RATE, CHANNELS, application);
  }

  encode(frame: Int16Array): Buffer {
    return this.#codec.encode(frame, FRAME_SAMPLES);
  }

  decode(packet: Buffer): Int16Array {
    return this.#codec.decode(packet);
  }

  encoderCtl(request: number, value: number): void {
    this.#codec.encoderCtl(request, value);
  }

  delete(): void {
    this.#codec.delete();
  }
}

/** A codec of `kind` (default: the one this process runs). */
export function createOpusCodec(application: OpusApplication, kind: OpusCodecKind = opusCodecInUse()): OpusCodec {
  if (kind === 'opusscript') return new WebAssemblyCodec(application);
  const build = nativeBuild();
  if (!build.ok) throw new Error(`the native Opus codec is not there: ${build.reason}`);
  return new NativeCodec(build.OpusEncoder, application);
}
