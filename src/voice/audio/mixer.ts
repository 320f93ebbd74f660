import { FRAME_SAMPLES } from './format.ts';
import { Framer } from './framer.ts';

// Everyone speaking, on one 20 ms timeline. Each speaker's decoded audio waits in a short queue; each
// tick takes one frame from every speaker who has one and sums them (with clipping). A queue longer than
// the jitter allowance loses its oldest frames: latency matters more than a 20 ms blip.

const MAX_QUEUED_FRAMES = 5;

export class SpeakerMixer {
  readonly #queues = new Map<string, { framer: Framer; frames: Int16Array[] }>();
  #dropped = 0;

  get droppedFrames(): number {
    return this.#dropped;
  }

  get speakers(): number {
    return this.#queues.size;
  }

  push(speaker: string, samples: Int16Array): void {
    let queue = this.#queues.get(speaker);
    if (!queue) {
      queue = { framer: new Framer(), frames: [] };
      this.#queues.set(speaker, queue);
    }
    queue.frames.push(...queue.framer.push(samples));
    while (queue.frames.length > MAX_QUEUED_FRAMES) {
      queue.frames.shift();
      this.#dropped++;
    }
  }

  remove(speaker: string): void {
    this.#queues.delete(speaker);
  }

  /** One mixed frame, or undefined when nobody had audio for this tick. */
  nextFrame(): Int16Array | undefined {
    let mixed: Int16Array | undefined;
    let sums: Int32Array | undefined;
    let contributors = 0;
    for (const queue of this.#queues.values()) {
      const frame = queue.frames.shift();
      if (!frame) continue;
      contributors++;
      if (contributors === 1) {
        mixed = frame;
        continue;
      }
      if (!sums) {
        sums = new Int32Array(FRAME_SAMPLES);
        for (let i = 0; i < FRAME_SAMPLES; i++) sums[i] = mixed![i]!;
      }
      for (let i = 0; i < FRAME_SAMPLES; i++) sums[i]! += frame[i]!;
    }
    if (!sums) return mixed;
    const out = new Int16Array(FRAME_SAMPLES);
    for (let i = 0; i < FRAME_SAMPLES; i++) out[i] = Math.max(-32768, Math.min(32767, sums[i]!));
    return out;
  }
}
