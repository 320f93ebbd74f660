import type { Logger } from '../log.ts';
import { FRAME_MS, FRAME_SAMPLES, silentFrame } from './audio/format.ts';
import type { SpeakerMixer } from './audio/mixer.ts';

// Moves the mixed audio into the realtime session on Discord's 20 ms timeline. Discord sends nothing
// while people are quiet, but the gateway's voice activity detection only ends a turn when it hears
// silence, so silence is fed for a while after the last speech. Each tick's frame goes out at once
// (latency), unless the socket is backed up: then frames wait and leave together in one append.

export interface AudioSink {
  /** Bytes waiting in the socket: above the high-water mark, frames are batched instead of sent. */
  readonly bufferedAmount: number;
  appendAudio(pcm: Int16Array): void;
}

export interface InputPumpOptions {
  mixer: SpeakerMixer;
  log: Logger;
  /** How long silence is fed after the last speech. */
  silenceTailMs: number;
  highWaterMarkBytes?: number;
  /** Frames held back at most while the socket is backed up; older ones are dropped. */
  maxBacklogFrames?: number;
  /** Called when an append leaves, with the frames it carries (for latency measurements). */
  onAppend?(frames: number, sentAt: number): void;
}

export class InputPump {
  readonly #options: Required<Omit<InputPumpOptions, 'onAppend'>> & Pick<InputPumpOptions, 'onAppend'>;
  #sink: AudioSink | undefined;
  #timer: NodeJS.Timeout | undefined;
  #startedAt = 0;
  #ticks = 0;
  #silenceLeftMs = 0;
  #backlog: Int16Array[] = [];
  #dropped = 0;

  constructor(options: InputPumpOptions) {
    this.#options = { highWaterMarkBytes: 64 * 1024, maxBacklogFrames: 50, ...options };
  }

  get droppedFrames(): number {
    return this.#dropped;
  }

  /** No speech and no trailing silence being fed: the gateway has heard the end of everything said. */
  get quiet(): boolean {
    return this.#silenceLeftMs <= 0 && this.#backlog.length === 0;
  }

  /** Where audio goes; undefined while the realtime session reconnects (audio is then dropped). */
  set sink(sink: AudioSink | undefined) {
    this.#sink = sink;
    this.#backlog = [];
  }

  start(): void {
    if (this.#timer) return;
    this.#startedAt = performance.now();
    this.#ticks = 0;
    this.#schedule();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Drift-free: each tick is due at start + n × 20 ms, whatever the previous one cost. */
  #schedule(): void {
    const due = this.#startedAt + (this.#ticks + 1) * FRAME_MS;
    this.#timer = setTimeout(() => {
      this.#ticks++;
      this.tick();
      if (this.#timer) this.#schedule();
    }, Math.max(0, due - performance.now()));
  }

  /** One 20 ms step (public for benchmarks that drive the timeline themselves). */
  tick(): void {
    let frame = this.#options.mixer.nextFrame();
    if (frame) {
      this.#silenceLeftMs = this.#options.silenceTailMs;
    } else if (this.#silenceLeftMs > 0) {
      this.#silenceLeftMs -= FRAME_MS;
      frame = silentFrame();
    } else {
      return;
    }
    const sink = this.#sink;
    if (!sink) return;
    this.#backlog.push(frame);
    if (sink.bufferedAmount > this.#options.highWaterMarkBytes) {
      const excess = this.#backlog.length - this.#options.maxBacklogFrames;
      if (excess > 0) {
        this.#backlog.splice(0, excess);
        this.#dropped += excess;
        this.#options.log.warn('the realtime socket is backed up; dropping old input audio', { dropped: this.#dropped });
      }
      return;
    }
    const frames = this.#backlog;
    this.#backlog = [];
    let pcm = frames[0]!;
    if (frames.length > 1) {
      pcm = new Int16Array(frames.length * FRAME_SAMPLES);
      frames.forEach((part, index) => pcm.set(part, index * FRAME_SAMPLES));
    }
    sink.appendAudio(pcm);
    this.#options.onAppend?.(frames.length, performance.now());
  }
}
