import { EventEmitter } from 'node:events';
import type { VoiceConnection } from '@discordjs/voice';
import { RealtimeConnectionError, type RealtimeClient, type RealtimeSessionConfig } from '../gateway/realtime/client.ts';
import type { RealtimeFunctionCall, RealtimeServerEvent } from '../gateway/realtime/events.ts';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import { waitUntil } from '../lib/wait-until.ts';
import { describeGatewayError } from '../wording/gateway-errors.ts';
import type { Logger } from '../lib/log.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import { AnnouncementQueue, type Announcement } from './announcements.ts';
import { AnswerStreams } from './answer-streams.ts';
import { CallEncryptionMonitor, type CallEncryption } from './call-encryption.ts';
import { FRAME_MS } from './audio/format.ts';
import { SpeakerMixer } from './audio/mixer.ts';
import { InputPump } from './input-pump.ts';
import { VoiceListener } from './listener.ts';
import type { VoiceSettings } from '../ports/voice-settings.ts';
import { SpeechPlayer, type StoppedItem } from './speech-player.ts';
import { ENGLISH, t, type Locale } from '../i18n/index.ts';

// A live conversation in one voice channel, as an explicit state machine:
//
//   connecting ──realtime ready──▶ live ──socket lost──▶ reconnecting ──ready──▶ live
//        │                         │  ▲                   │  ▲   │
//        │                         └──┘                   └──┘   └──key refused, too many attempts──▶ closed
//        │             renewal: a fresh              attempt failed: the
//        │             session replaces              next, after a backoff
//        │             the old one
//        └──────────── stop() from any state ──────────────▶ closed
//
// Each state holds what belongs to it: live its realtime client, the answers of that session, its
// renewal triggers and its turn bookkeeping; reconnecting its attempt and the timer before it. The one
// transition (the #state setter) releases what the old state held and the new one does not keep, so
// nothing of a session that was replaced or lost can act on the next: its listeners are gone.
//
// The voice connection stays up throughout: a lost or expiring realtime session never makes the bot
// leave the channel. Sessions are renewed before the gateway's limit at a quiet moment (nobody speaking,
// no turn waiting for its answer, nothing playing) within a window before the limit, and at a safety
// margin before it whatever is going on. A gateway that ends sessions sooner than the spec's limit (it
// says so with an expiry error before closing) teaches the session its real limit.

export type VoiceSessionState = SessionState['status'];

interface ConnectingState {
  readonly status: 'connecting';
}

/** One realtime session, and everything that lasts as long as it does. */
interface LiveState {
  readonly status: 'live';
  readonly client: RealtimeClient;
  /** This session's answers: a new session starts afresh. */
  readonly answers: AnswerStreams;
  readonly openedAt: number;
  /** The gateway said this session reached its limit: it closes next. */
  limitNoticed: boolean;
  /** A user turn the gateway heard start and has not answered yet (speech_started or a commit, until response.created). */
  turnPending: boolean;
  /** Responses between response.created and response.done. */
  openResponses: number;
  /** Turns committed while answering only when named, whose transcript (and so whether to answer) is still to come. */
  decisionsPending: number;
  /** Function calls of the current turn, by call id, and the output each got (the first acted on, the rest told). */
  readonly calls: CallBook;
  /** Function calls whose output (and the response.create after it) has not gone yet. */
  callsRunning: number;
  /** A response.create the gateway refused while another response was active, to send again once that one ends. */
  responseRetry: { timer: NodeJS.Timeout | undefined } | undefined;
  /** Refusals of response.create in a row (reset when a response starts): past MAX_ACTIVE_RESPONSE_REFUSALS it is given up. */
  responseRefusals: number;
  /** Announcements sent on this session by the id of their event (the newest few): a refusal names that id. */
  readonly announcements: Map<string, Announcement>;
  /** The last announcement sent, until a response starts or the gateway answers its event: no other goes meanwhile. */
  announcementInFlight: { eventId: string; sentAt: number } | undefined;
  /**
   * The gateway refused an event for an active response that the bot had not seen start: it is taken to be
   * answering something until then (Date.now()), or until the next response.done.
   */
  refusedUntil: number | undefined;
  /**
   * What starts a renewal: the window opening (then the look for a quiet moment) and the forced one at
   * the margin. Each is undefined once it fired, and both while a renewal is under way.
   */
  readonly renewal: { quiet: NodeJS.Timeout | undefined; forced: NodeJS.Timeout | undefined };
  readonly onEvent: (event: RealtimeServerEvent) => void;
  readonly onClose: (code: number, reason: string) => void;
}

interface ReconnectingState {
  readonly status: 'reconnecting';
  /** 1 for the first attempt after the session was lost. */
  readonly attempt: number;
  /** Until the attempt starts. */
  readonly timer: NodeJS.Timeout;
}

interface ClosedState {
  readonly status: 'closed';
}

/** What one turn's function calls came to: the turn's call acted on, and outputs given by call id. */
interface CallBook {
  /** The call acted on this turn (name and arguments), and the output it will get. */
  acted: { signature: string; output: Promise<string> } | undefined;
  /** Calls already handled, of this turn and recent ones. */
  readonly seen: Set<string>;
}

/** A function call of the model, with who spoke the turn it answers. */
export interface VoiceFunctionCall extends RealtimeFunctionCall {
  /** The member whose audio made up most of the turn; undefined when nobody was heard. */
  speakerId: string | undefined;
}

type SessionState = ConnectingState | LiveState | ReconnectingState | ClosedState;

export interface VoiceSessionOptions {
  guildId: string;
  connection: VoiceConnection;
  settings: VoiceSettings;
  /**
   * Opens a configured realtime session (the key, model and settings are the caller's business). `manual`:
   * with `turn_detection: null`, the bot ending turns itself.
   */
  connectRealtime(manual: boolean): Promise<RealtimeClient>;
  /** The session's configuration in either turn mode, sent when it switches between them. Without it the mode never changes. */
  sessionConfig?(manual: boolean): RealtimeSessionConfig;
  /** Answer only turns whose transcript names the bot (from the start; see `answerOnlyWhenNamed`). */
  onlyWhenNamed?: boolean;
  /** Whether a transcript names the bot. */
  addressed?(transcript: string): boolean;
  /** Runs a function the model called; resolves with the output the model is given (never rejects). */
  onFunctionCall?(call: VoiceFunctionCall): Promise<string>;
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
  /** A line of the conversation; a user's line says whether the bot answers it. */
  onTranscript?(speaker: 'user' | 'bot', text: string, answered: boolean): void;
  /** A problem users should hear about (said in the text channel, in `locale`). */
  onProblem?(message: string): void;
  /** The language of what the session says in the text channel: the server's; default English. */
  locale?: Locale;
  /** The session could not be reopened and is closed: why, in a sentence for the text channel. */
  onGiveUp?(reason: string): void;
  /** Someone spoke or the bot answered: the channel is not idle. */
  onActivity?(): void;
  /** Counts frames each way, decryption failures, renewals and audio latency each way; default none. */
  metrics?: VoiceSessionMetrics;
  /** Timing hooks for benchmarks: a user's packet arrived (performance.now()), an append left with `frames` 20 ms frames. */
  probe?: { onPacket?(receivedAt: number): void; onAppend?(frames: number, sentAt: number): void };
}

export type VoiceSessionMetrics = Pick<BotMetrics, 'voiceFrames' | 'voiceDecryptFailures' | 'realtimeRenewal' | 'voiceLatency'>;

interface SessionEvents {
  state: [VoiceSessionState];
  /** An answer (or announcement) was played to its end. */
  played: [];
}

/** The realtime session may not be opened for this server any more (no usable key); the message says why. */
export class VoiceAccessError extends Error {}

/** Why a failure to open the realtime session is final, as a sentence for the channel; undefined when retrying may help. */
export function finalFailure(error: unknown, locale: Locale = ENGLISH): string | undefined {
  if (error instanceof VoiceAccessError) return error.message;
  // A refused key or a model the key may not use: another attempt gets the same answer.
  if (!(error instanceof RealtimeConnectionError) || (error.status !== 401 && error.status !== 403)) return undefined;
  return describeGatewayError(locale, error, { key: 'in-use', purpose: 'voice-model' });
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
  return isActiveResponseRefusal(event) || isSessionLimitNotice(event);
}

/**
 * The gateway refused a response (a response.create, or a force_message, which is a response of its own)
 * because another was active (`conversation_already_has_active_response`, "A response is already in
 * progress"): the bot asks again once that one ends, so members need not hear of it.
 */
export function isActiveResponseRefusal(event: RealtimeErrorEvent): boolean {
  return /already has (an )?active response|response is already in progress|active response in progress/.test(errorWords(event));
}

/** The gateway says the session reached its time limit (e.g. `session_expired`): it closes next. */
export function isSessionLimitNotice(event: RealtimeErrorEvent): boolean {
  return /expired|maximum duration|duration limit|time limit/.test(errorWords(event));
}

/** A session limit learned from a gateway is never taken as shorter than this (a confused server must not cause a renewal storm). */
const MIN_SESSION_LIMIT_MS = 1_000;
/** While the renewal window is open, how often the session looks for a quiet moment. */
const QUIET_CHECK_MS = 100;

/** Call ids remembered so that the same call seen twice (its done event, then response.done) runs once. */
const REMEMBERED_CALLS = 64;

function newCallBook(): CallBook {
  return { acted: undefined, seen: new Set() };
}

export function renewalTimes(limitMs: number): { windowMs: number; marginMs: number } {
  return { windowMs: Math.min(10 * 60_000, limitMs / 3), marginMs: Math.min(60_000, limitMs / 10) };
}

/** Refusals of the same response.create for an active response before it is given up. */
const MAX_ACTIVE_RESPONSE_REFUSALS = 3;
/** After a refusal for a response the bot never saw start, how long before asking again (no response.done will say). */
const ACTIVE_RESPONSE_RETRY: BackoffPolicy = { baseMs: 500, maxMs: 4_000, jitter: 0.25, spread: 'shorter' };
/** An announcement sent and neither started nor refused within this long is taken as lost, so the next may go. */
const ANNOUNCEMENT_START_TIMEOUT_MS = 10_000;
/** Announcements remembered by event id per realtime session: enough for the few that can be in flight. */
const REMEMBERED_ANNOUNCEMENTS = 8;

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
  readonly #encryption: CallEncryptionMonitor;
  #current: SessionState = { status: 'connecting' };
  /** The gateway's limit as far as the session knows: learned from one realtime session for the next. */
  #sessionLimitMs: number;
  #commitTimer: NodeJS.Timeout | undefined;
  /** Only turns that name the bot are answered (and the bot ends turns itself, so it can decide before answering). */
  #onlyWhenNamed: boolean;
  /** Packets per speaker since the last turn ended: who spoke a turn. */
  readonly #turnPackets = new Map<string, number>();
  /** Who spoke most of the last turn that ended. */
  #lastTurnSpeaker: string | undefined;
  /** Problems told in the channel, and when. */
  readonly #told = new Map<string, number>();
  /** When the oldest packet not yet appended arrived (performance.now()): an append's latency in. */
  #oldestUnappendedAt: number | undefined;
  /** Lines to say in the channel when the conversation leaves room (see #sayAnnouncements). */
  readonly #announcements: AnnouncementQueue;
  /** Wakes #sayAnnouncements when nothing else would: a waiting line goes stale, a hold ends. */
  #announcementTimer: { at: number; timer: NodeJS.Timeout } | undefined;

  constructor(options: VoiceSessionOptions) {
    super();
    this.#options = options;
    this.#sessionLimitMs = options.sessionLimitMs;
    this.#log = options.log.child({ guild: options.guildId });
    this.#announcements = new AnnouncementQueue(this.#log);
    const metrics = options.metrics;
    const encryption = new CallEncryptionMonitor(options.connection, { log: this.#log, metrics });
    this.#encryption = encryption;
    this.#player = new SpeechPlayer({
      prebufferMs: PREBUFFER_MS,
      log: this.#log,
      metrics,
      onFinished: (key) => {
        const state = this.#state;
        if (state.status === 'live') state.answers.finished(key);
        this.emit('played');
        this.#sayAnnouncements();
      },
      mayPlay: () => encryption.playable,
      onGaveUpWaiting: (stopped) => {
        this.#cutOff(stopped);
        this.#tell(t(this.#locale, 'voice.problem.encryption-late'));
        this.#sayAnnouncements();
      },
      // An answer that would keep the bot talking (or buffering) past the bound is cut as a barge-in cuts it.
      onOverflow: (stopped) => this.#cutOff(stopped, 'answer audio past its bound'),
    });
    encryption.on('change', () => this.#player.playabilityChanged());
    this.#onlyWhenNamed = options.onlyWhenNamed ?? false;
    this.#pump = new InputPump({
      mixer: this.#mixer,
      log: this.#log,
      silenceTailMs: this.#silenceTailMs(),
      framesPerAppend: FRAMES_PER_APPEND,
      onAppend: (frames, sentAt) => {
        if (metrics && this.#oldestUnappendedAt !== undefined) metrics.voiceLatency('in', (sentAt - this.#oldestUnappendedAt) / 1000);
        this.#oldestUnappendedAt = undefined;
        options.probe?.onAppend?.(frames, sentAt);
      },
    });
    this.#listener = new VoiceListener(options.connection.receiver, this.#mixer, {
      log: this.#log,
      shouldHear: (userId) => userId !== options.botUserId,
      events: {
        onSpeakingStart: () => {
          options.onActivity?.();
          clearTimeout(this.#commitTimer);
          // Without server VAD there is no speech_started: Discord's own speaking signal is the barge-in.
          if (this.#manual) this.#bargeIn();
        },
        onAllSilent: () => {
          this.#sayAnnouncements();
          if (!this.#manual) return;
          this.#commitTimer = setTimeout(() => this.#endManualTurn(), MANUAL_COMMIT_DELAY_MS);
        },
        onPacket: (userId, receivedAt) => {
          this.#turnPackets.set(userId, (this.#turnPackets.get(userId) ?? 0) + 1);
          encryption.frameHeard();
          metrics?.voiceFrames('in', 1);
          // While the realtime session reconnects the audio is dropped, not late: it has no latency.
          if (this.#state.status === 'live') this.#oldestUnappendedAt ??= receivedAt;
          options.probe?.onPacket?.(receivedAt);
          this.#pump.audioArrived();
        },
        onUndecrypted: () => encryption.frameWithoutKey(),
        onReceiveError: () => encryption.receiveFailed(),
      },
    });
    this.#player.subscribe(options.connection);
  }

  get state(): VoiceSessionState {
    return this.#current.status;
  }

  get speaking(): boolean {
    return this.#player.speaking;
  }

  /** Milliseconds of answer audio waiting to be played (bounded: see speech-player.ts). */
  get queuedAudioMs(): number {
    return this.#player.queuedMs;
  }

  /** The call's end-to-end encryption as it stands. */
  get encryption(): CallEncryption {
    return this.#encryption.state;
  }

  /** The call's encryption once the bot holds its keys and knows the privacy code, or as it is after `timeoutMs`. */
  encryptionSettled(timeoutMs: number): Promise<CallEncryption> {
    return this.#encryption.whenSettled(timeoutMs);
  }

  /** The bot ends turns itself: Discord turn detection, or answering only when named. */
  get #manual(): boolean {
    return this.#options.settings.turnDetection === 'discord' || this.#onlyWhenNamed;
  }

  /** Server VAD must hear silence to end a turn; when the bot ends turns itself, none is needed. */
  #silenceTailMs(): number {
    return this.#manual ? 0 : Math.max(1000, 2 * this.#options.settings.silenceMs);
  }

  get onlyWhenNamed(): boolean {
    return this.#onlyWhenNamed;
  }

  /**
   * Answer every turn, or only those that name the bot (people joined or left). The realtime session is
   * kept: a session.update switches it between server VAD and manual turns.
   */
  answerOnlyWhenNamed(value: boolean): void {
    if (value === this.#onlyWhenNamed) return;
    const wasManual = this.#manual;
    this.#onlyWhenNamed = value;
    this.#log.info('voice answers', { onlyWhenNamed: value });
    if (wasManual === this.#manual) return;
    this.#pump.silenceTailMs = this.#silenceTailMs();
    const state = this.#state;
    const config = this.#options.sessionConfig?.(this.#manual);
    if (state.status === 'live' && config) state.client.updateSession(config);
    // Speech already under way when the mode changed still ends as a manual turn.
    if (this.#manual && this.#listener.speakers === 0) clearTimeout(this.#commitTimer);
  }

  get #state(): SessionState {
    return this.#current;
  }

  /**
   * The one transition. What the old state held and the new one does not keep is released: the realtime
   * client's listeners are removed and it is closed, timers are cleared; what the new state holds is
   * taken up. A change of status is logged and emitted; a renewal (live to live) is not a change anyone
   * outside notices.
   */
  set #state(next: SessionState) {
    const previous = this.#current;
    if (previous.status === 'live') {
      clearTimeout(previous.renewal.quiet);
      clearTimeout(previous.renewal.forced);
      clearTimeout(previous.responseRetry?.timer);
      const keptClient = next.status === 'live' && next.client === previous.client;
      if (!keptClient) {
        previous.client.off('event', previous.onEvent);
        previous.client.off('close', previous.onClose);
        previous.client.close(1000, next.status === 'live' ? 'renewed' : 'leaving the voice channel');
      }
      // What was still playing of a session that is gone is not an answer to anything any more.
      if (next.status !== 'live') {
        this.#pump.sink = undefined;
        this.#oldestUnappendedAt = undefined;
        this.#player.stop();
      }
    } else if (previous.status === 'reconnecting') {
      clearTimeout(previous.timer);
    }
    this.#current = next;
    if (next.status === 'live' && (previous.status !== 'live' || previous.client !== next.client)) {
      next.client.on('event', next.onEvent);
      next.client.on('close', next.onClose);
      this.#pump.sink = next.client;
      this.#oldestUnappendedAt = undefined;
      this.#armRenewal(next, { quiet: true, forced: true });
    }
    if (previous.status !== next.status) {
      this.#log.info('voice session state', { from: previous.status, to: next.status });
      this.emit('state', next.status);
    }
    if (next.status === 'live') this.#sayAnnouncements();
  }

  /** Opens the realtime session; throws (and closes) when it cannot. */
  async start(): Promise<void> {
    let client: RealtimeClient;
    try {
      client = await this.#options.connectRealtime(this.#manual);
    } catch (error) {
      this.stop();
      throw error;
    }
    if (this.#state.status !== 'connecting') {
      client.close(1000, 'leaving the voice channel');
      throw new Error('the voice session was stopped while it connected');
    }
    this.#pump.start();
    this.#state = this.#liveState(client);
  }

  /**
   * Says a line in the channel as a forced message (a response turn of its own), once the conversation
   * leaves room for it (#sayAnnouncements); several are said in the order they were asked for.
   */
  announce(text: string): void {
    if (this.#state.status === 'closed') return;
    const now = Date.now();
    this.#announcements.add(text, now);
    const live = this.#state;
    const waitsFor = live.status === 'live' ? this.#announcementWaitsFor(live, now) : 'the realtime session';
    if (waitsFor !== undefined) this.#log.info('a voice announcement waits', { for: waitsFor, waiting: this.#announcements.size });
    this.#sayAnnouncements();
  }

  /**
   * Why an announcement may not be said now, or undefined when it may. A member's turn goes first: while
   * someone speaks, while a turn waits for its answer (a function's output included), and while that
   * answer is made and played, an announcement waits, and then follows the answer; said over it, it would
   * be refused by the gateway or talk over the member. (It goes stale meanwhile after
   * ANNOUNCEMENT_MAX_WAIT_MS: see announcements.ts.) One said and then talked over is cut off like any
   * answer and not said again: the member chose to speak over it.
   */
  #announcementWaitsFor(live: LiveState, now: number): string | undefined {
    const forced = this.#forcedMessageWaitsFor(live, now);
    if (forced !== undefined) return forced;
    if (live.turnPending || live.decisionsPending > 0 || live.callsRunning > 0 || live.responseRetry)
      return "a member's turn and its answer";
    if (this.#listener.speakers > 0) return 'a member speaking';
    return undefined;
  }

  /**
   * Why the gateway would not take a forced message now (it refuses one while another response is active,
   * an announcement's included), or undefined when it would: what an announcement and a last line both wait for.
   */
  #forcedMessageWaitsFor(live: LiveState, now: number): string | undefined {
    if (!live.client.open) return 'the realtime session';
    if (live.announcementInFlight) return 'the previous announcement';
    if (live.openResponses > 0 || (live.refusedUntil !== undefined && now < live.refusedUntil)) return 'the response in progress';
    if (this.#player.speaking) return 'the answer playing';
    return undefined;
  }

  /** Says the next waiting announcement if the conversation leaves room for it; else waits for the event that may. */
  #sayAnnouncements(): void {
    const live = this.#state;
    const now = Date.now();
    this.#announcements.dropStale(now);
    if (live.status === 'closed' || this.#announcements.size === 0) {
      clearTimeout(this.#announcementTimer?.timer);
      this.#announcementTimer = undefined;
      return;
    }
    if (live.status === 'live' && live.refusedUntil !== undefined && now >= live.refusedUntil) live.refusedUntil = undefined;
    if (live.status === 'live' && live.announcementInFlight && now - live.announcementInFlight.sentAt >= ANNOUNCEMENT_START_TIMEOUT_MS) {
      this.#log.warn('a voice announcement was neither started nor refused by the gateway; going on without it');
      live.announcementInFlight = undefined;
    }
    if (live.status === 'live' && this.#announcementWaitsFor(live, now) === undefined) {
      const next = this.#announcements.take(now)!;
      const eventId = live.client.forceMessage(next.text, { interruptible: true });
      if (eventId !== undefined) {
        live.announcementInFlight = { eventId, sentAt: now };
        live.announcements.set(eventId, next);
        if (live.announcements.size > REMEMBERED_ANNOUNCEMENTS) live.announcements.delete(live.announcements.keys().next().value!);
      }
    }
    // What no event announces: the next line going stale, the in-flight one timing out, a refusal's hold ending.
    const wakeAt = Math.min(
      this.#announcements.nextStaleAt ?? Infinity,
      live.status === 'live' && live.announcementInFlight ? live.announcementInFlight.sentAt + ANNOUNCEMENT_START_TIMEOUT_MS : Infinity,
      live.status === 'live' ? (live.refusedUntil ?? Infinity) : Infinity,
    );
    // Called on every server event: a timer already set for that moment is kept.
    if (this.#announcementTimer?.at === wakeAt) return;
    clearTimeout(this.#announcementTimer?.timer);
    this.#announcementTimer = undefined;
    if (wakeAt === Infinity) return;
    const timer = setTimeout(
      () => {
        this.#announcementTimer = undefined;
        this.#sayAnnouncements();
      },
      Math.max(0, wakeAt - now),
    );
    this.#announcementTimer = { at: wakeAt, timer };
  }

  /**
   * Says a last line, not to be talked over, and resolves once it was heard: a response that began after
   * it is done and nothing is left to play. Resolves anyway after `timeoutMs`, or at once when no
   * session is live: a goodbye never keeps the bot in the channel.
   */
  async sayLast(text: string, timeoutMs: number): Promise<void> {
    const state = this.#state;
    if (state.status !== 'live') return;
    const client = state.client;
    const until = Date.now() + timeoutMs;
    let begun = false;
    let done = false;
    const follow = (event: RealtimeServerEvent) => {
      if (event.type === 'response.created') begun = true;
      else if (event.type === 'response.done' && begun) done = true;
    };
    const wakeOn = (wake: () => void) => {
      client.on('event', wake);
      this.on('played', wake);
      this.on('state', wake);
      return () => {
        client.off('event', wake);
        this.off('played', wake);
        this.off('state', wake);
      };
    };
    try {
      // A forced message during another response is refused by the gateway: the answer under way (or an
      // announcement sent and not yet begun) ends first. A member's turn does not hold the last line back.
      await waitUntil({
        check: () => (this.#state !== state || this.#forcedMessageWaitsFor(state, Date.now()) === undefined ? true : undefined),
        subscribe: wakeOn,
        timeoutMs: Math.max(0, until - Date.now()),
        timeoutError: () => new Error(`the answer under way did not end within ${timeoutMs} ms`),
      });
      if (this.#state !== state) return;
      client.on('event', follow);
      const eventId = client.forceMessage(text, { interruptible: false });
      // Announcements still waiting wait behind it, as behind one of their own.
      if (eventId !== undefined) state.announcementInFlight = { eventId, sentAt: Date.now() };
      await waitUntil({
        check: () => (this.#state !== state || (done && !this.speaking) ? true : undefined),
        subscribe: wakeOn,
        timeoutMs: Math.max(0, until - Date.now()),
        timeoutError: () => new Error(`the last line was not heard within ${timeoutMs} ms`),
      });
    } catch (error) {
      this.#log.warn('leaving without the last line heard', { error });
    } finally {
      client.off('event', follow);
    }
  }

  stop(): void {
    if (this.#state.status === 'closed') return;
    this.#state = { status: 'closed' };
    clearTimeout(this.#announcementTimer?.timer);
    this.#announcementTimer = undefined;
    this.#announcements.clear();
    clearTimeout(this.#commitTimer);
    this.#pump.stop();
    this.#listener.stop();
    this.#player.destroy();
    this.#encryption.stop();
  }

  /** A user left the channel. */
  forgetUser(userId: string): void {
    this.#listener.forget(userId);
  }

  /** A live state for a freshly opened realtime session (the #state setter attaches it). */
  #liveState(client: RealtimeClient): LiveState {
    const openedAt = Date.now();
    // A gateway that says when the session expires is believed.
    const expiresAt = client.sessionExpiresAt;
    if (expiresAt !== undefined)
      this.#sessionLimitMs = Math.min(this.#sessionLimitMs, Math.max(MIN_SESSION_LIMIT_MS, expiresAt.getTime() - openedAt));
    const live: LiveState = {
      status: 'live',
      client,
      answers: new AnswerStreams(),
      openedAt,
      limitNoticed: false,
      turnPending: false,
      openResponses: 0,
      decisionsPending: 0,
      calls: newCallBook(),
      callsRunning: 0,
      responseRetry: undefined,
      responseRefusals: 0,
      announcements: new Map(),
      announcementInFlight: undefined,
      refusedUntil: undefined,
      renewal: { quiet: undefined, forced: undefined },
      onEvent: (event) => this.#onEvent(live, event),
      onClose: (code, reason) => this.#onClose(live, code, reason),
    };
    return live;
  }

  /** Nobody speaking, no turn waiting for its answer, no answer coming or playing: a renewal loses nothing. */
  #quiet(live: LiveState): boolean {
    return (
      this.#listener.speakers === 0 &&
      this.#pump.quiet &&
      !live.turnPending &&
      live.openResponses === 0 &&
      !live.announcementInFlight &&
      !this.#player.speaking
    );
  }

  /** When the renewal window opens and when the renewal is forced, for this realtime session. */
  #renewalTimes(live: LiveState): { windowAt: number; forcedAt: number } {
    const { windowMs, marginMs } = this.#options.renewal ?? renewalTimes(this.#sessionLimitMs);
    const endsAt = live.openedAt + this.#sessionLimitMs;
    return { windowAt: endsAt - windowMs, forcedAt: endsAt - marginMs };
  }

  #armRenewal(live: LiveState, triggers: { quiet: boolean; forced: boolean }): void {
    const { windowAt, forcedAt } = this.#renewalTimes(live);
    if (triggers.quiet) {
      live.renewal.quiet = setTimeout(
        () => {
          live.renewal.quiet = undefined;
          this.#renewWhenQuiet(live);
        },
        Math.max(0, windowAt - Date.now()),
      );
    }
    if (triggers.forced) {
      live.renewal.forced = setTimeout(
        () => {
          live.renewal.forced = undefined;
          void this.#renew(live, 'the session limit is near');
        },
        Math.max(0, forcedAt - Date.now()),
      );
    }
  }

  #renewWhenQuiet(live: LiveState): void {
    if (this.#quiet(live)) {
      void this.#renew(live, 'a quiet moment before the session limit');
      return;
    }
    const check = setInterval(() => {
      if (!this.#quiet(live)) return;
      clearInterval(check);
      live.renewal.quiet = undefined;
      void this.#renew(live, 'a quiet moment before the session limit');
    }, QUIET_CHECK_MS);
    live.renewal.quiet = check;
  }

  /**
   * A fresh session before the old one reaches the gateway's limit; the channel never notices. One
   * renewal at a time: the triggers still waiting are disarmed while it runs, and if it fails, those
   * whose time has not passed meanwhile are armed again (the forced renewal tries after a failed quiet
   * one; after that the session ends at its limit and is reopened).
   */
  async #renew(live: LiveState, why: string): Promise<void> {
    const waiting = { quiet: live.renewal.quiet !== undefined, forced: live.renewal.forced !== undefined };
    clearTimeout(live.renewal.quiet);
    clearTimeout(live.renewal.forced);
    live.renewal.quiet = undefined;
    live.renewal.forced = undefined;
    let fresh: RealtimeClient;
    try {
      fresh = await this.#options.connectRealtime(this.#manual);
    } catch (error) {
      this.#log.warn('realtime renewal failed; the session continues until it ends', { error });
      if (this.#state === live)
        this.#armRenewal(live, { quiet: waiting.quiet, forced: waiting.forced && this.#renewalTimes(live).forcedAt > Date.now() });
      return;
    }
    if (this.#state !== live) {
      fresh.close();
      return;
    }
    this.#state = this.#liveState(fresh);
    this.#options.metrics?.realtimeRenewal();
    this.#log.info('realtime session renewed', { why });
  }

  #onEvent(live: LiveState, event: RealtimeServerEvent): void {
    switch (event.type) {
      case 'input_audio_buffer.speech_started':
        live.turnPending = true;
        this.#options.onActivity?.();
        this.#bargeIn();
        break;
      case 'response.created':
        live.turnPending = false;
        live.openResponses++;
        live.responseRefusals = 0;
        // The announcement sent last has started, or it is refused next (its event id says which).
        live.announcementInFlight = undefined;
        live.answers.responseCreated(event.responseId);
        break;
      case 'input_audio_buffer.committed':
        live.turnPending = true;
        live.answers.turnCommitted();
        // With server VAD the gateway ends turns; the bot's own commits took their speaker already.
        if (!this.#manual) this.#turnEnded(live);
        break;
      case 'response.output_item.added':
      case 'conversation.item.created':
        live.answers.itemAdded(event.type === 'response.output_item.added' ? event.responseId : undefined, event.itemId, event.role);
        break;
      case 'response.output_audio.delta': {
        const stream = live.answers.audio(event);
        if (!stream) break;
        this.#player.append(stream.key, event.audio);
        this.#options.onActivity?.();
        break;
      }
      case 'response.output_audio.done': {
        const key = live.answers.audioDone(event);
        if (key !== undefined) this.#player.end(key);
        break;
      }
      case 'response.done':
        live.openResponses = Math.max(0, live.openResponses - 1);
        if (live.openResponses === 0) {
          live.refusedUntil = undefined;
          // A member's answer that was refused goes before any announcement.
          if (live.responseRetry) this.#retryResponse(live);
        }
        for (const key of live.answers.responseDone(event.responseId)) this.#player.end(key);
        // A call the item events never announced is read from the response's output.
        for (const call of event.functionCalls) this.#functionCall(live, call, event.status);
        break;
      case 'response.function_call_arguments.done':
        this.#functionCall(live, event.call, undefined);
        break;
      case 'conversation.item.input_audio_transcription.completed':
        this.#heard(live, event.transcript);
        break;
      case 'response.output_audio_transcript.done':
        if (event.transcript) this.#options.onTranscript?.('bot', event.transcript, true);
        break;
      case 'error':
        if (isSessionLimitNotice(event)) live.limitNoticed = true;
        if (isActiveResponseRefusal(event)) {
          this.#refusedForActiveResponse(live, event);
        } else if (isRoutineRealtimeError(event)) {
          this.#log.debug('realtime notice', { code: event.code, message: event.message, answers: event.clientEventType });
        } else {
          this.#log.warn('realtime error event', {
            code: event.code,
            message: event.message,
            param: event.param,
            answers: event.clientEventType,
          });
          this.#tell(t(this.#locale, 'voice.problem.reported', { message: event.message }));
        }
        // An announcement the gateway answered with another error is not waited for (nor said again).
        if (event.clientEventId !== undefined && live.announcementInFlight?.eventId === event.clientEventId)
          live.announcementInFlight = undefined;
        break;
      default:
        break;
    }
    // Any event may leave room for a waiting announcement (a response ended, a turn was not answered…).
    this.#sayAnnouncements();
  }

  /**
   * The gateway refused a response because another was active: an announcement goes back to the front of
   * its line, a response.create is sent again; both once that response ends (its response.done), or, when
   * the bot saw no response start (a server that says nothing of it, or its events still in flight), after
   * a backoff. Each is given up after a few refusals in a row. Never news for the channel.
   */
  #refusedForActiveResponse(live: LiveState, event: RealtimeErrorEvent): void {
    const eventId = event.clientEventId ?? live.announcementInFlight?.eventId;
    const announcement = eventId === undefined ? undefined : live.announcements.get(eventId);
    if (announcement && eventId !== undefined) {
      live.announcements.delete(eventId);
      if (live.announcementInFlight?.eventId === eventId) live.announcementInFlight = undefined;
      const again = this.#announcements.refused(announcement);
      this.#log.info('the gateway refused a voice announcement while a response was active', { again, refusals: announcement.refusals });
      if (again && live.openResponses === 0)
        live.refusedUntil = Date.now() + backoffDelay(announcement.refusals - 1, ACTIVE_RESPONSE_RETRY);
      return;
    }
    if (event.clientEventType !== 'response.create') {
      this.#log.info('the gateway refused an event while a response was active', { code: event.code, answers: event.clientEventType });
      return;
    }
    live.responseRefusals++;
    clearTimeout(live.responseRetry?.timer);
    live.responseRetry = undefined;
    if (live.responseRefusals > MAX_ACTIVE_RESPONSE_REFUSALS) {
      this.#log.warn('response.create was refused too often for an active response; the turn goes unanswered', {
        refusals: live.responseRefusals,
      });
      live.turnPending = false;
      return;
    }
    this.#log.info('the gateway refused response.create while a response was active; asking again once it ends', {
      refusals: live.responseRefusals,
    });
    const timer =
      live.openResponses > 0
        ? undefined
        : setTimeout(() => this.#retryResponse(live), backoffDelay(live.responseRefusals - 1, ACTIVE_RESPONSE_RETRY));
    live.responseRetry = { timer };
  }

  /** Sends a refused response.create again. */
  #retryResponse(live: LiveState): void {
    const retry = live.responseRetry;
    if (!retry || this.#state !== live) return;
    clearTimeout(retry.timer);
    live.responseRetry = undefined;
    this.#requestResponse(live);
  }

  /** Asks the gateway to answer: the turn (or the function's output) waits for its answer until response.created. */
  #requestResponse(live: LiveState): void {
    live.turnPending = true;
    live.client.createResponse();
  }

  /** The language of what the session says in the text channel. */
  get #locale(): Locale {
    return this.#options.locale ?? ENGLISH;
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
    // Only a live session has answers playing: leaving live stops them.
    if (this.#state.status !== 'live' || !this.#player.speaking) return;
    this.#cutOff(this.#player.stop(), 'barge-in');
  }

  /** Answers stopped before their end: cancel what is still coming, and keep only what was heard. */
  #cutOff(stopped: StoppedItem[], why = 'not heard'): void {
    const live = this.#state;
    if (live.status !== 'live') return;
    live.client.cancelResponse();
    for (const { key, playedMs } of stopped) {
      const answer = live.answers.cutOff(key);
      // Only a real item id can be truncated; an answer whose item the server never named is just cancelled.
      if (answer?.itemId !== undefined) live.client.truncate(answer.itemId, answer.contentIndex, playedMs);
      this.#log.info(why, { item: answer?.itemId, playedMs });
    }
  }

  #endManualTurn(): void {
    const live = this.#state;
    if (live.status !== 'live' || this.#listener.speakers > 0) return;
    live.client.commit();
    this.#turnEnded(live);
    live.turnPending = true;
    // Answering only when named: the transcript decides (#heard); the turn joins the context either way.
    if (this.#onlyWhenNamed) live.decisionsPending++;
    else this.#requestResponse(live);
  }

  /** A turn ended: who spoke most of it, and a fresh book of function calls. */
  #turnEnded(live: LiveState): void {
    let speaker: string | undefined;
    let most = 0;
    for (const [userId, packets] of this.#turnPackets) {
      if (packets > most) [speaker, most] = [userId, packets];
    }
    this.#turnPackets.clear();
    if (speaker !== undefined) this.#lastTurnSpeaker = speaker;
    live.calls.acted = undefined;
    // The new turn is answered instead of one whose response.create was refused (a barge-in would cut it anyway).
    clearTimeout(live.responseRetry?.timer);
    live.responseRetry = undefined;
  }

  /** A user turn's transcript: answered when the bot answers everything, or when it names the bot. */
  #heard(live: LiveState, transcript: string): void {
    let answered = true;
    if (live.decisionsPending > 0) {
      live.decisionsPending--;
      answered = this.#options.addressed?.(transcript) ?? true;
      if (answered) {
        this.#requestResponse(live);
      } else {
        live.turnPending = false;
        this.#log.debug('a turn that does not name the bot: heard, not answered');
      }
    }
    if (transcript) this.#options.onTranscript?.('user', transcript, answered);
  }

  /**
   * A function call of the model, from its arguments' done event or from response.done (whichever comes
   * first; the other is the same call). One call per turn is acted on: the same call again gets the same
   * output, another is told only one is done per request. A call in an answer cut off by a barge-in is
   * not run: the member spoke over it, and the next turn says what they want now.
   */
  #functionCall(live: LiveState, call: RealtimeFunctionCall, responseStatus: string | undefined): void {
    const { calls } = live;
    if (calls.seen.has(call.callId)) return;
    calls.seen.add(call.callId);
    if (calls.seen.size > REMEMBERED_CALLS) calls.seen.delete(calls.seen.values().next().value!);
    const options = this.#options;
    if (!options.onFunctionCall) return;
    const cutOff = responseStatus === 'cancelled' || live.answers.isCutOff(call.responseId, call.itemId);
    let output: Promise<string>;
    const signature = `${call.name}\u0000${call.arguments}`;
    if (cutOff) {
      output = Promise.resolve(
        JSON.stringify({ status: 'not_done', message: 'The member spoke over this request, so it was not carried out.' }),
      );
    } else if (calls.acted?.signature === signature) {
      output = calls.acted.output;
    } else if (calls.acted) {
      output = Promise.resolve(
        JSON.stringify({ status: 'not_done', message: 'Only one action is carried out per request; this one was not. Ask again for it.' }),
      );
    } else {
      this.#log.info('function call', { name: call.name, call: call.callId });
      output = options.onFunctionCall({ ...call, speakerId: this.#lastTurnSpeaker }).catch((error: unknown) => {
        this.#log.error('a function call failed', { name: call.name, error });
        return JSON.stringify({ status: 'failed', message: 'Something went wrong on my side; nothing was done.' });
      });
      calls.acted = { signature, output };
    }
    live.callsRunning++;
    void output.then((text) => {
      live.callsRunning--;
      // A session renewed or lost meanwhile has no call to answer: the new one never saw it.
      if (this.#state !== live) {
        this.#log.info('a function call finished after its realtime session ended; its output is dropped', { name: call.name });
        return;
      }
      live.client.sendFunctionOutput(call.callId, text);
      // Cut off: the member's new turn is answered anyway; the output only keeps the context honest.
      if (!cutOff) this.#requestResponse(live);
      this.#sayAnnouncements();
    });
  }

  /** The realtime session ended without being asked to (its listener is removed when the bot closes it). */
  #onClose(live: LiveState, code: number, reason: string): void {
    this.#log.warn('realtime session closed; reconnecting', { code, reason });
    const lived = Date.now() - live.openedAt;
    if (live.limitNoticed && lived < this.#sessionLimitMs) {
      this.#sessionLimitMs = Math.max(MIN_SESSION_LIMIT_MS, lived);
      this.#log.info('the gateway ends realtime sessions sooner than expected; renewing before that from now on', {
        limitMs: this.#sessionLimitMs,
      });
    }
    this.#reconnectLater(1);
  }

  /** The first attempt goes at once, the next ones after a growing, jittered wait. */
  #reconnectLater(attempt: number): void {
    const { baseMs, maxMs } = this.#options.reconnect;
    const failed = attempt - 1;
    const delay = failed === 0 ? 0 : backoffDelay(failed - 1, { baseMs, maxMs, jitter: 0.5, spread: 'shorter' });
    const reconnecting: ReconnectingState = {
      status: 'reconnecting',
      attempt,
      timer: setTimeout(() => void this.#reconnect(reconnecting), delay),
    };
    this.#state = reconnecting;
  }

  /**
   * Reopens a lost session. A refused key (or no key any more) ends it at once, and so do too many
   * failed attempts: the channel is told why, rather than the bot sitting there deaf.
   */
  async #reconnect(reconnecting: ReconnectingState): Promise<void> {
    let client: RealtimeClient;
    try {
      client = await this.#options.connectRealtime(this.#manual);
    } catch (error) {
      // Stopped meanwhile: there is nobody left to tell.
      if (this.#state !== reconnecting) return;
      this.#log.warn('realtime reconnect failed', { attempt: reconnecting.attempt, error });
      const final = finalFailure(error, this.#locale);
      if (final !== undefined) return this.#giveUp(final);
      if (reconnecting.attempt >= this.#options.reconnect.maxAttempts) {
        return this.#giveUp(
          t(this.#locale, 'voice.problem.unreachable', {
            attempts: reconnecting.attempt,
            last: error instanceof Error ? error.message : '',
            known: error instanceof Error ? 'yes' : 'no',
          }),
        );
      }
      this.#reconnectLater(reconnecting.attempt + 1);
      return;
    }
    if (this.#state !== reconnecting) {
      client.close();
      return;
    }
    this.#state = this.#liveState(client);
  }

  #giveUp(reason: string): void {
    this.#log.warn('giving up on the realtime session', { reason });
    this.stop();
    this.#options.onGiveUp?.(reason);
  }
}
