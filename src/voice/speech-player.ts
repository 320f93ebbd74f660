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
import { BYTES_PER_SAMPLE, FRAME_MS, bytesToSamples } from './audio/format.ts';
import { Framer } from './audio/framer.ts';
import { OpusFrameEncoder } from './audio/opus.ts';

// The model's voice, played in the voice channel through one long-lived AudioPlayer. Each answer stream
// (keyed by the session: see answer-streams.ts) becomes an AudioResource fed with Opus packets as its
// audio deltas arrive; playback starts once a small pre-buffer is in, so network jitter does not leave
// gaps. The player counts the packets it really sent, which is what a barge-in truncates the
// conversation to.
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
/** Opus silence, as players send it. */
const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
/** How long an answer waits for the call's encryption to be ready before it is given up. */
export const ENCRYPTION_WAIT_MS = 10_000;

interface Item {
  key: string;
  stream: Readable;
  resource: AudioResource<string>;
  framer: Framer;
  /** The first byte of a sample the last delta cut in two, waiting for the rest. */
  oddByte: Buffer | undefined;
  bufferedFrames: number;
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

  /**
   * PCM bytes for an item; a new key queues behind the item playing. A delta need not end on a sample
   * boundary (the spec says only "base64 audio"): a half sample waits for the next delta of its item.
   */
  append(key: string, pcm: Buffer): void {
    const item = this.#item(key);
    if (item.ended) return;
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
    item.stream.push(null);
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
      for (const connection of this.#connections) connection.prepareAudioPacket(OPUS_SILENCE);
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
    const stream = new Readable({ objectMode: true, read() {} });
    const item: Item = {
      key,
      stream,
      resource: new AudioResource<string>([], [stream], key, SILENCE_PADDING_FRAMES),
      framer: new Framer(),
      oddByte: undefined,
      bufferedFrames: 0,
      ended: false,
      started: false,
      firstAudioAt: performance.now(),
    };
    this.#items.push(item);
    return item;
  }

  #enqueue(item: Item, frame: Int16Array): void {
    item.stream.push(this.#encoder.encode(frame));
    item.bufferedFrames++;
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
    this.#countPlayed(finished.resource.playbackDuration);
    this.#options.onFinished?.(finished.key);
    const next = this.#items[0];
    if (next) this.#startIfReady(next);
  }
}
