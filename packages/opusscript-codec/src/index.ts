import OpusScript from 'opusscript';

// opusscript (0.1.1, pinned) as it should behave with many codecs in one process. Its wrapper hands the
// WebAssembly code each PCM buffer at twice the buffer's address (a byte address used as an index into
// 16-bit memory), so every encode and decode reads and writes PCM outside the codec's own allocations:
// into whatever lies there (the Discord stand-in's 48 kHz stereo codecs, a few dozen in one process, made
// libopus abort on state it no longer recognised), and past the end of the heap once a process holds
// about 75 codecs (a RangeError). Its views of the heap are also taken once, when a codec is made, and the
// heap grows (a new buffer) when later codecs need room: from then on every codec made before fails with
// a RangeError. The bot has a decoder per speaker and an encoder per conversation, so past about 38
// conversations in one process its newest codecs failed, and once the heap grew all of them did (the
// speech player's encoder throwing took the process down). This codec keeps opusscript's libopus handles
// and its allocations but moves the samples itself, at the real addresses and through the heap as it is
// now: PCM is written as plain 16-bit samples (its encode glue reassembles samples from bytes only over
// the byte count it is given, here none), and the decoder's output, one byte per 16-bit slot as the glue
// writes it, is read back as such.

/** libopus's error codes, as opusscript words them. */
const OPUS_ERRORS: Record<number, string> = {
  [-1]: 'Bad argument',
  [-2]: 'Buffer too small',
  [-3]: 'Internal error',
  [-4]: 'Invalid packet',
  [-5]: 'Unimplemented',
  [-6]: 'Invalid state',
  [-7]: 'Memory allocation fail',
};
/** Bytes each codec has for an incoming Opus packet (opusscript's MAX_PACKET_SIZE). */
const MAX_PACKET_BYTES = OpusScript.MAX_PACKET_SIZE;

type SampleRate = 8000 | 12000 | 16000 | 24000 | 48000;

/** The parts of an opusscript instance this codec uses: its libopus handles and its buffers' addresses. */
interface Glue {
  encode: (input: number, reassembleBytes: number, output: number, frameSize: number) => unknown;
  decode: (input: number, bytes: number, output: number) => unknown;
  inPcm: number;
  inPcmBytes: number;
  inOpus: number;
  outOpus: number;
  outPcm: number;
  outPcmBytes: number;
}

function field(source: object, key: string): unknown {
  return Reflect.get(source, key);
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- what `typeof x === 'function'` narrows to
function call(method: Function, self: object, args: number[]): unknown {
  const result: unknown = Reflect.apply(method, self, args);
  return result;
}

function address(codec: OpusScript, key: string): number {
  const value = field(codec, key);
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value % 8 !== 0)
    throw new Error(`opusscript: ${key} is not the aligned address this codec expects (is opusscript still 0.1.1?)`);
  return value;
}

/** The WebAssembly memory as of when `codec` was made (a view it took then is of it). */
function heapOf(codec: OpusScript): ArrayBufferLike {
  const view = field(codec, 'inOpus');
  if (!(view instanceof Uint8Array))
    throw new Error('opusscript: no view of its heap where this codec expects one (is opusscript still 0.1.1?)');
  return view.buffer;
}

/** The heap as it is now. It grows only while a codec is made; a grown heap leaves the old buffer detached. */
let heap: ArrayBufferLike | undefined;

function currentHeap(): ArrayBufferLike {
  if (heap === undefined || heap.byteLength === 0) {
    // Someone else's codec grew it: a codec made now has views of the new one.
    const probe = new OpusScript(8000, 1);
    heap = heapOf(probe);
    probe.delete();
  }
  return heap;
}

function glueOf(codec: OpusScript): Glue {
  const handler = field(codec, 'handler');
  const encode = typeof handler === 'object' && handler !== null ? field(handler, '_encode') : undefined;
  const decode = typeof handler === 'object' && handler !== null ? field(handler, '_decode') : undefined;
  if (typeof handler !== 'object' || handler === null || typeof encode !== 'function' || typeof decode !== 'function') {
    throw new Error('opusscript: no _encode/_decode glue where this codec expects it (is opusscript still 0.1.1?)');
  }
  return {
    encode: (...args): unknown => call(encode, handler, args),
    decode: (...args): unknown => call(decode, handler, args),
    inPcm: address(codec, 'inPCMPointer'),
    inPcmBytes: Number(field(codec, 'inPCMLength')),
    inOpus: address(codec, 'inOpusPointer'),
    outOpus: address(codec, 'outOpusPointer'),
    outPcm: address(codec, 'outPCMPointer'),
    outPcmBytes: Number(field(codec, 'outPCMLength')),
  };
}

function checked(result: unknown, what: string): number {
  if (typeof result !== 'number') throw new Error(`opusscript: ${what} returned no length`);
  if (result < 0) throw new Error(`${what} error: ${OPUS_ERRORS[result] ?? result}`);
  return result;
}

/** Samples per channel in an Opus packet at `sampleRate` (RFC 6716, 3.1 and 3.2), or undefined when it is malformed. */
export function opusPacketSamples(packet: Uint8Array, sampleRate: number): number | undefined {
  const toc = packet[0];
  if (toc === undefined) return undefined;
  const config = toc >> 3;
  // SILK-only configurations run 10, 20, 40 and 60 ms, hybrid ones 10 and 20, CELT-only 2.5, 5, 10 and 20.
  const frameMs = config < 12 ? [10, 20, 40, 60][config & 3]! : config < 16 ? [10, 20][config & 1]! : [2.5, 5, 10, 20][config & 3]!;
  const code = toc & 3;
  const frames = code === 0 ? 1 : code < 3 ? 2 : packet.length > 1 ? packet[1]! & 0x3f : 0;
  if (frames === 0) return undefined;
  return (frames * frameMs * sampleRate) / 1000;
}

export class OpusScriptCodec {
  readonly #codec: OpusScript;
  readonly #glue: Glue;
  readonly #sampleRate: number;
  readonly #channels: number;

  constructor(sampleRate: SampleRate, channels: 1 | 2, application: 'voip' | 'audio') {
    this.#codec = new OpusScript(sampleRate, channels, application === 'voip' ? OpusScript.Application.VOIP : OpusScript.Application.AUDIO);
    try {
      this.#glue = glueOf(this.#codec);
      heap = heapOf(this.#codec);
    } catch (error) {
      this.#codec.delete();
      throw error;
    }
    this.#sampleRate = sampleRate;
    this.#channels = channels;
  }

  /** One frame of interleaved samples (`frameSize` per channel) to one Opus packet. */
  encode(pcm: Int16Array, frameSize: number): Buffer {
    const glue = this.#glue;
    if (pcm.length !== frameSize * this.#channels || pcm.byteLength > glue.inPcmBytes)
      throw new RangeError(`opusscript: cannot encode ${pcm.length} samples as a frame of ${frameSize}`);
    new Int16Array(currentHeap(), glue.inPcm, pcm.length).set(pcm);
    const length = checked(glue.encode(glue.inPcm, 0, glue.outOpus, frameSize), 'Encode');
    return Buffer.from(new Uint8Array(currentHeap(), glue.outOpus, length));
  }

  /** One Opus packet to interleaved samples (a fresh array); throws on a packet libopus refuses. */
  decode(packet: Uint8Array): Int16Array {
    const glue = this.#glue;
    const samples = opusPacketSamples(packet, this.#sampleRate);
    if (samples === undefined) throw new Error('Decode error: Invalid packet');
    // The glue writes each output byte into a 16-bit slot: four bytes of buffer per sample.
    if (packet.length > MAX_PACKET_BYTES || samples * this.#channels * 4 > glue.outPcmBytes)
      throw new RangeError(`opusscript: a packet of ${packet.length} bytes and ${samples} samples does not fit this codec's buffers`);
    new Uint8Array(currentHeap(), glue.inOpus, packet.length).set(packet);
    const decoded = checked(glue.decode(glue.inOpus, packet.length, glue.outPcm), 'Decode') * this.#channels;
    const bytes = new Uint8Array(decoded * 2);
    // Each 16-bit slot holds one byte: setting bytes from them keeps the low eight bits, which is that byte.
    bytes.set(new Uint16Array(currentHeap(), glue.outPcm, decoded * 2));
    return new Int16Array(bytes.buffer, 0, decoded);
  }

  encoderCtl(request: number, value: number): void {
    this.#codec.encoderCTL(request, value);
  }

  delete(): void {
    this.#codec.delete();
  }
}
