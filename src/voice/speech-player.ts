import { Readable } from 'node:stream';
import {
  AudioPlayerStatus,
  AudioResource,
  NoSubscriberBehavior,
  createAudioPlayer,
  type AudioPlayer,
  type VoiceConnection,
} from '@discordjs/voice';
import type { Logger } from '../lib/log.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import { BYTES_PER_SAMPLE, FRAME_MS, FRAME_SAMPLES, bytesToSamples } from './audio/format.ts';
import { Framer } from './audio/framer.ts';
import { OPUS_SILENCE_FRAME, OpusFrameEncoder } from './audio/opus.ts';

// The model's voice, played in the voice channel through one long-lived AudioPlayer. Each answer stream
// (keyed by the session: see answer-streams.ts) becomes an AudioResource fed with Opus packets as its
// audio deltas arrive; playback starts once a small pre-buffer is in, so network jitter does not leave
// gaps. The player counts the packets it really sent, which is what a barge-in truncates the
// conversation to.
//
// What waits to be played is bounded (docs/gateway.md, "Realtime client"): MAX_QUEUED_MS of audio in all,
// in at most MAX_QUEUED_ANSWERS answers. A delta that would pass either bound is checked before it is
// decoded, and cuts every answer as a barge-in would (`onOverflow`): a gateway that never ends an answer
// costs bounded memory, and is not played for minutes. Frames wait as PCM and are encoded to Opus only as
// the player takes them, one ahead: a flood costs no encoding beyond what is heard, so it does not steal
// the time the other conversations' audio needs.
//
// In an end-to-end encrypted call the library sends what it is given in the clear while its DAVE session
// has no keys, and members' clients drop such frames: the player plays only while `mayPlay` says so. An
// answer waits for it (paused, or not started), at most ENCRYPTION_WAIT_MS, then is given up.
//
// Resources are built directly from Opus packets: createAudioResource() would first build
// @discordjs/voice's transformer graph, which probes for FFmpeg with spawnSync and blocks the event loop.

/** Silence frames after an item, so Discord clients fade out instead of clicking. */
const SILENCE_PADDING_FRAMES = 5;
/** An item whose deltas stall this long (in 20 ms frames) is given up, not waited for forever. */
const MAX_MISSED_FRAMES = 50;
/** How long an answer waits for the call's encryption to be ready before it is given up. */
export const ENCRYPTION_WAIT_MS = 10_000;
/** Answer audio waiting to be played, at most: longer than any sensible spoken answer (docs/gateway.md, "Realtime client"). */
export const MAX_QUEUED_MS = 60_000;
const MAX_QUEUED_FRAMES = MAX_QUEUED_MS / FRAME_MS;
/** Answers waiting (the one playing included), at most: each holds a stream and a codec's frame, even when its audio is tiny. */
export const MAX_QUEUED_ANSWERS = 8;
const FRAME_BYTES = FRAME_SAMPLES * BYTES_PER_SAMPLE;

/** PCM still in the form it travelled in (base64 in a realtime event): decoded only if it is kept. */
export interface PendingPcm {
  /** The bytes it decodes to, at most. */
  readonly maxBytes: number;
  decode(): Buffer;
}

interface Item {
  key: string;
  stream: Readable;
  resource: AudioResource<string>;
  framer: Framer;
  /** The first byte of a sample the last delta cut in two, waiting for the rest. */
  oddByte: Buffer | undefined;
  /** Whole frames not yet encoded: each is encoded when the player is about to send it. */
  readonly frames: Int16Array[];
  /** Frames this item was given so far. */
  bufferedFrames: number;
  /** The stream asked for a packet when no frame was there: the next frame is encoded at once. */
  wanted: boolean;
  ended: boolean;
  started: boolean;
  /** When its first audio came (performance.now()): its latency out runs to the moment it starts playing. */
  firstAudioAt: number;
}

export interface StoppedItem {
  key: string;
  /** Milliseconds of this item that reached Discord (0 for an item that had not started). */
  playedMs: number;
}

export interface SpeechPlayerOptions {
  prebufferMs: number;
  log: Logger;
  /** An item was played to its end. */
  onFinished?(key: string): void;
  /** Whether what is played now would reach listeners (see above); default always. */
  mayPlay?: () => boolean;
  /** Answers waited ENCRYPTION_WAIT_MS for `mayPlay` and were stopped, with what of them was heard. */
  onGaveUpWaiting?(stopped: StoppedItem[]): void;
  /** Counts the frames played and each answer's wait from its first audio to its play; default none. */
  metrics?: Pick<BotMetrics, 'voiceFrames' | 'voiceLatency'> | undefined;
  /** A delta would have passed the bound on what waits to be played: every answer was stopped (logged here), with what of each was heard. */
  onOverflow?(stopped: StoppedItem[]): void;
}

export class SpeechPlayer {
  readonly player: AudioPlayer;
  readonly #encoder = new OpusFrameEncoder();
  readonly #prebufferFrames: number;
  readonly #log: Logger;
  readonly #options: SpeechPlayerOptions;
  /** The item playing (first) and those waiting behind it. */
  readonly #items: Item[] = [];
  readonly #connections = new Set<VoiceConnection>();
  readonly #mayPlay: () => boolean;
  /** Running while an answer waits for `mayPlay`. */
  #waitingSince: NodeJS.Timeout | undefined;
  /** The frames of the items in #items, played or not. */
  #heldFrames = 0;

  constructor(options: SpeechPlayerOptions) {
    this.#prebufferFrames = Math.max(1, Math.ceil(options.prebufferMs / FRAME_MS));
    this.#log = options.log;
    this.#options = options;
    this.#mayPlay = options.mayPlay ?? (() => true);
    this.player = createAudioPlayer({ behaviors: { noSubscriber: NoSubscriberBehavior.Play, maxMissedFrames: MAX_MISSED_FRAMES } });
    this.player.on('error', (error) => this.#log.warn('voice playback error', { error }));
    this.player.on('stateChange', (previous, next) => {
      if (previous.status !== AudioPlayerStatus.Idle && next.status === AudioPlayerStatus.Idle) this.#onItemFinished();
    });
  }

  /** Plays into this voice connection. */
  subscribe(connection: VoiceConnection): void {
    connection.subscribe(this.player);
    this.#connections.add(connection);
  }

  /** Whether the bot is talking (or about to: an item is buffered or playing). */
  get speaking(): boolean {
    return this.#items.length > 0;
  }

  /** Milliseconds of answer audio waiting to be played, in all answers (what MAX_QUEUED_MS bounds). */
  get queuedMs(): number {
    return this.#queuedFrames() * FRAME_MS;
  }

  /**
   * PCM bytes for an item; a new key queues behind the item playing. A delta need not end on a sample
   * boundary (the spec says only "base64 audio"): a half sample waits for the next delta of its item.
   * Audio past the bound is not decoded: it stops every answer (see above).
   */
  append(key: string, audio: PendingPcm): void {
    const item = this.#item(key);
    if (item.ended) return;
    const incomingFrames = Math.ceil(audio.maxBytes / FRAME_BYTES);
    if (this.#items.length > MAX_QUEUED_ANSWERS || this.#queuedFrames() + incomingFrames > MAX_QUEUED_FRAMES) {
      this.#overflow(incomingFrames);
      return;
    }
    const pcm = audio.decode();
    const bytes = item.oddByte ? Buffer.concat([item.oddByte, pcm]) : pcm;
    item.oddByte = bytes.length % BYTES_PER_SAMPLE === 0 ? undefined : Buffer.from(bytes.subarray(bytes.length - 1));
    for (const frame of item.framer.push(bytesToSamples(bytes))) this.#enqueue(item, frame);
    this.#startIfReady(item);
  }

  /** The item's audio is complete: play what is buffered, even if under the pre-buffer. */
  end(key: string): void {
    const item = this.#items.find((candidate) => candidate.key === key);
    if (!item || item.ended) return;
    const last = item.framer.flush();
    if (last) this.#enqueue(item, last);
    item.ended = true;
    if (item.wanted) this.#feed(item);
    this.#startIfReady(item);
  }

  /**
   * Barge-in: silence at once, forget what is queued, and say how much of each item was heard. While
   * an item still has audio, the packet the player prepared for the next 20 ms tick is never sent, so
   * it is not counted; once its audio has all been read, only silence padding was pending.
   */
  stop(): StoppedItem[] {
    clearTimeout(this.#waitingSince);
    this.#waitingSince = undefined;
    const wasPlaying = this.#items[0]?.started === true;
    this.#heldFrames = 0;
    const stopped = this.#items.splice(0).map((item) => {
      const pendingMs = item.stream.readableEnded ? 0 : FRAME_MS;
      const playedMs = item.started ? Math.max(0, item.resource.playbackDuration - pendingMs) : 0;
      this.#countPlayed(playedMs);
      item.stream.destroy();
      return { key: item.key, playedMs };
    });
    this.player.stop(true);
    // The player leaves the packet it prepared for the next tick in the connection, which sends it when
    // the next answer starts: 20 ms of the answer just cut off. Silence takes its place.
    if (wasPlaying) {
      for (const connection of this.#connections) connection.prepareAudioPacket(OPUS_SILENCE_FRAME);
    }
    return stopped;
  }

  /** `mayPlay` may have changed: a waiting answer starts or resumes, a playing one pauses. */
  playabilityChanged(): void {
    const first = this.#items[0];
    if (!this.#mayPlay()) {
      // Silence frames go out in the clear by design (Discord's clients expect them), so the pause may pad.
      if (first?.started && this.player.pause(true)) this.#waitForPlayability();
      return;
    }
    clearTimeout(this.#waitingSince);
    this.#waitingSince = undefined;
    if (this.player.state.status === AudioPlayerStatus.Paused) this.player.unpause();
    if (first) this.#startIfReady(first);
  }

  destroy(): void {
    this.stop();
    this.#encoder.delete();
  }

  #item(key: string): Item {
    const existing = this.#items.find((item) => item.key === key);
    if (existing) return existing;
    // One packet ahead of the player: the rest waits as PCM (see above).
    const stream = new Readable({ objectMode: true, highWaterMark: 1, read: () => this.#feed(item) });
    const item: Item = {
      key,
      stream,
      resource: new AudioResource<string>([], [stream], key, SILENCE_PADDING_FRAMES),
      framer: new Framer(),
      oddByte: undefined,
      frames: [],
      bufferedFrames: 0,
      wanted: false,
      ended: false,
      started: false,
      firstAudioAt: performance.now(),
    };
    this.#items.push(item);
    return item;
  }

  #enqueue(item: Item, frame: Int16Array): void {
    item.frames.push(frame);
    item.bufferedFrames++;
    this.#heldFrames++;
    if (item.wanted) this.#feed(item);
  }

  /** The stream wants a packet: the next frame, encoded now, or the end once the item has ended. */
  #feed(item: Item): void {
    const frame = item.frames.shift();
    item.wanted = frame === undefined && !item.ended;
    if (frame) item.stream.push(this.#encoder.encode(frame));
    else if (item.ended) item.stream.push(null);
  }

  /** Frames given and not played yet: only the first item plays, and its resource counts what it read. */
  #queuedFrames(): number {
    const first = this.#items[0];
    return this.#heldFrames - (first?.started ? first.resource.playbackDuration / FRAME_MS : 0);
  }

  /** A delta of `droppedFrames` would pass the bound: every answer stops, as a barge-in stops them. */
  #overflow(droppedFrames: number): void {
    const queuedMs = this.queuedMs;
    const answers = this.#items.length;
    const stopped = this.stop();
    this.#log.warn('answer audio past its bound; the answers were cut off', {
      boundMs: MAX_QUEUED_MS,
      droppedMs: queuedMs + droppedFrames * FRAME_MS,
      playedMs: stopped.reduce((sum, item) => sum + item.playedMs, 0),
      answers,
    });
    this.#options.onOverflow?.(stopped);
  }

  #startIfReady(item: Item): void {
    if (item.started || this.#items[0] !== item) return;
    if (item.bufferedFrames < this.#prebufferFrames && !item.ended) return;
    if (!this.#mayPlay()) return this.#waitForPlayability();
    item.started = true;
    this.#options.metrics?.voiceLatency('out', (performance.now() - item.firstAudioAt) / 1000);
    this.player.play(item.resource);
  }

  #waitForPlayability(): void {
    this.#waitingSince ??= setTimeout(() => {
      this.#waitingSince = undefined;
      if (this.#mayPlay() || this.#items.length === 0) return;
      this.#log.warn("answers waited too long for the call's encryption and were given up", {
        waitedMs: ENCRYPTION_WAIT_MS,
        answers: this.#items.length,
      });
      this.#options.onGaveUpWaiting?.(this.stop());
    }, ENCRYPTION_WAIT_MS);
  }

  #countPlayed(playedMs: number): void {
    const frames = Math.round(playedMs / FRAME_MS);
    if (frames > 0) this.#options.metrics?.voiceFrames('out', frames);
  }

  #onItemFinished(): void {
    const finished = this.#items[0];
    if (!finished?.started) return;
    this.#items.shift();
    this.#heldFrames -= finished.bufferedFrames;
    this.#countPlayed(finished.resource.playbackDuration);
    this.#options.onFinished?.(finished.key);
    const next = this.#items[0];
    if (next) this.#startIfReady(next);
  }
}
