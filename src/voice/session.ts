import { EventEmitter } from 'node:events';
import type { RealtimeClient } from '../gateway/realtime/client.ts';
import { backoffDelay } from '../lib/backoff.ts';
import type { Logger } from '../lib/log.ts';
import { AnnouncementSpeaker, type VoiceFloor } from './announcement-speaker.ts';
import { AnswerStreams } from './answer-streams.ts';
import { CallEncryptionMonitor, type CallEncryption } from './call-encryption.ts';
import { FRAME_MS } from './audio/format.ts';
import { SpeakerMixer } from './audio/mixer.ts';
import { FunctionCallsOfSession } from './function-calls.ts';
import { InputPump, type TrailingSilence } from './input-pump.ts';
import { speakLastLine } from './last-line.ts';
import { VoiceListener } from './listener.ts';
import { finalFailure } from './realtime-errors.ts';
import { ResponsesOfSession } from './responses.ts';
import { SentAnnouncements } from './sent-announcements.ts';
import { SessionLifetime, SessionLimit } from './session-lifetime.ts';
import type { VoiceSessionOptions } from './session-options.ts';
import type { LiveState, ReconnectingState, SessionState, VoiceSessionState } from './session-states.ts';
import { SpeechPlayer } from './speech-player.ts';
import { TurnTaking } from './turn-taking.ts';
import { TurnsOfSession } from './turns.ts';
import { notice, type Notice, type Phrase } from '../wording/notice.ts';

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
// Each state holds what belongs to it (session-states.ts): live its realtime client and, one object per
// concern, what lasts as long as that session: its answers, its lifetime and renewal triggers
// (session-lifetime.ts), the members' turns (turns.ts), its responses (responses.ts), the model's
// function calls (function-calls.ts) and the announcements sent on it (sent-announcements.ts);
// reconnecting its attempt and the timer before it. The one transition (the #state setter) releases what
// the old state held and the new one does not keep, so nothing of a session that was replaced or lost can
// act on the next: its listeners are gone.
//
// The voice connection stays up throughout: a lost or expiring realtime session never makes the bot
// leave the channel; sessions are renewed before the gateway's limit (session-lifetime.ts). This file
// holds the machine and the audio's path (listener, pump, player); what the bot does with each event of
// the live session is turn-taking.ts's, what it says on its own waits for room in the conversation
// (announcement-speaker.ts), and what the gateway reports is routine or news by its code (realtime-errors.ts).

/** The same problem is posted in the channel at most once in this long. */
const PROBLEM_REPEAT_MS = 60_000;
const PREBUFFER_MS = 60;
/**
 * 40 ms of input per append: half the websocket messages (each a system call, which on a busy machine
 * costs more than the audio work) for at most 25 ms of added latency, within the 40 ms budget.
 */
const FRAMES_PER_APPEND = 2;
/** In Discord turn mode, wait this long after everyone stopped so the last frames reach the session. */
const MANUAL_COMMIT_DELAY_MS = 3 * FRAME_MS;
/**
 * ...and this long when someone's audio stopped without closing its talk spurt: a network or client
 * hiccup that often resumes within a few hundred milliseconds would otherwise cut a sentence in two.
 */
const MANUAL_COMMIT_AFTER_DROPOUT_MS = 700;

interface SessionEvents {
  state: [VoiceSessionState];
  /** An answer (or announcement) was played to its end. */
  played: [];
}

export class VoiceSession extends EventEmitter<SessionEvents> {
  readonly #options: VoiceSessionOptions;
  readonly #log: Logger;
  readonly #mixer = new SpeakerMixer();
  readonly #player: SpeechPlayer;
  readonly #pump: InputPump;
  readonly #listener: VoiceListener;
  readonly #encryption: CallEncryptionMonitor;
  /** What a line the bot says on its own waits for: the session, the members, the bot's own voice. */
  readonly #floor: VoiceFloor;
  /** Lines to say in the channel when the conversation leaves room. */
  readonly #announcer: AnnouncementSpeaker;
  /** What the bot does with each event of the live realtime session. */
  readonly #turnTaking: TurnTaking;
  #current: SessionState = { status: 'connecting' };
  /** The gateway's limit as far as the session knows: learned from one realtime session for the next. */
  readonly #limit: SessionLimit;
  #commitTimer: NodeJS.Timeout | undefined;
  /** Only turns that name the bot are answered (and the bot ends turns itself, so it can decide before answering). */
  #onlyWhenNamed: boolean;
  /** Problems posted in the channel (each as its notice's JSON), and when. */
  readonly #posted = new Map<string, number>();
  /** When the oldest packet not yet appended arrived (performance.now()): an append's latency in. */
  #oldestUnappendedAt: number | undefined;

  constructor(options: VoiceSessionOptions) {
    super();
    this.#options = options;
    this.#limit = new SessionLimit(options.sessionLimitMs, options.renewal);
    this.#log = options.log.child({ guild: options.guildId });
    this.#floor = {
      state: () => this.#state,
      memberSpeaking: () => this.#listener.speakers > 0,
      answerPlaying: () => this.#player.speaking,
    };
    this.#announcer = new AnnouncementSpeaker(this.#log, this.#floor);
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
        this.#announcer.speakNext();
      },
      mayPlay: () => encryption.playable,
      onGaveUpWaiting: (stopped) => {
        this.#turnTaking.cutOff(stopped);
        this.#postProblem(notice('voice.problem.encryption-late'));
        this.#announcer.speakNext();
      },
      // An answer that would keep the bot talking (or buffering) past the bound is cut as a barge-in cuts it.
      onOverflow: (stopped) => this.#turnTaking.cutOff(stopped, 'answer audio past its bound'),
    });
    encryption.on('change', () => this.#player.playabilityChanged());
    this.#onlyWhenNamed = options.onlyWhenNamed ?? false;
    this.#turnTaking = new TurnTaking({
      floor: this.#floor,
      manual: () => this.#manual,
      onlyWhenNamed: () => this.#onlyWhenNamed,
      player: this.#player,
      announcer: this.#announcer,
      options,
      postProblem: (problem) => this.#postProblem(problem),
      log: this.#log,
    });
    this.#pump = new InputPump({
      mixer: this.#mixer,
      log: this.#log,
      trailingSilence: this.#trailingSilence(),
      framesPerAppend: FRAMES_PER_APPEND,
      onAppend: (frames, sentAt) => {
        if (metrics && this.#oldestUnappendedAt !== undefined) metrics.voiceLatency('in', (sentAt - this.#oldestUnappendedAt) / 1000);
        this.#oldestUnappendedAt = undefined;
        options.probe?.onAppend?.(frames, sentAt);
      },
    });
    this.#listener = new VoiceListener(options.connection.receiver, this.#mixer, {
      log: this.#log,
      hears: (userId) => userId !== options.botUserId && (options.hears?.(userId) ?? true),
      events: {
        onSpeakingStart: () => {
          options.onActivity?.();
          clearTimeout(this.#commitTimer);
          // Without server VAD there is no speech_started: Discord's own speaking signal is the barge-in.
          if (this.#manual) this.#turnTaking.bargeIn();
        },
        onAllSilent: (droppedOut) => {
          this.#announcer.speakNext();
          if (!this.#manual) return;
          const delay = droppedOut ? MANUAL_COMMIT_AFTER_DROPOUT_MS : MANUAL_COMMIT_DELAY_MS;
          this.#commitTimer = setTimeout(() => this.#turnTaking.endManualTurn(), delay);
        },
        onPacket: (userId, receivedAt) => {
          this.#turnTaking.packet(userId);
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
  #trailingSilence(): TrailingSilence | undefined {
    const { silenceMs } = this.#options.settings;
    return this.#manual ? undefined : { afterMs: silenceMs, feedMs: Math.max(1000, 2 * silenceMs) };
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
    this.#pump.trailingSilence = this.#trailingSilence();
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
      previous.lifetime.disarmRenewal();
      previous.responses.dropRetry();
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
      next.lifetime.armRenewal();
    }
    if (previous.status !== next.status) {
      this.#log.info('voice session state', { from: previous.status, to: next.status });
      this.emit('state', next.status);
    }
    if (next.status === 'live') this.#announcer.speakNext();
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
   * Speaks a line in the voice channel as a forced message (a response turn of its own), once the conversation
   * leaves room for it (announcement-speaker.ts); several are said in the order they were asked for. `aside`:
   * a line about the bot itself (it is back), whose transcript is told as such (onTranscript), not a turn.
   */
  announce(text: string, { aside = false }: { aside?: boolean } = {}): void {
    this.#announcer.add(text, aside);
  }

  /**
   * Speaks a last line, not to be talked over, and resolves once it was heard. Resolves anyway after
   * `timeoutMs`, or at once when no session is live: a goodbye never keeps the bot in the channel.
   */
  async speakLast(text: string, timeoutMs: number, { aside = false }: { aside?: boolean } = {}): Promise<void> {
    const live = this.#state;
    if (live.status !== 'live') return;
    await speakLastLine(live, { text, aside }, timeoutMs, {
      floor: this.#floor,
      log: this.#log,
      onConversationNews: (wake) => {
        this.on('played', wake);
        this.on('state', wake);
        return () => {
          this.off('played', wake);
          this.off('state', wake);
        };
      },
    });
  }

  stop(): void {
    if (this.#state.status === 'closed') return;
    this.#state = { status: 'closed' };
    this.#announcer.stop();
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

  /**
   * A member asked to be forgotten: the items of the live realtime session's context that hold their words
   * (their turns, the bot's answers to them) are deleted, and with `reconfigure` (its instructions held them)
   * the session is configured again. How many items were deleted.
   */
  forgetMember(userId: string, { reconfigure }: { reconfigure: boolean }): number {
    const live = this.#state;
    if (live.status !== 'live') return 0;
    const items = live.turns.forget(userId);
    for (const itemId of items) live.client.deleteItem(itemId);
    const config = reconfigure ? this.#options.sessionConfig?.(this.#manual) : undefined;
    if (config) live.client.updateSession(config);
    return items.length;
  }

  /** Whether `userId` is heard changed (see `hears` of the options): it takes effect from their next packet. */
  hearingChanged(userId: string): void {
    this.#listener.hearingChanged(userId);
  }

  /** A live state for a freshly opened realtime session (the #state setter attaches it). */
  #liveState(client: RealtimeClient): LiveState {
    const openedAt = Date.now();
    // A gateway that says when the session expires is believed.
    this.#limit.believe(client.sessionExpiresAt, openedAt);
    const live: LiveState = {
      status: 'live',
      client,
      answers: new AnswerStreams(),
      lifetime: new SessionLifetime(openedAt, this.#limit, { quiet: () => this.#quiet(live), renew: (why) => this.#renew(live, why) }),
      turns: new TurnsOfSession(),
      responses: new ResponsesOfSession(),
      calls: new FunctionCallsOfSession(),
      announcements: new SentAnnouncements(),
      onEvent: (event) => this.#turnTaking.handle(live, event),
      onClose: (code, reason) => this.#onClose(live, code, reason),
    };
    for (const { itemId, members } of this.#options.restoredItems?.(client) ?? []) live.turns.owned(itemId, members);
    return live;
  }

  /** Nobody speaking, no turn waiting for its answer, no answer coming or playing: a renewal loses nothing. */
  #quiet(live: LiveState): boolean {
    return (
      this.#listener.speakers === 0 &&
      this.#pump.quiet &&
      !live.turns.awaitingAnswer &&
      !live.responses.open &&
      !live.announcements.inFlight &&
      !this.#player.speaking
    );
  }

  /** A fresh session in place of `live` before it reaches the gateway's limit; the channel never notices. */
  async #renew(live: LiveState, why: string): Promise<'renewed' | 'failed' | 'gone'> {
    let fresh: RealtimeClient;
    try {
      fresh = await this.#options.connectRealtime(this.#manual);
    } catch (error) {
      this.#log.warn('realtime renewal failed; the session continues until it ends', { error });
      return this.#state === live ? 'failed' : 'gone';
    }
    if (this.#state !== live) {
      fresh.close();
      return 'gone';
    }
    this.#state = this.#liveState(fresh);
    this.#options.metrics?.realtimeRenewal();
    this.#log.info('realtime session renewed', { why });
    return 'renewed';
  }

  /** Posts a problem in the channel, unless the same was posted a moment ago (a failing session repeats itself). */
  #postProblem(problem: Notice): void {
    const now = Date.now();
    for (const [posted, at] of this.#posted) if (now - at >= PROBLEM_REPEAT_MS) this.#posted.delete(posted);
    const same = JSON.stringify(problem);
    if (this.#posted.has(same)) return;
    this.#posted.set(same, now);
    this.#options.onProblem?.(problem);
  }

  /** The realtime session ended without being asked to (its listener is removed when the bot closes it). */
  #onClose(live: LiveState, code: number, reason: string): void {
    this.#log.warn('realtime session closed; reconnecting', { code, reason });
    if (this.#limit.learnFrom(live.lifetime, Date.now())) {
      this.#log.info('the gateway ends realtime sessions sooner than expected; renewing before that from now on', {
        limitMs: this.#limit.ms,
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
      const final = finalFailure(error);
      if (final !== undefined) return this.#giveUp(final);
      if (reconnecting.attempt >= this.#options.reconnect.maxAttempts) {
        return this.#giveUp(
          notice('voice.problem.unreachable', {
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

  #giveUp(reason: Phrase): void {
    this.#log.warn('giving up on the realtime session', { reason: 'key' in reason ? reason.key : reason.phrase });
    this.stop();
    this.#options.onGiveUp?.(reason);
  }
}
