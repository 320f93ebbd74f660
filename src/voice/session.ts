import { EventEmitter } from 'node:events';
import type { VoiceConnection } from '@discordjs/voice';
import { RealtimeConnectionError, type RealtimeClient } from '../gateway/realtime/client.ts';
import type { RealtimeServerEvent } from '../gateway/realtime/events.ts';
import type { Logger } from '../lib/log.ts';
import { AnswerStreams } from './answer-streams.ts';
import { FRAME_MS } from './audio/format.ts';
import { SpeakerMixer } from './audio/mixer.ts';
import { InputPump } from './input-pump.ts';
import { VoiceListener } from './listener.ts';
import type { VoiceSettings } from './settings.ts';
import { SpeechPlayer } from './speech-player.ts';

// A live conversation in one voice channel, as an explicit state machine:
//
//   connecting ──realtime ready──▶ live ──socket lost──▶ reconnecting ──ready──▶ live
//        │                          │  │                      └──key refused, too many attempts──▶ closed
//        │                          │  └──renewal: a fresh session replaces the old, still live
//        └──────────── stop() from any state ──────────────▶ closed
//
// The voice connection stays up throughout: a lost or expiring realtime session never makes the bot
// leave the channel. Sessions are renewed before the gateway's limit at a quiet moment (nobody speaking,
// no turn waiting for its answer, nothing playing) within a window before the limit, and at a safety
// margin before it whatever is going on. A gateway that ends sessions sooner than the spec's limit (it
// says so with an expiry error before closing) teaches the session its real limit.

export type VoiceSessionState = 'connecting' | 'live' | 'reconnecting' | 'closed';

export interface VoiceSessionOptions {
  guildId: string;
  connection: VoiceConnection;
  settings: VoiceSettings;
  /** Opens a configured realtime session (the key, model and settings are the caller's business). */
  connectRealtime(): Promise<RealtimeClient>;
  log: Logger;
  /** How long the gateway keeps a realtime session open (the spec: 120 minutes). */
  sessionLimitMs: number;
  /**
   * Renewal: from `windowMs` before the limit at the first quiet moment, and at `marginMs` before it
   * regardless. Defaults: a third of the limit (at most 10 minutes) and a tenth (at most a minute).
   */
  renewal?: { windowMs: number; marginMs: number };
  /** Backoff between attempts to reopen a lost realtime session, and how many attempts before giving up. */
  reconnect: { baseMs: number; maxMs: number; maxAttempts: number };
  /** The bot's own user id: its audio is never listened to. */
  botUserId: string;
  onTranscript?(speaker: 'user' | 'bot', text: string): void;
  /** A problem users should hear about (said in the text channel). */
  onProblem?(message: string): void;
  /** The session could not be reopened and is closed: why, in a sentence for the text channel. */
  onGiveUp?(reason: string): void;
  /** Someone spoke or the bot answered: the channel is not idle. */
  onActivity?(): void;
  /** Timing hooks for benchmarks: a user's packet arrived (performance.now()), an append left with `frames` 20 ms frames. */
  probe?: { onPacket?(receivedAt: number): void; onAppend?(frames: number, sentAt: number): void };
}

interface SessionEvents {
  state: [VoiceSessionState];
}

/** The realtime session may not be opened for this server any more (no usable key); the message says why. */
export class VoiceAccessError extends Error {}

/** Why a failure to open the realtime session is final, as a sentence for the channel; undefined when retrying may help. */
export function finalFailure(error: unknown): string | undefined {
  if (error instanceof VoiceAccessError) return error.message;
  if (!(error instanceof RealtimeConnectionError)) return undefined;
  const code = error.code === undefined ? '' : ` ${error.code}`;
  if (error.status === 401) return `The gateway refuses this server's key (401${code}): a server admin can set a working one with \`/config key\`.`;
  if (error.status === 403) return `This server's key may not use the voice model (403${code}): a server admin can change the key with \`/config key\` or the model with \`/voice settings\`.`;
  return undefined;
}

type RealtimeErrorEvent = Extract<RealtimeServerEvent, { type: 'error' }>;

/** An error's code and message as one lower-case text with spaces for underscores, to match by meaning. */
function errorWords(event: RealtimeErrorEvent): string {
  return `${event.code ?? ''} ${event.message}`.toLowerCase().replaceAll('_', ' ');
}

/**
 * Whether a realtime error is part of normal operation rather than news for the channel. Decided by what
 * it means: the spec shows no codes, and servers word the same thing differently.
 */
export function isRoutineRealtimeError(event: RealtimeErrorEvent): boolean {
  // A barge-in racing the end of the answer: there was nothing left to cancel, or the item is gone.
  if (event.clientEventType === 'response.cancel' || event.clientEventType === 'conversation.item.truncate') return true;
  // The same race, from a server that does not say which event it answers (e.g. `response_cancel_not_active`).
  if (/no active response|cancel not active|nothing to cancel/.test(errorWords(event))) return true;
  return isSessionLimitNotice(event);
}

/** The gateway says the session reached its time limit (e.g. `session_expired`): it closes next. */
export function isSessionLimitNotice(event: RealtimeErrorEvent): boolean {
  return /expired|maximum duration|duration limit|time limit/.test(errorWords(event));
}

/** A session limit learned from a gateway is never taken as shorter than this (a confused server must not cause a renewal storm). */
const MIN_SESSION_LIMIT_MS = 1_000;
/** While the renewal window is open, how often the session looks for a quiet moment. */
const QUIET_CHECK_MS = 100;

export function renewalTimes(limitMs: number): { windowMs: number; marginMs: number } {
  return { windowMs: Math.min(10 * 60_000, limitMs / 3), marginMs: Math.min(60_000, limitMs / 10) };
}

/** The same problem is told in the channel at most once in this long. */
const PROBLEM_REPEAT_MS = 60_000;
const PREBUFFER_MS = 60;
/**
 * 40 ms of input per append: half the websocket messages (each a system call, which on a busy machine
 * costs more than the audio work) for at most 25 ms of added latency, within the 40 ms budget.
 */
const FRAMES_PER_APPEND = 2;
/** In Discord turn mode, wait this long after everyone stopped so the last frames reach the session. */
const MANUAL_COMMIT_DELAY_MS = 3 * FRAME_MS;

export class VoiceSession extends EventEmitter<SessionEvents> {
  readonly #options: VoiceSessionOptions;
  readonly #log: Logger;
  readonly #mixer = new SpeakerMixer();
  readonly #player: SpeechPlayer;
  readonly #pump: InputPump;
  readonly #listener: VoiceListener;
  #state: VoiceSessionState = 'connecting';
  #client: RealtimeClient | undefined;
  /** The answers of the current realtime session: a new session starts afresh. */
  #answers = new AnswerStreams();
  #sessionLimitMs: number;
  /** When the current realtime session opened, and whether it said it reached its limit. */
  #openedAt = 0;
  #limitNoticed = false;
  /** Renewal timers: the window opening, the forced renewal, the quiet-moment check. */
  readonly #renewTimers = new Set<NodeJS.Timeout>();
  #renewing = false;
  /** A user turn the gateway heard start and has not answered yet (speech_started or a commit, until response.created). */
  #turnPending = false;
  /** Responses between response.created and response.done. */
  #openResponses = 0;
  #reconnectAttempts = 0;
  #commitTimer: NodeJS.Timeout | undefined;
  /** Problems told in the channel, and when. */
  readonly #told = new Map<string, number>();

  constructor(options: VoiceSessionOptions) {
    super();
    this.#options = options;
    this.#sessionLimitMs = options.sessionLimitMs;
    this.#log = options.log.child({ guild: options.guildId });
    this.#player = new SpeechPlayer({ prebufferMs: PREBUFFER_MS, log: this.#log, onFinished: (key) => this.#answers.finished(key) });
    const manual = options.settings.turnDetection === 'discord';
    this.#pump = new InputPump({
      mixer: this.#mixer,
      log: this.#log,
      // Server VAD must hear silence to end a turn; in Discord mode the bot ends turns itself.
      silenceTailMs: manual ? 0 : Math.max(1000, 2 * options.settings.silenceMs),
      framesPerAppend: FRAMES_PER_APPEND,
      onAppend: options.probe?.onAppend && ((frames, sentAt) => options.probe?.onAppend?.(frames, sentAt)),
    });
    this.#listener = new VoiceListener(options.connection.receiver, this.#mixer, {
      log: this.#log,
      shouldHear: (userId) => userId !== options.botUserId,
      events: {
        onSpeakingStart: () => {
          options.onActivity?.();
          clearTimeout(this.#commitTimer);
          // Without server VAD there is no speech_started: Discord's own speaking signal is the barge-in.
          if (manual) this.#bargeIn();
        },
        onAllSilent: () => {
          if (!manual) return;
          this.#commitTimer = setTimeout(() => this.#endManualTurn(), MANUAL_COMMIT_DELAY_MS);
        },
        onPacket: (_userId, receivedAt) => {
          options.probe?.onPacket?.(receivedAt);
          this.#pump.audioArrived();
        },
      },
    });
    this.#player.subscribe(options.connection);
  }

  get state(): VoiceSessionState {
    return this.#state;
  }

  get speaking(): boolean {
    return this.#player.speaking;
  }

  #setState(state: VoiceSessionState): void {
    if (this.#state === state) return;
    this.#log.info('voice session state', { from: this.#state, to: state });
    this.#state = state;
    this.emit('state', state);
  }

  /** Opens the realtime session; throws (and closes) when it cannot. */
  async start(): Promise<void> {
    try {
      this.#attach(await this.#options.connectRealtime());
    } catch (error) {
      this.stop();
      throw error;
    }
    this.#pump.start();
    this.#setState('live');
  }

  /** Says a line in the channel as a forced message (it is a response turn of its own). */
  announce(text: string): void {
    this.#client?.forceMessage(text, { interruptible: true });
  }

  stop(): void {
    if (this.#state === 'closed') return;
    this.#setState('closed');
    this.#clearRenewal();
    clearTimeout(this.#commitTimer);
    this.#pump.stop();
    this.#listener.stop();
    this.#player.destroy();
    const client = this.#client;
    this.#client = undefined;
    client?.close(1000, 'leaving the voice channel');
  }

  /** A user left the channel. */
  forgetUser(userId: string): void {
    this.#listener.forget(userId);
  }

  #attach(client: RealtimeClient): void {
    this.#client = client;
    this.#answers = new AnswerStreams();
    this.#turnPending = false;
    this.#openResponses = 0;
    this.#openedAt = Date.now();
    this.#limitNoticed = false;
    this.#pump.sink = client;
    client.on('event', (event) => this.#onEvent(client, event));
    client.on('close', (code, reason) => this.#onClose(client, code, reason));
    // A gateway that says when the session expires is believed.
    const expiresAt = client.sessionExpiresAt;
    if (expiresAt !== undefined) this.#sessionLimitMs = Math.min(this.#sessionLimitMs, Math.max(MIN_SESSION_LIMIT_MS, expiresAt.getTime() - this.#openedAt));
    this.#scheduleRenewal();
  }

  /** Nobody speaking, no turn waiting for its answer, no answer coming or playing: a renewal loses nothing. */
  get #quiet(): boolean {
    return this.#listener.speakers === 0 && this.#pump.quiet && !this.#turnPending && this.#openResponses === 0 && !this.#player.speaking;
  }

  #scheduleRenewal(): void {
    this.#clearRenewal();
    const { windowMs, marginMs } = this.#options.renewal ?? renewalTimes(this.#sessionLimitMs);
    const endsAt = this.#openedAt + this.#sessionLimitMs;
    const at = (time: number, run: () => void) => {
      const timer = setTimeout(() => {
        this.#renewTimers.delete(timer);
        run();
      }, Math.max(0, time - Date.now()));
      this.#renewTimers.add(timer);
    };
    at(endsAt - windowMs, () => this.#renewWhenQuiet());
    at(endsAt - marginMs, () => void this.#renew('the session limit is near'));
  }

  #renewWhenQuiet(): void {
    if (this.#quiet) {
      void this.#renew('a quiet moment before the session limit');
      return;
    }
    const check = setInterval(() => {
      if (!this.#quiet) return;
      clearInterval(check);
      this.#renewTimers.delete(check);
      void this.#renew('a quiet moment before the session limit');
    }, QUIET_CHECK_MS);
    this.#renewTimers.add(check);
  }

  #clearRenewal(): void {
    for (const timer of this.#renewTimers) clearTimeout(timer);
    this.#renewTimers.clear();
  }

  #onEvent(client: RealtimeClient, event: RealtimeServerEvent): void {
    if (client !== this.#client) return;
    switch (event.type) {
      case 'input_audio_buffer.speech_started':
        this.#turnPending = true;
        this.#options.onActivity?.();
        this.#bargeIn();
        break;
      case 'response.created':
        this.#turnPending = false;
        this.#openResponses++;
        this.#answers.responseCreated(event.responseId);
        break;
      case 'input_audio_buffer.committed':
        this.#turnPending = true;
        this.#answers.turnCommitted();
        break;
      case 'response.output_item.added':
      case 'conversation.item.created':
        this.#answers.itemAdded(event.type === 'response.output_item.added' ? event.responseId : undefined, event.itemId, event.role);
        break;
      case 'response.output_audio.delta': {
        const stream = this.#answers.audio(event);
        if (!stream) break;
        this.#player.append(stream.key, event.audio);
        this.#options.onActivity?.();
        break;
      }
      case 'response.output_audio.done': {
        const key = this.#answers.audioDone(event);
        if (key !== undefined) this.#player.end(key);
        break;
      }
      case 'response.done':
        this.#openResponses = Math.max(0, this.#openResponses - 1);
        for (const key of this.#answers.responseDone(event.responseId)) this.#player.end(key);
        break;
      case 'conversation.item.input_audio_transcription.completed':
        if (event.transcript) this.#options.onTranscript?.('user', event.transcript);
        break;
      case 'response.output_audio_transcript.done':
        if (event.transcript) this.#options.onTranscript?.('bot', event.transcript);
        break;
      case 'error':
        if (isSessionLimitNotice(event)) this.#limitNoticed = true;
        if (isRoutineRealtimeError(event)) {
          this.#log.debug('realtime notice', { code: event.code, message: event.message, answers: event.clientEventType });
        } else {
          this.#log.warn('realtime error event', { code: event.code, message: event.message, param: event.param, answers: event.clientEventType });
          this.#tell(`The voice model reported a problem: ${event.message}`);
        }
        break;
      default:
        break;
    }
  }

  /** Tells the channel, unless the same was told a moment ago (a failing session repeats itself). */
  #tell(message: string): void {
    const now = Date.now();
    for (const [told, at] of this.#told) if (now - at >= PROBLEM_REPEAT_MS) this.#told.delete(told);
    if (this.#told.has(message)) return;
    this.#told.set(message, now);
    this.#options.onProblem?.(message);
  }

  /**
   * Someone talks over the bot: silence at once, cancel the answer, and keep only what was heard. The
   * cancel goes out even when response.done has come: a fast provider delivers a whole answer long
   * before it has been played, and a gateway still generating must stop (if nothing was left to cancel,
   * its error is routine). Late deltas of what was cut off are dropped (AnswerStreams).
   */
  #bargeIn(): void {
    if (!this.#player.speaking) return;
    const stopped = this.#player.stop();
    const client = this.#client;
    client?.cancelResponse();
    for (const { key, playedMs } of stopped) {
      const answer = this.#answers.cutOff(key);
      // Only a real item id can be truncated; an answer whose item the server never named is just cancelled.
      if (answer?.itemId !== undefined) client?.truncate(answer.itemId, answer.contentIndex, playedMs);
      this.#log.info('barge-in', { item: answer?.itemId, playedMs });
    }
  }

  #endManualTurn(): void {
    const client = this.#client;
    if (!client || this.#listener.speakers > 0) return;
    client.commit();
    client.createResponse();
    this.#turnPending = true;
  }

  #onClose(client: RealtimeClient, code: number, reason: string): void {
    if (client !== this.#client || this.#state === 'closed') return;
    this.#log.warn('realtime session closed; reconnecting', { code, reason });
    this.#clearRenewal();
    const lived = Date.now() - this.#openedAt;
    if (this.#limitNoticed && lived < this.#sessionLimitMs) {
      this.#sessionLimitMs = Math.max(MIN_SESSION_LIMIT_MS, lived);
      this.#log.info('the gateway ends realtime sessions sooner than expected; renewing before that from now on', { limitMs: this.#sessionLimitMs });
    }
    this.#client = undefined;
    this.#pump.sink = undefined;
    this.#player.stop();
    this.#setState('reconnecting');
    void this.#reconnect();
  }

  /**
   * Reopens a lost session with backoff. A refused key (or no key any more) ends it at once, and so do
   * too many failed attempts: the channel is told why, rather than the bot sitting there deaf.
   */
  async #reconnect(): Promise<void> {
    while (this.#state === 'reconnecting') {
      const { baseMs, maxMs, maxAttempts } = this.#options.reconnect;
      const delay = this.#reconnectAttempts === 0 ? 0 : Math.min(maxMs, baseMs * 2 ** (this.#reconnectAttempts - 1)) * (0.5 + Math.random() / 2);
      this.#reconnectAttempts++;
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (this.#state !== 'reconnecting') return;
      try {
        const client = await this.#options.connectRealtime();
        if (this.#state !== 'reconnecting') {
          client.close();
          return;
        }
        this.#attach(client);
        this.#reconnectAttempts = 0;
        this.#setState('live');
      } catch (error) {
        this.#log.warn('realtime reconnect failed', { attempt: this.#reconnectAttempts, error });
        const final = finalFailure(error);
        if (final !== undefined) return this.#giveUp(final);
        if (this.#reconnectAttempts >= maxAttempts) {
          const detail = error instanceof Error ? ` (last: ${error.message})` : '';
          return this.#giveUp(`The voice model could not be reached after ${this.#reconnectAttempts} attempts${detail}. Try \`/voice join\` again in a while.`);
        }
      }
    }
  }

  #giveUp(reason: string): void {
    this.#log.warn('giving up on the realtime session', { reason });
    this.stop();
    this.#options.onGiveUp?.(reason);
  }

  /** A fresh session before the old one reaches the gateway's limit; the channel never notices. */
  async #renew(why: string): Promise<void> {
    if (this.#state !== 'live' || this.#renewing) return;
    this.#renewing = true;
    try {
      const fresh = await this.#options.connectRealtime();
      if (this.#state !== 'live') {
        fresh.close();
        return;
      }
      const old = this.#client;
      this.#attach(fresh);
      old?.close(1000, 'renewed');
      this.#log.info('realtime session renewed', { why });
    } catch (error) {
      // The forced renewal tries again; after that the session ends at its limit and is reopened.
      this.#log.warn('realtime renewal failed; the session continues until it ends', { error });
    } finally {
      this.#renewing = false;
    }
  }
}
