import type { Logger } from '../lib/log.ts';
import { FRAME_MS, FRAME_SAMPLES } from './audio/format.ts';
import type { SpeakerMixer } from './audio/mixer.ts';

// Moves the mixed audio into the realtime session. A slot is mixed as soon as every active speaker's
// frame for it has arrived (with one speaker: the moment their packet is decoded); a speaker whose
// packet is missing holds a slot back for one frame at most. Frames leave in appends of
// `framesPerAppend` (each websocket message costs a system call, and on a busy machine those dominate
// the pipeline's CPU), and no frame waits longer than about one frame for its partner.
// Discord sends nothing while people are quiet, but the gateway's voice activity detection only ends a
// turn when it hears silence. The VAD counts the silence in the audio, not on a clock, so none is sent
// while people pause: speech that resumes first gets the pause's silence ahead of it, in the same append,
// and once the pause is as long as the VAD's silence duration, the whole trailing silence leaves in one
// append (the turn ends when it would have with silence fed frame by frame, a little sooner if anything).
// Nothing runs while nobody speaks: an idle channel costs no timer wake-ups. When the socket is backed
// up, frames wait and leave together in one append. Frames are copied as they are queued into one
// buffer kept from append to append (the sink sends it before it returns), so nothing is allocated per frame.

export interface AudioSink {
  /** Bytes waiting in the socket: above the high-water mark, frames are batched instead of sent. */
  readonly bufferedAmount: number;
  /** Sends `pcm` before it returns: the pump writes the next append into the same memory. */
  appendAudio(pcm: Int16Array): void;
}

export interface InputPumpOptions {
  mixer: SpeakerMixer;
  log: Logger;
  /** The silence the gateway must hear after speech (none when the bot ends turns itself). */
  trailingSilence: TrailingSilence | undefined;
  /** 20 ms frames per append (default 1): fewer, larger messages for up to (n - 1) × 20 ms of latency. */
  framesPerAppend?: number;
  highWaterMarkBytes?: number;
  /** Frames held back at most while the socket is backed up; older ones are dropped. */
  maxBacklogFrames?: number;
  /** Called when an append leaves, with the frames it carries (for latency measurements). */
  onAppend?(frames: number, sentAt: number): void;
}

/** Server VAD ends a turn after `afterMs` of silence in the audio; `feedMs` of it is sent after each speech. */
export interface TrailingSilence {
  afterMs: number;
  feedMs: number;
}

/** A pause shorter than this is a packet a little late: the speech resumes with no silence slipped in. */
const LATE_PACKET_MS = 2 * FRAME_MS;
/** A frame waiting for its partner in an append leaves alone this long after it came. */
const MAX_HOLD_MS = FRAME_MS + 5;

export class InputPump {
  /** Changes when the session switches turn detection. */
  #trailingSilence: TrailingSilence | undefined;
  readonly #options: Required<Omit<InputPumpOptions, 'onAppend'>> & Pick<InputPumpOptions, 'onAppend'>;
  #sink: AudioSink | undefined;
  #running = false;
  /** The one timer: a slot's deadline, a held frame's, or the trailing silence's. */
  #timer: NodeJS.Timeout | undefined;
  /** Trailing silence not sent yet, and when the last speech came. */
  #silenceLeftMs = 0;
  #lastSpeechAt = 0;
  /** Frames not sent yet (waiting for a partner, or for the socket), back to back, and when the oldest came. */
  #pending = new Int16Array(0);
  #pendingFrames = 0;
  #pendingSince = 0;
  /** The last append's view of #pending (appends are mostly of the same length). */
  #appendView = new Int16Array(0);
  #backedUp = false;
  #dropped = 0;
  readonly #onTimer = () => this.#due();

  constructor(options: InputPumpOptions) {
    this.#options = { framesPerAppend: 1, highWaterMarkBytes: 64 * 1024, maxBacklogFrames: 50, ...options };
    this.#trailingSilence = options.trailingSilence;
  }

  get droppedFrames(): number {
    return this.#dropped;
  }

  /** From the next speech on (server VAD must hear silence to end a turn; a manual turn needs none). */
  set trailingSilence(silence: TrailingSilence | undefined) {
    this.#trailingSilence = silence;
  }

  /** No speech waiting and no trailing silence owed: the gateway has heard the end of everything said. */
  get quiet(): boolean {
    return this.#silenceLeftMs <= 0 && this.#pendingFrames === 0 && !this.#options.mixer.hasFrames;
  }

  /** Where audio goes; undefined while the realtime session reconnects (audio is then dropped). */
  set sink(sink: AudioSink | undefined) {
    this.#sink = sink;
    this.#pendingFrames = 0;
  }

  start(): void {
    this.#running = true;
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** A speaker's audio reached the mixer: every slot that is now complete goes out. */
  audioArrived(): void {
    if (this.#running) this.#drain(performance.now());
  }

  #drain(now: number): void {
    const { mixer } = this.#options;
    while (mixer.ready(now)) {
      const frame = mixer.nextFrame();
      if (!frame) break;
      this.#speech(frame, now);
    }
    this.#plan(now);
  }

  #speech(frame: Int16Array, now: number): void {
    // The pause before this speech, as the VAD would have heard it fed in real time.
    const pauseMs = now - this.#lastSpeechAt;
    if (this.#silenceLeftMs > 0 && pauseMs >= LATE_PACKET_MS) this.#queueSilence(Math.round(pauseMs / FRAME_MS) - 1, now);
    this.#silenceLeftMs = this.#trailingSilence?.feedMs ?? 0;
    this.#lastSpeechAt = now;
    this.#queue(frame, now);
    if (this.#pendingFrames >= this.#options.framesPerAppend) this.#flush();
  }

  #queue(frame: Int16Array, now: number): void {
    if (!this.#sink) return;
    const start = this.#reserveFrame(now);
    this.#pending.set(frame, start);
  }

  #queueSilence(frames: number, now: number): void {
    const owed = Math.min(frames, Math.ceil(this.#silenceLeftMs / FRAME_MS));
    this.#silenceLeftMs -= owed * FRAME_MS;
    if (!this.#sink) return;
    for (let frame = 0; frame < owed; frame++) {
      const start = this.#reserveFrame(now);
      this.#pending.fill(0, start, start + FRAME_SAMPLES);
    }
  }

  /** Room for one more pending frame (the buffer grows when a burst needs it); returns where it starts. */
  #reserveFrame(now: number): number {
    if (this.#pendingFrames === 0) this.#pendingSince = now;
    const end = (this.#pendingFrames + 1) * FRAME_SAMPLES;
    if (end > this.#pending.length) {
      const grown = new Int16Array(Math.max(end, 2 * this.#pending.length));
      grown.set(this.#pending.subarray(0, end - FRAME_SAMPLES));
      this.#pending = grown;
    }
    this.#pendingFrames++;
    return end - FRAME_SAMPLES;
  }

  /** When the VAD, fed silence in real time, would have heard enough of it to end the turn. */
  get #turnEndsAt(): number {
    return this.#lastSpeechAt + (this.#trailingSilence?.afterMs ?? 0);
  }

  #plan(now: number): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#running) return;
    let due = Infinity;
    if (this.#options.mixer.hasFrames) due = now + FRAME_MS;
    // A held frame leaves when its time is up; while the socket is backed up, the next try is a frame later.
    if (this.#pendingFrames > 0) due = Math.min(due, this.#backedUp ? now + FRAME_MS : this.#pendingSince + MAX_HOLD_MS);
    if (this.#silenceLeftMs > 0) due = Math.min(due, this.#turnEndsAt);
    if (due === Infinity) return;
    this.#timer = setTimeout(this.#onTimer, Math.max(0, due - now));
  }

  #due(): void {
    this.#timer = undefined;
    const now = performance.now();
    // A speaker missed the slot: the others' audio goes out without them.
    const partial = this.#options.mixer.nextFrame();
    if (partial) this.#speech(partial, now);
    if (this.#pendingFrames > 0 && now >= this.#pendingSince + MAX_HOLD_MS) this.#flush();
    if (this.#silenceLeftMs > 0 && now >= this.#turnEndsAt) {
      this.#queueSilence(Infinity, now);
      this.#flush();
    }
    this.#drain(now);
  }

  /** Sends what is pending in one append, unless the socket is backed up (then it keeps, up to the backlog). */
  #flush(): void {
    const sink = this.#sink;
    if (!sink || this.#pendingFrames === 0) return;
    this.#backedUp = sink.bufferedAmount > this.#options.highWaterMarkBytes;
    if (this.#backedUp) {
      const excess = this.#pendingFrames - this.#options.maxBacklogFrames;
      if (excess > 0) {
        this.#pending.copyWithin(0, excess * FRAME_SAMPLES, this.#pendingFrames * FRAME_SAMPLES);
        this.#pendingFrames -= excess;
        this.#dropped += excess;
        this.#options.log.warn('the realtime socket is backed up; dropping old input audio', { dropped: this.#dropped });
      }
      return;
    }
    const frames = this.#pendingFrames;
    this.#pendingFrames = 0;
    const samples = frames * FRAME_SAMPLES;
    if (this.#appendView.length !== samples || this.#appendView.buffer !== this.#pending.buffer)
      this.#appendView = this.#pending.subarray(0, samples);
    sink.appendAudio(this.#appendView);
    this.#options.onAppend?.(frames, performance.now());
  }
}
