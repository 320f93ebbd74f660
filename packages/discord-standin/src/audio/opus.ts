// Opus through opusscript (WebAssembly: no native build, same as the bot's fallback), one 48 kHz
// stereo frame at a time. Encoders and decoders keep state across frames: one per stream. Through
// OpusScriptCodec (the opusscript-codec package, which the bot uses too), which moves the samples itself: with opusscript's own encode() and decode()
// (PCM at twice its buffers' address), a stand-in hosting a couple of dozen channels aborted in libopus.

import { OpusScriptCodec } from 'opusscript-codec';
import { CHANNELS, SAMPLE_RATE, SAMPLES_PER_MS } from './format.ts';

/** The 3-byte Opus frame Discord clients and @discordjs/voice send for silence. */
export const OPUS_SILENCE_FRAME: Buffer = Buffer.from([0xf8, 0xff, 0xfe]);

/**
 * A packet no Opus decoder accepts: a code-3 TOC byte (several frames) announcing zero frames, which
 * RFC 6716 section 3.2.5 forbids. Arbitrary bytes are not reliably invalid: many TOC bytes accept any
 * payload.
 */
export const CORRUPT_OPUS_PACKET: Buffer = Buffer.from([0xfb, 0x00]);

export type OpusApplication = 'voip' | 'audio';

/** Frame lengths Opus accepts that fit Discord's 48 kHz clock. */
export const OPUS_FRAME_MS = [10, 20, 40, 60] as const;
export type OpusFrameMs = (typeof OPUS_FRAME_MS)[number];

export function isOpusFrameMs(value: number): value is OpusFrameMs {
  return OPUS_FRAME_MS.some((ms) => ms === value);
}

export interface OpusEncoderOptions {
  application?: OpusApplication;
  /** Bits per second; Discord's default channel bitrate is 64 kbps. */
  bitrate?: number;
}

/** libopus's OPUS_SET_BITRATE request. */
const OPUS_SET_BITRATE = 4002;

export class OpusFrameEncoder {
  readonly #opus: OpusScriptCodec;
  #closed = false;

  constructor(options: OpusEncoderOptions = {}) {
    this.#opus = new OpusScriptCodec(SAMPLE_RATE, CHANNELS, options.application ?? 'audio');
    this.#opus.encoderCtl(OPUS_SET_BITRATE, options.bitrate ?? 64_000);
  }

  /** Encodes exactly one frame (10, 20, 40 or 60 ms of interleaved stereo PCM) into one Opus packet. */
  encode(frame: Int16Array): Buffer {
    if (this.#closed) throw new Error('Opus encoder is closed');
    const samplesPerChannel = frame.length / CHANNELS;
    if (!isOpusFrameMs(samplesPerChannel / SAMPLES_PER_MS)) {
      throw new RangeError(`not an Opus frame length: ${samplesPerChannel} samples per channel`);
    }
    return this.#opus.encode(frame, samplesPerChannel);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#opus.delete();
  }
}

export class OpusFrameDecoder {
  readonly #opus = new OpusScriptCodec(SAMPLE_RATE, CHANNELS, 'audio');
  #closed = false;

  /** Decodes one packet into interleaved stereo PCM. Throws on a packet that is not valid Opus. */
  decode(packet: Buffer): Int16Array {
    if (this.#closed) throw new Error('Opus decoder is closed');
    if (packet.length === 0) throw new Error('empty Opus packet');
    return this.#opus.decode(packet);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#opus.delete();
  }
}

/**
 * Splits PCM into Opus packets of `frameMs` each (the last frame padded with silence): what a bot
 * feeds an AudioPlayer as `StreamType.Opus`.
 */
export function encodePcmToOpusPackets(pcm: Int16Array, options: OpusEncoderOptions & { frameMs?: OpusFrameMs } = {}): Buffer[] {
  const encoder = new OpusFrameEncoder(options);
  try {
    const frameLength = (options.frameMs ?? 20) * SAMPLES_PER_MS * CHANNELS;
    const packets: Buffer[] = [];
    for (let offset = 0; offset < pcm.length; offset += frameLength) {
      const frame = new Int16Array(frameLength);
      frame.set(pcm.subarray(offset, offset + frameLength));
      packets.push(encoder.encode(frame));
    }
    return packets;
  } finally {
    encoder.close();
  }
}
