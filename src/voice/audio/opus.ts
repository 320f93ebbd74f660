import { FRAME_SAMPLES } from './format.ts';
import { createOpusCodec, type OpusCodec, type OpusCodecKind } from './opus-codec.ts';

// Opus at the bot's format. Decoders keep state from packet to packet, so each speaker has their own; a
// corrupt packet is skipped rather than allowed to end the speaker's stream (prism's decoder would).
// Native libopus where it built, else opusscript (./opus-codec.ts); the codec is the process's unless a
// test names one.

/**
 * Opus silence. A Discord client closes each talk spurt with five of these before it goes quiet (so the
 * receiver's decoder does not interpolate across the pause), and players pad the end of an item with them.
 */
export const OPUS_SILENCE_FRAME = Buffer.from([0xf8, 0xff, 0xfe]);

export function isOpusSilenceFrame(packet: Buffer): boolean {
  return packet.length === 3 && packet[0] === 0xf8 && packet[1] === 0xff && packet[2] === 0xfe;
}

export class OpusFrameDecoder {
  readonly #codec: OpusCodec;
  #corrupt = 0;

  constructor(codec?: OpusCodecKind) {
    this.#codec = createOpusCodec('voip', codec);
  }

  /** Packets that could not be decoded (and were skipped) so far. */
  get corruptPackets(): number {
    return this.#corrupt;
  }

  /** The samples of one packet (20 ms: 480), or undefined for a packet libopus refuses (or longer than 60 ms). */
  decode(packet: Buffer): Int16Array | undefined {
    try {
      const pcm = this.#codec.decode(packet);
      return pcm.length > 0 ? pcm : undefined;
    } catch {
      this.#corrupt++;
      return undefined;
    }
  }

  delete(): void {
    this.#codec.delete();
  }
}

const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_BITRATE = 4002;
/**
 * The model's voice is synthetic speech at 24 kHz mono: libopus's default complexity of 10 spends
 * three times the CPU of complexity 3 for no difference a listener hears on speech at this rate.
 */
const ENCODER_COMPLEXITY = 3;
const ENCODER_BITRATE = 24_000;

export class OpusFrameEncoder {
  readonly #codec: OpusCodec;

  constructor(codec?: OpusCodecKind) {
    this.#codec = createOpusCodec('audio', codec);
    this.#codec.encoderCtl(OPUS_SET_COMPLEXITY, ENCODER_COMPLEXITY);
    this.#codec.encoderCtl(OPUS_SET_BITRATE, ENCODER_BITRATE);
  }

  /** One 20 ms frame (480 samples) to one Opus packet. */
  encode(frame: Int16Array): Buffer {
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`an Opus frame is ${FRAME_SAMPLES} samples, got ${frame.length}`);
    return this.#codec.encode(frame);
  }

  delete(): void {
    this.#codec.delete();
  }
}
