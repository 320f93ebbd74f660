import OpusScript from 'opusscript';
import { CHANNELS, FRAME_SAMPLES, SAMPLE_RATE, bytesToSamples } from './format.ts';

// Opus at the bot's format. Decoders keep state from packet to packet, so each speaker has their own; a
// corrupt packet is skipped rather than allowed to end the speaker's stream (prism's decoder would).

export class OpusFrameDecoder {
  readonly #codec = new OpusScript(SAMPLE_RATE, CHANNELS, OpusScript.Application.VOIP);
  #corrupt = 0;

  /** Packets that could not be decoded (and were skipped) so far. */
  get corruptPackets(): number {
    return this.#corrupt;
  }

  /** The samples of one packet (20 ms: 480), or undefined for a packet libopus refuses. */
  decode(packet: Buffer): Int16Array | undefined {
    try {
      const pcm = this.#codec.decode(packet);
      return pcm.length > 0 ? bytesToSamples(Buffer.from(pcm)) : undefined;
    } catch {
      this.#corrupt++;
      return undefined;
    }
  }

  delete(): void {
    this.#codec.delete();
  }
}

export class OpusFrameEncoder {
  readonly #codec = new OpusScript(SAMPLE_RATE, CHANNELS, OpusScript.Application.AUDIO);

  /** One 20 ms frame (480 samples) to one Opus packet. */
  encode(frame: Int16Array): Buffer {
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`an Opus frame is ${FRAME_SAMPLES} samples, got ${frame.length}`);
    return Buffer.from(this.#codec.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), FRAME_SAMPLES));
  }

  delete(): void {
    this.#codec.delete();
  }
}
