import { FRAME_SAMPLES } from './format.ts';

/** Cuts a stream of samples arriving in pieces of any size into whole 20 ms frames. */
export class Framer {
  /** Where each next frame's memory comes from (a caller that is done with frames can hand them back). */
  readonly #newFrame: () => Int16Array;
  #pending: Int16Array;
  #filled = 0;

  constructor(newFrame: () => Int16Array = () => new Int16Array(FRAME_SAMPLES)) {
    this.#newFrame = newFrame;
    this.#pending = newFrame();
  }

  /** The whole frames completed by these samples. */
  push(samples: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(FRAME_SAMPLES - this.#filled, samples.length - offset);
      this.#pending.set(take === samples.length ? samples : samples.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === FRAME_SAMPLES) {
        frames.push(this.#pending);
        this.#pending = this.#newFrame();
        this.#filled = 0;
      }
    }
    return frames;
  }

  /** The last partial frame, padded with silence, or undefined when nothing is pending. */
  flush(): Int16Array | undefined {
    if (this.#filled === 0) return undefined;
    const frame = this.#pending.fill(0, this.#filled);
    this.#pending = this.#newFrame();
    this.#filled = 0;
    return frame;
  }
}
