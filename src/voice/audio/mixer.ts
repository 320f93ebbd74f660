import { FRAME_MS, FRAME_SAMPLES } from './format.ts';
import { Framer } from './framer.ts';

// Everyone speaking, on one 20 ms timeline. Each speaker's decoded audio waits in a short queue; each
// slot takes one frame from every speaker who has one and sums them (with clipping). A slot is ready
// once every active speaker (one who sent audio within the last couple of frames) has a frame in it.
// A queue longer than the jitter allowance loses its oldest frames: latency matters more than a 20 ms blip.
// A mixed slot is summed in buffers the mixer keeps, and a frame it is done with is used again for a
// later one: once every speaker's queue is full, nothing is allocated per frame.

const MAX_QUEUED_FRAMES = 5;
/** A speaker with no audio for this long no longer holds a slot back (they paused, or a packet is very late). */
const ACTIVE_GAP_MS = 2.5 * FRAME_MS;

export class SpeakerMixer {
  readonly #queues = new Map<string, { framer: Framer; frames: Int16Array[]; lastPushAt: number }>();
  #dropped = 0;
  readonly #sums = new Int32Array(FRAME_SAMPLES);
  readonly #mixed = new Int16Array(FRAME_SAMPLES);
  /** Frames done with, for the framers to fill again; and the frame the last nextFrame() handed out. */
  readonly #spare: Int16Array[] = [];
  #lent: Int16Array | undefined;
  readonly #newFrame = () => this.#spare.pop() ?? new Int16Array(FRAME_SAMPLES);

  get droppedFrames(): number {
    return this.#dropped;
  }

  get speakers(): number {
    return this.#queues.size;
  }

  /** Whether any speaker has a frame waiting. */
  get hasFrames(): boolean {
    for (const queue of this.#queues.values()) if (queue.frames.length > 0) return true;
    return false;
  }

  /** The next slot can be mixed: some frame waits, and every active speaker has one in it. */
  ready(now: number): boolean {
    let any = false;
    for (const queue of this.#queues.values()) {
      if (queue.frames.length > 0) any = true;
      else if (now - queue.lastPushAt < ACTIVE_GAP_MS) return false;
    }
    return any;
  }

  push(speaker: string, samples: Int16Array, now = performance.now()): void {
    let queue = this.#queues.get(speaker);
    if (!queue) {
      queue = { framer: new Framer(this.#newFrame), frames: [], lastPushAt: now };
      this.#queues.set(speaker, queue);
    }
    queue.lastPushAt = now;
    for (const frame of queue.framer.push(samples)) queue.frames.push(frame);
    while (queue.frames.length > MAX_QUEUED_FRAMES) {
      this.#spare.push(queue.frames.shift()!);
      this.#dropped++;
    }
  }

  /** The speaker closed their talk spurt: no slot waits for them until their next audio. */
  quiet(speaker: string): void {
    const queue = this.#queues.get(speaker);
    if (queue) queue.lastPushAt = -Infinity;
  }

  remove(speaker: string): void {
    this.#queues.delete(speaker);
  }

  /**
   * One mixed frame (of whoever has one for this slot), or undefined when nobody has audio. The frame
   * is the mixer's until the next call: copy it to keep it.
   */
  nextFrame(): Int16Array | undefined {
    if (this.#lent) this.#spare.push(this.#lent);
    this.#lent = undefined;
    let first: Int16Array | undefined;
    let contributors = 0;
    const sums = this.#sums;
    for (const queue of this.#queues.values()) {
      const frame = queue.frames.shift();
      if (!frame) continue;
      contributors++;
      if (contributors === 1) {
        first = frame;
        continue;
      }
      if (contributors === 2) for (let i = 0; i < FRAME_SAMPLES; i++) sums[i] = first![i]!;
      for (let i = 0; i < FRAME_SAMPLES; i++) sums[i]! += frame[i]!;
      this.#spare.push(frame);
    }
    if (contributors < 2) {
      this.#lent = first;
      return first;
    }
    this.#spare.push(first!);
    const mixed = this.#mixed;
    for (let i = 0; i < FRAME_SAMPLES; i++) mixed[i] = Math.max(-32768, Math.min(32767, sums[i]!));
    return mixed;
  }
}
