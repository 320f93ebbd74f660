// One simulated user's microphone in one guild: PCM in, encrypted RTP/Opus to the bot out, the way a
// Discord client behaves. SPEAKING (op 5) announces the user's SSRC before the first packet; frames are
// paced on a drift-free 20 ms clock; digital silence is NOT transmitted (after a few F8 FF FE frames
// the client goes quiet), while the RTP timestamp keeps counting samples through the silence. In a
// DAVE call each Opus frame is end-to-end encrypted by the user's DAVE client after encoding and before
// transport encryption, and the first frame waits until the bot holds the key for it.

import { randomInt } from 'node:crypto';
import { setImmediate as yieldToEventLoop, setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../lib/log.ts';
import { CHANNELS, FULL_SCALE, SAMPLES_PER_MS } from '../audio/format.ts';
import { OPUS_SILENCE_FRAME, OpusFrameEncoder, isOpusFrameMs } from '../audio/opus.ts';
import type { OpusApplication, OpusFrameMs } from '../audio/opus.ts';
import type { SealRtpOptions } from './rtp-crypto.ts';

/** What a speaker needs from the bot's current voice connection. */
export interface SpeakerLink {
  /** The bot's user id. */
  readonly userId: string;
  /** Sends op 5 SPEAKING for the user; true when this connection had not heard of the SSRC before. */
  announceSpeaking(userId: string, ssrc: number): boolean;
  /**
   * Encrypts with the connection's key and next nonce, and sends to the bot's UDP address. With
   * `breakSeal`, the authentication tag is damaged so the bot's decryption of it fails.
   */
  sendRtp(packet: Omit<SealRtpOptions, 'key' | 'nonce'>, options?: { breakSeal?: boolean }): void;
}

/** The user's DAVE client, as far as speaking goes. */
export interface SpeakerDave {
  /** What goes on the wire for one Opus frame; undefined when it has no key to send with (not sent). */
  protect(opus: Buffer): Buffer | undefined;
  /** Resolves once `botUserId` can decrypt what the user sends (at once when the call is not encrypted). */
  untilHeardBy(botUserId: string): Promise<void>;
}

export interface SpeakOptions {
  /** Opus frame length; Discord clients use 20 ms. */
  frameMs?: OpusFrameMs;
  /** Pace frames in real time (default). false sends them as fast as the event loop allows. */
  realtime?: boolean;
  application?: OpusApplication;
  /** Frames whose peak is at or below this fraction of full scale count as silence and are not sent. Default 0. */
  silenceThreshold?: number;
  /** F8 FF FE frames sent when a talk spurt ends, before going quiet. Default 5, like Discord clients. */
  trailingSilenceFrames?: number;
  /** Attach a one-byte RTP header extension (audio level) like Discord clients do. Default false. */
  headerExtension?: boolean;
  /**
   * Frames (0-based, of the PCM) whose packet goes out with a damaged transport authentication tag. The
   * bot's decryption fails on it and @discordjs/voice destroys the user's receive stream, as it also does
   * when DAVE decryption keeps failing and it cannot recover by op 31; the packets around it are sound.
   */
  brokenSealFrames?: readonly number[];
  /**
   * In a DAVE call, wait before the first frame until the bot holds the user's key (default true).
   * false: talk at once with whatever key the user has, as a member who was already talking when the
   * bot joined does; the bot gets frames it cannot decrypt yet (a user without a key sends nothing).
   */
  waitForBotKey?: boolean;
  /**
   * The Opus packets of `pcm`, one per frame, already encoded (as encodePcmToOpusPackets makes them):
   * sent instead of encoding each frame again, so that a benchmark's far end with many speakers does not
   * spend its CPU on encoders. Silence is still judged on `pcm`.
   */
  opusPackets?: readonly Buffer[];
  signal?: AbortSignal;
}

export interface SpeakResult {
  /** Opus packets with audio. */
  audioPackets: number;
  /** F8 FF FE packets sent at the end of talk spurts. */
  silencePackets: number;
  /** Silent frames that were not transmitted. */
  skippedFrames: number;
  /** ms since the epoch of the first and last packet sent (undefined when nothing was sent). */
  firstPacketAt: number | undefined;
  lastPacketAt: number | undefined;
  /** True when the bot's connection went away (or the speaker was stopped) before the end. */
  interrupted: boolean;
}

export interface SpeakerOptions {
  userId: string;
  ssrc: number;
  /** The bot's connection as it is now, or why the user cannot be heard. */
  link: () => SpeakerLink | string;
  /** The user's DAVE client in the channel it is in now; undefined without DAVE. */
  dave: () => SpeakerDave | undefined;
  /** Wait after the very first SPEAKING on a connection, so the bot maps the SSRC before audio arrives. */
  speakingLeadMs: number;
  log: Logger;
}

// Discord clients send the audio level extension: element id 1, one byte; the top bit flags voice.
const AUDIO_LEVEL_EXTENSION = Buffer.from([0x10, 0x80 | 30, 0x00, 0x00]);

function peakOf(frame: Int16Array): number {
  let max = 0;
  for (const sample of frame) max = Math.max(max, Math.abs(sample));
  return max;
}

export class SimulatedSpeaker {
  readonly userId: string;
  readonly ssrc: number;
  readonly #options: SpeakerOptions;
  readonly #stopped = new AbortController();
  #sequence = randomInt(0, 2 ** 16);
  #timestamp = randomInt(0, 2 ** 32 - 1);
  /** performance.now() at which the RTP clock stands at #timestamp; undefined before any audio. */
  #clockAt: number | undefined;
  #encoder: OpusFrameEncoder | undefined;
  #encoderApplication: OpusApplication | undefined;
  // One microphone: utterances and raw packets go out one after another, never interleaved.
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: SpeakerOptions) {
    this.userId = options.userId;
    this.ssrc = options.ssrc;
    this.#options = options;
  }

  speak(pcm: Int16Array, options: SpeakOptions = {}): Promise<SpeakResult> {
    const frameMs = options.frameMs ?? 20;
    if (!isOpusFrameMs(frameMs)) throw new RangeError(`frameMs must be 10, 20, 40 or 60, got ${String(frameMs)}`);
    if (pcm.length % CHANNELS !== 0) throw new RangeError('PCM must be interleaved stereo (an even number of samples)');
    return this.#enqueue(() => this.#utter(pcm, frameMs, options));
  }

  sendRawPacket(payload: Buffer, options: Pick<SpeakOptions, 'headerExtension'> = {}): Promise<void> {
    return this.#enqueue(async () => {
      const link = this.#requireLink();
      await this.#mapSsrc(link, this.#stopped.signal);
      this.#catchUpClock(20);
      this.#send(this.#requireLink(), payload, options.headerExtension ?? false);
      this.#advanceClock(20);
    });
  }

  /** Stops whatever is being said (the user left, or the server closes) and frees the encoder. */
  stop(): void {
    this.#stopped.abort();
    this.#encoder?.close();
    this.#encoder = undefined;
  }

  #enqueue<T>(task: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(task);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #requireLink(): SpeakerLink {
    const link = this.#options.link();
    if (typeof link === 'string') throw new Error(`voice stand-in: user ${this.userId} cannot speak: ${link}`);
    return link;
  }

  async #mapSsrc(link: SpeakerLink, signal: AbortSignal, waitForBotKey = true): Promise<void> {
    // Tests hear whole utterances: unless told otherwise, the bot holds the user's key before the first frame.
    if (waitForBotKey) await this.#options.dave()?.untilHeardBy(link.userId);
    signal.throwIfAborted();
    const first = link.announceSpeaking(this.userId, this.ssrc);
    if (first && this.#options.speakingLeadMs > 0) await sleep(this.#options.speakingLeadMs, undefined, { signal });
  }

  #encoderFor(application: OpusApplication): OpusFrameEncoder {
    if (!this.#encoder || this.#encoderApplication !== application) {
      this.#encoder?.close();
      this.#encoder = new OpusFrameEncoder({ application });
      this.#encoderApplication = application;
    }
    return this.#encoder;
  }

  #send(link: SpeakerLink, opus: Buffer, headerExtension: boolean, breakSeal = false): void {
    const dave = this.#options.dave();
    const payload = dave ? dave.protect(opus) : opus;
    // Without a key a DAVE client drops the frame before it becomes a packet.
    if (!payload) return;
    link.sendRtp(
      {
        sequence: this.#sequence,
        timestamp: this.#timestamp,
        ssrc: this.ssrc,
        payload,
        extensionBody: headerExtension ? AUDIO_LEVEL_EXTENSION : undefined,
      },
      { breakSeal },
    );
    this.#sequence = (this.#sequence + 1) & 0xffff;
  }

  // The RTP clock counts samples, not packets: after a pause it jumps by the time that passed.
  #catchUpClock(frameMs: number): void {
    if (this.#clockAt === undefined) {
      this.#clockAt = performance.now();
      return;
    }
    const elapsedFrames = Math.floor((performance.now() - this.#clockAt) / frameMs);
    if (elapsedFrames > 0) this.#advanceClock(frameMs, elapsedFrames);
  }

  #advanceClock(frameMs: number, frames = 1): void {
    this.#timestamp = (this.#timestamp + frames * frameMs * SAMPLES_PER_MS) % 2 ** 32;
    this.#clockAt = (this.#clockAt ?? performance.now()) + frames * frameMs;
  }

  async #utter(pcm: Int16Array, frameMs: OpusFrameMs, options: SpeakOptions): Promise<SpeakResult> {
    const signal = options.signal ? AbortSignal.any([options.signal, this.#stopped.signal]) : this.#stopped.signal;
    const frameLength = frameMs * SAMPLES_PER_MS * CHANNELS;
    const frameCount = Math.ceil(pcm.length / frameLength);
    const threshold = Math.round((options.silenceThreshold ?? 0) * FULL_SCALE);
    const trailingSilence = options.trailingSilenceFrames ?? 5;
    const headerExtension = options.headerExtension ?? false;
    const result: SpeakResult = {
      audioPackets: 0,
      silencePackets: 0,
      skippedFrames: 0,
      firstPacketAt: undefined,
      lastPacketAt: undefined,
      interrupted: false,
    };
    if (signal.aborted) return { ...result, interrupted: true };
    const application = options.application ?? 'audio';

    try {
      await this.#mapSsrc(this.#requireLink(), signal, options.waitForBotKey);
    } catch (error) {
      if (signal.aborted) return { ...result, interrupted: true };
      throw error;
    }
    // The SPEAKING just sent covers the first talk spurt; later spurts announce themselves again.
    let announcedAhead = true;
    this.#catchUpClock(frameMs);
    const start = performance.now();
    let talking = false;
    let silenceLeft = 0;

    for (let slot = 0; slot < frameCount || silenceLeft > 0; slot++) {
      try {
        if (options.realtime ?? true) {
          const wait = start + slot * frameMs - performance.now();
          if (wait > 0) await sleep(wait, undefined, { signal });
        } else {
          await yieldToEventLoop(undefined, { signal });
        }
      } catch {
        result.interrupted = true;
        break;
      }
      const link = this.#options.link();
      if (typeof link === 'string') {
        this.#options.log.info('voice stand-in: speaker stopped', { userId: this.userId, reason: link });
        result.interrupted = true;
        break;
      }

      const frame = slot < frameCount ? new Int16Array(frameLength) : undefined;
      frame?.set(pcm.subarray(slot * frameLength, (slot + 1) * frameLength));
      if (frame && peakOf(frame) > threshold) {
        if (!talking && !announcedAhead) link.announceSpeaking(this.userId, this.ssrc);
        announcedAhead = false;
        talking = true;
        silenceLeft = trailingSilence;
        this.#send(
          link,
          options.opusPackets?.[slot] ?? this.#encoderFor(application).encode(frame),
          headerExtension,
          options.brokenSealFrames?.includes(slot),
        );
        result.audioPackets++;
        result.lastPacketAt = Date.now();
        result.firstPacketAt ??= result.lastPacketAt;
      } else if (talking && silenceLeft > 0) {
        this.#send(link, OPUS_SILENCE_FRAME, headerExtension);
        silenceLeft--;
        talking = silenceLeft > 0;
        result.silencePackets++;
        result.lastPacketAt = Date.now();
      } else {
        talking = false;
        if (frame) result.skippedFrames++;
      }
      this.#advanceClock(frameMs);
    }
    return result;
  }
}
