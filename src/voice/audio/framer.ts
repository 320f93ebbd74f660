import { FRAME_SAMPLES } from './format.ts';

/** Cuts a stream of samples arriving in pieces of any size into whole 20 ms frames. */
export class Framer {
  #pending = new Int16Array(FRAME_SAMPLES);
  #filled = 0;

  /** The whole frames completed by these samples. */
  push(samples: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(FRAME_SAMPLES - this.#filled, samples.length - offset);
      this.#pending.set(samples.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === FRAME_SAMPLES) {
        frames.push(this.#pending);
        this.#pending = new Int16Array(FRAME_SAMPLES);
        this.#filled = 0;
      }
    }
    return frames;
  }

  /** The last partial frame, padded with silence, or undefined when nothing is pending. */
  flush(): Int16Array | undefined {
    if (this.#filled === 0) return undefined;
    const frame = this.#pending;
    this.#pending = new Int16Array(FRAME_SAMPLES);
    this.#filled = 0;
    return frame;
  }
}
