import type { VoiceConnection } from '@discordjs/voice';
import type { Client, Guild, VoiceState } from 'discord.js';
import type { DiscordOutbox } from '../discord/outbox.ts';
import { REALTIME_SESSION_MAX_MS } from '../gateway/spec.ts';
import type { Logger } from '../lib/log.ts';
import type { GatewayAccessResolver } from '../ports/gateway-access.ts';
import type { ModerationLogPort } from '../ports/moderation-log.ts';
import type { VoiceVideoRequests } from '../ports/voice-video.ts';
import type { VoiceSettings, VoiceSettingsSource } from '../ports/voice-settings.ts';
import type { VoiceSpending } from '../ports/voice-spend.ts';
import { budgetSpent, budgetWarning } from './budget-notices.ts';
import { ConversationMeter, type BudgetReasons } from './meter.ts';
import { addressesBot, answersOnlyWhenNamed } from './addressing.ts';
import { callEncryptionNotice, type CallEncryption } from './call-encryption.ts';
import { ChannelLines } from './channel-lines.ts';
import { bringBack, type ComebackOptions } from './comeback.ts';
import { finalFailure, openFailure, type OpenFailure } from './realtime-errors.ts';
import { RealtimeOpener } from './realtime-opener.ts';
import { VoiceSession } from './session.ts';
import { SpokenLines } from './spoken-lines.ts';
import type { ConversationLine, VoiceSessionMetrics } from './session-options.ts';
import { runVoiceToolCall } from './tool-caller.ts';
import { TranscriptThread } from './transcript-thread.ts';
import { botName, memberName, missingVoicePermissions, peopleIdsIn, peopleIn, wakeWords } from './voice-channel.ts';
import type { ConsentBook, ConsentRecord } from './consent.ts';
import { Hearing } from './hearing.ts';
import { customId } from '../discord/custom-id.ts';
import type { CommandMentions } from '../discord/command-mentions.ts';
import { connectToChannel, disconnect, watchConnection, type ConnectionEnd } from './voice-connection.ts';
import {
  ConversationRecorder,
  forgetInStoredConversation,
  type ConversationRecord,
  type ConversationRecords,
} from './conversation-record.ts';
import { forgetInTranscripts, type TranscriptsForgotten } from './transcript-forgetting.ts';
import { rememberLine, type IndexedLine, type TranscriptLines } from './transcript-lines.ts';
import type { Audience } from '../i18n/index.ts';
import { notice, refuse, type Notice, type Outcome, type Phrase } from '../wording/notice.ts';
import type { BotMetrics } from '../lib/metrics.ts';

// Voice conversations, one per server: joining and leaving, posting in the text channel, leaving empty
// or idle channels, and spoken notices from the rest of the bot. A join is a sequence of steps (see
// #join); the voice connection (voice-connection.ts), the realtime sessions (realtime-opener.ts), the
// transcript (transcript-thread.ts) and the return after a restart (comeback.ts) are in files of their own.

/** After joining an encrypted call, how long the bot waits for its keys (and the privacy code) before it answers. */
const ENCRYPTION_JOIN_WAIT_MS = 3_000;
/**
 * The longest a join waits for its first line (that the bot listens, and how not to be heard) to be
 * heard before it answers anyway: about 5 s of speech, and an answer under way first.
 */
const LISTENING_LINE_MAX_MS = 8_000;
/** The join message's button that lets the member who presses it be heard (commands/voice.ts answers it). */
export const HEAR_ME_BUTTON = customId('voice', 'hear-me');

/** Why a conversation ended, as the text channel is told. */
export type LeaveReason =
  | { why: 'asked'; by: string }
  | { why: 'moving' | ConnectionEnd | 'model-unavailable' | 'budget' | 'restarting' | 'empty' }
  | { why: 'idle'; minutes: number };

function leaveValues(reason: LeaveReason): { reason: string; by: string; minutes: number } {
  // ICU selectors take no hyphen.
  return {
    reason: reason.why.replaceAll('-', '_'),
    by: 'by' in reason ? `<@${reason.by}>` : '',
    minutes: 'minutes' in reason ? reason.minutes : 0,
  };
}
const IDLE_CHECK_MS = 30_000;
/** A lost realtime session is reopened at once, then after up to 0.5 s, 1 s, 2 s… 30 s (each cut by up to half at random); the conversation ends after 8 failed attempts. */
const REALTIME_RECONNECT = { baseMs: 500, maxMs: 30_000, maxAttempts: 8 };
/** How often a conversation's session time is counted: a crash loses at most this much of it (the issue allows a minute). */
const METER_HEARTBEAT_MS = 30_000;
/** The longest the bot waits for its goodbye (why it leaves) to be heard before it leaves anyway. */
const LAST_LINE_MAX_MS = 15_000;
/**
 * The longest a graceful stop waits for "restarting" to be heard: an answer under way first, then the
 * line (about 3 s of speech). Well within the stop's 10 s, which also drains commands and closes the rest.
 */
const RESTART_LINE_MAX_MS = 6_000;

interface GuildVoice {
  /** The member who brought the bot in. */
  userId: string;
  /** When it started, or came back after a restart. */
  startedAt: number;
  session: VoiceSession;
  connection: VoiceConnection;
  voiceChannelId: string;
  textChannelId: string;
  /** Where the conversation's lines are posted, when its settings want a transcript. */
  transcript: TranscriptThread;
  /** Opens its realtime sessions, and keeps what they were given of the turns before a restart. */
  realtime: RealtimeOpener;
  /** Transcript lines being posted and remembered: forgetting a member waits for them, so none is missed. */
  posting: Set<Promise<void>>;
  /** When someone last spoke or the bot last answered. */
  activity: { last: number };
  settings: VoiceSettings;
  /** Counts the conversation's session time and watches its budget; undefined without a spending port. */
  meter: ConversationMeter | undefined;
  /** Keeps the conversation's record in the store, to bring it back after a restart; undefined without a store. */
  recorder: ConversationRecorder | undefined;
  /** Whom the conversation hears (the members' choices and its consent setting). */
  hearing: Hearing;
}

/** A join as asked for: by a member (`/voice join`), or by the bot bringing a conversation back after a restart. */
interface JoinRequest {
  guildId: string;
  voiceChannelId: string;
  textChannelId: string;
  /** The member who brings the bot in, whose budget (and the server's) the conversation spends. */
  userId: string;
  /**
   * The record of a conversation a restart interrupted, brought back with its settings, its transcript
   * thread and its earlier turns in the new realtime session's context.
   */
  resumed: ConversationRecord | undefined;
}

/** The first realtime session of a conversation, opened. */
interface StartedSession {
  /** Before its first realtime session was asked for: everything the meter counts comes after. */
  startedAt: number;
  session: VoiceSession;
  realtime: RealtimeOpener;
  meter: ConversationMeter | undefined;
  /** When someone last spoke or the bot last answered. */
  activity: { last: number };
  hearing: Hearing;
}

/**
 * A refusal's notice is for the member who asked, in their language unless `audience` says it is worded
 * for the server (in its language); `failure`: why the realtime session could not be opened, for the log.
 */
export type JoinResult = Outcome<
  { alreadyThere: true } | { alreadyThere?: false; encryption: CallEncryption },
  { failure?: OpenFailure; audience?: Audience }
>;

export interface VoiceServiceDeps {
  client: Client;
  outbox: DiscordOutbox;
  access: GatewayAccessResolver;
  /** Each server's voice settings, read at every join. */
  settings: VoiceSettingsSource;
  wsBaseUrl: string;
  log: Logger;
  /** What the model's video tools do (generate_video, video_status); without it no tools are declared. */
  videoRequests?: VoiceVideoRequests;
  /** The gateway's realtime session limit; default the spec's 120 minutes. */
  sessionLimitMs?: number;
  /** The clock idleness is measured by, and how often it is looked at (tests and demos only). */
  idle?: { now: () => number; checkMs: number };
  /** Counts each conversation's session time against the member who brought the bot in and the server, and says what is left; default none. */
  spending?: VoiceSpending;
  /** How often a conversation's session time is counted; default 30 s (tests count sooner). */
  meterHeartbeatMs?: number;
  /** Counts live conversations and realtime reconnects, and each session's frames, decryption failures, renewals and latency; default none. */
  metrics?: Pick<BotMetrics, 'voiceConversations' | 'realtimeReconnect'> & VoiceSessionMetrics;
  /**
   * Live conversations as the store keeps them (`voice_conversations`): a graceful stop keeps them and
   * `resume()` brings them back at the next start. Without it a stop ends every conversation for good.
   */
  conversations?: ConversationRecords;
  /** Each server's moderation log, told when a conversation starts and ends (how long, what it cost); default none. */
  moderationLog?: Pick<ModerationLogPort, 'voiceStarted' | 'voiceEnded'>;
  /**
   * Which transcript messages hold whose words (`voice_transcript_lines`), so that a member who is forgotten
   * has theirs deleted. Without it transcripts are posted all the same, and forgetting leaves them.
   */
  transcriptLines?: TranscriptLines;
  /**
   * The members' choices about being heard (`voice_consent`). Without it nobody has chosen: an open
   * conversation hears everyone, an opt-in one only the member who brought the bot in, and no choice can be made.
   */
  consent?: ConsentBook;
  /** Names a command as a clickable mention (`</voice ignore-me:…>`); without it, as text. */
  mentions?: Pick<CommandMentions, 'mention'>;
}

/** What forgetting a member removed: their turns from the conversation kept for a restart, and transcript messages. */
export interface MemberForgotten extends TranscriptsForgotten {
  turns: number;
}

/** A member's choice about being heard, as stored; refused when the store could not keep it. */
export type ConsentResult = Outcome<{ record: ConsentRecord }>;

export class VoiceService {
  readonly #deps: VoiceServiceDeps;
  readonly #guilds = new Map<string, GuildVoice>();
  readonly #joining = new Set<string>();
  readonly #idleTimer: NodeJS.Timeout;
  readonly #now: () => number;
  /** What the bot posts about its conversations, worded in each server's language. */
  readonly #channel: ChannelLines;
  /** What the bot says aloud on its own, worded in each conversation's language. */
  readonly #spoken: SpokenLines;
  /** stopAll() ran: nothing is brought back any more. */
  #stopped = false;

  constructor(deps: VoiceServiceDeps) {
    this.#deps = deps;
    this.#channel = new ChannelLines({ client: deps.client, outbox: deps.outbox, log: deps.log });
    this.#spoken = new SpokenLines(this.#channel);
    deps.client.on('voiceStateUpdate', (before, after) => this.#onVoiceState(before, after));
    this.#now = deps.idle?.now ?? Date.now;
    this.#idleTimer = setInterval(() => this.#leaveIdle(), deps.idle?.checkMs ?? IDLE_CHECK_MS);
    this.#idleTimer.unref();
  }

  isIn(guildId: string): boolean {
    return this.#guilds.has(guildId);
  }

  channelOf(guildId: string): string | undefined {
    return this.#guilds.get(guildId)?.voiceChannelId;
  }

  /**
   * `userId`: the member who brings the bot in, whose budget (and the server's) the conversation spends;
   * a refusal is for them.
   */
  async join(guildId: string, voiceChannelId: string, textChannelId: string, userId: string): Promise<JoinResult> {
    return this.#join({ guildId, voiceChannelId, textChannelId, userId, resumed: undefined });
  }

  /**
   * Checks that the bot may join (busy, server, permissions, key, budget), leaves the channel it is in,
   * connects, starts the conversation, keeps it, and greets the channels.
   */
  async #join(request: JoinRequest): Promise<JoinResult> {
    const { guildId } = request;
    const current = this.#guilds.get(guildId);
    if (current?.voiceChannelId === request.voiceChannelId) return { ok: true, alreadyThere: true };
    const joinable = this.#joinableGuild(request);
    if (!joinable.ok) return joinable;
    const allowed = await this.#mayTalk(request);
    if (!allowed.ok) return allowed;
    this.#joining.add(guildId);
    try {
      if (current) await this.leave(guildId, { why: 'moving' }, false);
      const settings = request.resumed?.settings ?? (await this.#deps.settings.voiceSettings(guildId));
      const log = this.#deps.log.child({ guild: guildId });
      const connection = await connectToChannel(joinable.guild, request.voiceChannelId, log);
      if (!connection) return refuse('voice.could-not-connect');
      const started = await this.#startSession(joinable.guild, request, settings, connection, log);
      if (!started.ok) return started;
      const conversation = this.#keep(request, settings, connection, started, log);
      const encryption = await this.#greet(request, conversation);
      // After the channel heard that the bot listens: a budget with under a minute left is warned of at once.
      void conversation.meter?.start();
      return { ok: true, encryption };
    } finally {
      this.#joining.delete(guildId);
    }
  }

  /** The server, unless a join is under way there, it is not available, or the bot lacks a permission in the channel. */
  #joinableGuild({ guildId, voiceChannelId }: JoinRequest): Outcome<{ guild: Guild }> {
    if (this.#joining.has(guildId)) return refuse('voice.join.busy');
    const guild = this.#deps.client.guilds.cache.get(guildId);
    if (!guild) return refuse('voice.join.no-server');
    const missing = missingVoicePermissions(guild, voiceChannelId);
    if (missing.length === 0) return { ok: true, guild };
    return refuse('voice.join.missing-permissions', {
      channel: `<#${voiceChannelId}>`,
      missing: { phrase: 'list', items: missing.map((permission) => notice('voice.permission', { permission })) },
    });
  }

  /**
   * Whether the server has a usable key, and the member and the server have budget left for voice. A
   * spent budget is told as the server's channels are (the spending port's reason names the server's budgets).
   */
  async #mayTalk({ guildId, userId }: JoinRequest): Promise<Outcome<object, { audience?: Audience }>> {
    const access = await this.#deps.access.resolveGatewayAccess(guildId);
    if (!access.ok) return { ok: false, notice: access.notice };
    const budget = await this.#deps.spending?.checkStart(guildId, userId, Date.now());
    if (budget && !budget.ok) return { ok: false, notice: budget.notice, audience: 'channel' };
    return { ok: true };
  }

  /**
   * Opens the conversation's first realtime session on the ready connection, its meter counting every
   * session; when it cannot be opened, the connection is destroyed and the meter ended.
   */
  async #startSession(
    guild: Guild,
    request: JoinRequest,
    settings: VoiceSettings,
    connection: VoiceConnection,
    log: Logger,
  ): Promise<Outcome<StartedSession, { failure?: OpenFailure }>> {
    const { guildId, userId } = request;
    const spending = this.#deps.spending;
    const startedAt = Date.now();
    const meter = spending && this.#meter(spending, guildId, userId, settings, log);
    const activity = { last: this.#now() };
    // The session is told of changes once it exists; before, it takes what is known when it starts listening.
    const listening: { session?: VoiceSession } = {};
    const hearing = this.#hearing(guild, request, settings, log, (userId) => listening.session?.hearingChanged(userId));
    // Known before anyone is listened to: until a member's choice is read they are not heard.
    await hearing.load(peopleIdsIn(this.#deps.client, guild, request.voiceChannelId));
    const realtime = new RealtimeOpener({
      guildId,
      access: this.#deps.access,
      wsBaseUrl: this.#deps.wsBaseUrl,
      settings,
      // The model answers in the speaker's language; when that is unclear, in the one /voice settings chose, else the server's.
      spokenLanguage: this.#spoken.language(guildId, settings),
      tools: this.#toolsOn(settings),
      earlierTurns: request.resumed?.turns,
      onOpened: (client) => meter?.opened(client),
      memberName: async (userId) => memberName(guild, userId),
      log,
    });
    const session = this.#session(guild, request, settings, connection, realtime, activity, hearing, log);
    listening.session = session;
    try {
      await session.start();
    } catch (error) {
      hearing.stop();
      connection.destroy();
      await meter?.end();
      log.warn('could not open the realtime session', { error });
      return {
        ...refuse('voice.join.could-not-start', { why: finalFailure(error) ?? notice('voice.join.model-unreachable') }),
        failure: openFailure(error),
      };
    }
    return { ok: true, startedAt, session, realtime, meter, activity, hearing };
  }

  /** Whom a conversation about to start hears: its consent setting, who brought the bot in, the members' choices. */
  #hearing(guild: Guild, request: JoinRequest, settings: VoiceSettings, log: Logger, onChange: (userId: string) => void): Hearing {
    const consent = this.#deps.consent;
    return new Hearing({
      context: { mode: settings.consent, bringer: request.userId, guildId: guild.id },
      read: (userId) => (consent ? consent.read(userId) : Promise.resolve(undefined)),
      onChange,
      log,
    });
  }

  #session(
    guild: Guild,
    { guildId, voiceChannelId, textChannelId }: JoinRequest,
    settings: VoiceSettings,
    connection: VoiceConnection,
    realtime: RealtimeOpener,
    activity: { last: number },
    hearing: Hearing,
    log: Logger,
  ): VoiceSession {
    return new VoiceSession({
      guildId,
      connection,
      settings,
      botUserId: this.#deps.client.user?.id ?? '',
      hears: (userId) => hearing.heard(userId),
      log,
      sessionLimitMs: this.#deps.sessionLimitMs ?? REALTIME_SESSION_MAX_MS,
      reconnect: REALTIME_RECONNECT,
      connectRealtime: (manual) => realtime.open(manual),
      sessionConfig: (manual) => realtime.config(manual),
      restoredItems: (client) => realtime.restoredItems(client),
      onlyWhenNamed: answersOnlyWhenNamed(settings.respond, peopleIn(this.#deps.client, guild, voiceChannelId)),
      addressed: (transcript) => addressesBot(transcript, wakeWords(this.#deps.client, guild, settings)),
      onFunctionCall: (call) => runVoiceToolCall(this.#deps.videoRequests, guild, textChannelId, call, this.#deps.log),
      onTranscript: (line) => this.#transcriptLine(guildId, line),
      onProblem: (problem) => void this.#channel.post(guildId, textChannelId, problem),
      onGiveUp: (reason) => void this.#stopBecause(guildId, reason),
      onActivity: () => {
        activity.last = this.#now();
      },
      metrics: this.#deps.metrics,
    });
  }

  /**
   * From now on the conversation is the server's: its connection followed, its record kept (so that a
   * crash leaves it too), and counted.
   */
  #keep(request: JoinRequest, settings: VoiceSettings, connection: VoiceConnection, started: StartedSession, log: Logger): GuildVoice {
    const { guildId, voiceChannelId, textChannelId, userId } = request;
    const { session, realtime, meter, activity, startedAt, hearing } = started;
    watchConnection(connection, (why) => {
      if (this.#guilds.get(guildId)?.connection === connection) void this.leave(guildId, { why });
    });
    const recorder = this.#recorder(request, settings, log);
    const conversation: GuildVoice = {
      userId,
      startedAt,
      session,
      connection,
      voiceChannelId,
      textChannelId,
      transcript: this.#transcriptThread(request, () => conversation),
      realtime,
      posting: new Set(),
      activity,
      settings,
      meter,
      recorder,
      hearing,
    };
    this.#guilds.set(guildId, conversation);
    // Kept from now on, so that a crash leaves it too; not waited for (a slow store must not hold up the join).
    void recorder?.write();
    this.#deps.metrics?.voiceConversations(1);
    this.#deps.moderationLog?.voiceStarted({ guildId, userId, voiceChannelId, resumed: request.resumed !== undefined });
    session.on('state', (status) => {
      if (status === 'reconnecting') this.#deps.metrics?.realtimeReconnect();
    });
    return conversation;
  }

  /** The conversation's transcript thread; `conversation` is the conversation it belongs to, once kept. */
  #transcriptThread({ guildId, textChannelId, resumed }: JoinRequest, conversation: () => GuildVoice): TranscriptThread {
    return new TranscriptThread({
      outbox: this.#deps.outbox,
      log: this.#deps.log,
      guildId,
      textChannelId,
      threadId: resumed?.transcriptThreadId,
      word: (told) => this.#channel.word(guildId, told),
      voiceChannelId: () => conversation().voiceChannelId,
      memberName: async (userId) => {
        const guild = this.#deps.client.guilds.cache.get(guildId);
        return guild && memberName(guild, userId);
      },
      botName: () => {
        const guild = this.#deps.client.guilds.cache.get(guildId);
        return (guild && botName(this.#deps.client, guild)) ?? this.#deps.client.user?.username ?? '';
      },
      onOpened: (threadId) => conversation().recorder?.change({ transcriptThreadId: threadId }),
      onRefused: () => {
        const entry = conversation();
        entry.settings = { ...entry.settings, transcripts: false };
        entry.recorder?.change({ settings: entry.settings });
      },
      post: (channelId, told) => this.#channel.post(guildId, channelId, told),
    });
  }

  /** The conversation's record in the store, to bring it back after a restart; undefined without a store. */
  #recorder(
    { guildId, voiceChannelId, textChannelId, userId, resumed }: JoinRequest,
    settings: VoiceSettings,
    log: Logger,
  ): ConversationRecorder | undefined {
    const records = this.#deps.conversations;
    if (!records) return undefined;
    return new ConversationRecorder(
      records,
      guildId,
      {
        voiceChannelId,
        textChannelId,
        userId,
        settings,
        turns: [...(resumed?.turns ?? [])],
        ...(resumed?.transcriptThreadId === undefined ? {} : { transcriptThreadId: resumed.transcriptThreadId }),
        restarting: false,
        rejoinAttempts: 0,
        updatedAt: Date.now(),
      },
      log,
    );
  }

  /**
   * The text channel is told that the bot listens and sends what it hears to the voice model, whom it hears
   * (the consent setting) and how not to be heard (in the server's language, whoever asked), and how the
   * call is encrypted; an opt-in conversation's message has a button to be heard. A new conversation says in
   * one sentence that it listens, and the join is answered once that was heard (or LISTENING_LINE_MAX_MS
   * passed); one brought back says aloud that the bot is back, and that sentence.
   */
  async #greet({ guildId, voiceChannelId, textChannelId, resumed }: JoinRequest, conversation: GuildVoice): Promise<CallEncryption> {
    const { session, settings } = conversation;
    const encryption = await session.encryptionSettled(ENCRYPTION_JOIN_WAIT_MS);
    const [ignoreMe, listenToMe] = await Promise.all([
      this.#mention(guildId, 'voice ignore-me'),
      this.#mention(guildId, 'voice listen-to-me'),
    ]);
    // ICU selectors take no hyphen.
    const values = { channel: `<#${voiceChannelId}>`, mode: settings.consent.replace('-', '_'), ignoreMe, listenToMe };
    const listening = resumed ? notice('voice.back', values) : notice('voice.joined', values);
    const buttons = settings.consent === 'opt-in' ? [{ customId: HEAR_ME_BUTTON, label: 'voice.hear-me.button' as const }] : [];
    const posted = this.#channel.postWithButtons(guildId, textChannelId, [listening, callEncryptionNotice(encryption)], buttons);
    const line = this.#spoken.line(guildId, settings, notice('voice.spoken.listening', { mode: values.mode }));
    // Said of the restart itself, and that it still listens (someone may have come in meanwhile): not a turn
    // of the conversation, it would only crowd the real ones out.
    if (resumed) session.announce(`${this.#spoken.line(guildId, settings, notice('voice.spoken.back'))} ${line}`, { aside: true });
    // About the bot itself, not a turn: every member hears it whole before the join is answered. A call
    // whose keys the bot does not hold yet cannot play it: it is said once they come, the join answered now.
    else if (encryption.ready) await session.speakLast(line, LISTENING_LINE_MAX_MS, { aside: true });
    else session.announce(line, { aside: true });
    await posted;
    return encryption;
  }

  async #mention(guildId: string, path: string): Promise<string> {
    return (await this.#deps.mentions?.mention(guildId, path)) ?? `\`/${path}\``;
  }

  /**
   * The member asks not to be heard, in every server until they ask to be heard again: stored, then taken
   * at once by every conversation of this process, which drops their audio from the next packet.
   */
  async ignoreMe(userId: string): Promise<ConsentResult> {
    return this.#consentChange(userId, (book) => book.ignore(userId));
  }

  /** The member asks to be heard again, and in `guildId`'s opt-in conversations too: stored, then taken at once. */
  async listenToMe(guildId: string, userId: string): Promise<ConsentResult> {
    return this.#consentChange(userId, (book) => book.listen(userId, guildId));
  }

  async #consentChange(userId: string, change: (book: ConsentBook) => Promise<ConsentRecord>): Promise<ConsentResult> {
    const book = this.#deps.consent;
    if (!book) return refuse('voice.consent.unsaved');
    let record: ConsentRecord;
    try {
      record = await change(book);
    } catch (error) {
      this.#deps.log.warn("could not store a member's choice about being heard", { user: userId, error });
      return refuse('voice.consent.unsaved');
    }
    for (const entry of this.#guilds.values()) entry.hearing.set(userId, record);
    return { ok: true, record };
  }

  /** Ends the conversation for good (its record goes too), and posts so in the text channel unless `post` is false. */
  async leave(guildId: string, reason: LeaveReason, post = true): Promise<boolean> {
    const entry = this.#guilds.get(guildId);
    if (!entry || !(await this.#end(guildId, entry, reason.why, 'remove'))) return false;
    if (post)
      await this.#channel.post(
        guildId,
        entry.textChannelId,
        notice('voice.left', { channel: `<#${entry.voiceChannelId}>`, ...leaveValues(reason) }),
      );
    return true;
  }

  /** Leaves the channel; the record is removed, or kept for the next start (a restart). */
  async #end(guildId: string, entry: GuildVoice, reason: string, record: 'remove' | 'keep'): Promise<boolean> {
    if (this.#guilds.get(guildId) !== entry) return false;
    this.#guilds.delete(guildId);
    this.#deps.metrics?.voiceConversations(-1);
    entry.hearing.stop();
    entry.session.stop();
    disconnect(entry.connection);
    // Counted before the leave is answered: /usage right after it shows the whole conversation.
    await Promise.all([entry.meter?.end(), record === 'remove' ? entry.recorder?.remove() : entry.recorder?.keepForRestart()]);
    this.#deps.moderationLog?.voiceEnded({
      guildId,
      userId: entry.userId,
      voiceChannelId: entry.voiceChannelId,
      ms: Date.now() - entry.startedAt,
      usdTicks: entry.meter?.countedUsdTicks ?? 0,
      restarting: record === 'keep',
    });
    this.#deps.log.info('left voice', { guild: guildId, reason });
    return true;
  }

  /** The conversation cannot go on (see VoiceSession.onGiveUp): leave, and post why in full. */
  async #stopBecause(guildId: string, reason: Phrase): Promise<void> {
    const entry = this.#guilds.get(guildId);
    if (!entry || !(await this.leave(guildId, { why: 'model-unavailable' }, false))) return;
    await this.#channel.post(guildId, entry.textChannelId, notice('voice.stopped', { channel: `<#${entry.voiceChannelId}>`, reason }));
  }

  #meter(spending: VoiceSpending, guildId: string, userId: string, settings: VoiceSettings, log: Logger): ConversationMeter {
    const meter: ConversationMeter = new ConversationMeter({
      spending,
      guildId,
      userId,
      model: settings.model,
      heartbeatMs: this.#deps.meterHeartbeatMs ?? METER_HEARTBEAT_MS,
      log,
      onWarning: ({ msLeft, reason }) => {
        const entry = this.#guilds.get(guildId);
        if (entry?.meter !== meter) return;
        const warning = budgetWarning(msLeft, reason);
        entry.session.announce(this.#spoken.line(guildId, settings, warning));
        void this.#channel.post(guildId, entry.textChannelId, warning);
      },
      onSpent: (reasons) => void this.#budgetSpent(guildId, meter, reasons),
    });
    return meter;
  }

  /** A budget ran out: say why aloud (heard before the bot goes), leave, and post why in the text channel. */
  async #budgetSpent(guildId: string, meter: ConversationMeter, { reason }: BudgetReasons): Promise<void> {
    const entry = this.#guilds.get(guildId);
    if (entry?.meter !== meter) return;
    await entry.session.speakLast(this.#spoken.line(guildId, entry.settings, budgetSpent(reason)), LAST_LINE_MAX_MS);
    if (this.#guilds.get(guildId) !== entry || !(await this.leave(guildId, { why: 'budget' }, false))) return;
    await this.#channel.post(guildId, entry.textChannelId, notice('voice.stopped', { channel: `<#${entry.voiceChannelId}>`, reason }));
  }

  /** Speaks a notice in the voice channel, if the bot is in one on that server, in the conversation's language. */
  announce(guildId: string, line: Notice): boolean {
    const entry = this.#guilds.get(guildId);
    if (!entry || entry.session.state !== 'live') return false;
    entry.session.announce(this.#spoken.line(guildId, entry.settings, line));
    return true;
  }

  /**
   * A graceful stop: each conversation says aloud that the bot restarts and will be back (heard, within
   * RESTART_LINE_MAX_MS), the text channel is told the same, and its record stays for `resume()` at the
   * next start. Without a store to keep it in, the conversation just ends.
   */
  async stopAll(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#idleTimer);
    await Promise.all(
      [...this.#guilds].map(async ([guildId, entry]) => {
        if (!entry.recorder) {
          await this.leave(guildId, { why: 'restarting' });
          return;
        }
        const restarting = this.#spoken.line(guildId, entry.settings, notice('voice.spoken.restarting'));
        await Promise.all([
          // Said of the restart itself: not a turn of the conversation the next start brings back.
          entry.session.speakLast(restarting, RESTART_LINE_MAX_MS, { aside: true }),
          this.#channel.post(guildId, entry.textChannelId, notice('voice.restarting', { channel: `<#${entry.voiceChannelId}>` })),
        ]);
        await this.#end(guildId, entry, 'the bot is restarting (coming back after it)', 'keep');
      }),
    );
  }

  /**
   * At start, once Discord is ready: brings back the conversations a restart or a crash interrupted, in
   * the guilds `owns` says this process holds (all without it). One whose voice channel nobody is in any
   * more is dropped; one that cannot be brought back is tried again a few times, then dropped, saying so in
   * its text channel. Resolves with how many came back.
   */
  async resume(owns?: (guildId: string) => boolean): Promise<number> {
    const records = this.#deps.conversations;
    if (!records) return 0;
    const interrupted: [string, ConversationRecord][] = [];
    for await (const [guildId, record] of records.entries()) if (!owns || owns(guildId)) interrupted.push([guildId, record]);
    const comeback = this.#comeback(records);
    const back = await Promise.all(interrupted.map(([guildId, record]) => bringBack(guildId, record, comeback)));
    return back.filter(Boolean).length;
  }

  /** What bringing a conversation back needs of the service: the server, the people in the channel, a join, a post. */
  #comeback(records: ConversationRecords): ComebackOptions {
    return {
      records,
      log: this.#deps.log,
      stopped: () => this.#stopped,
      guild: (guildId) => this.#deps.client.guilds.cache.get(guildId),
      peopleIn: (guild, channelId) => peopleIn(this.#deps.client, guild, channelId),
      rejoin: (guildId, record) =>
        this.#join({
          guildId,
          voiceChannelId: record.voiceChannelId,
          textChannelId: record.textChannelId,
          userId: record.userId,
          resumed: record,
        }),
      postGaveUp: async (guildId, { textChannelId, voiceChannelId }) => {
        await this.#channel.post(guildId, textChannelId, notice('voice.could-not-come-back', { channel: `<#${voiceChannelId}>` }));
      },
    };
  }

  /** Tools are declared when the server has not turned them off and the video part is wired. */
  #toolsOn(settings: VoiceSettings): boolean {
    return this.#deps.videoRequests !== undefined && settings.tools !== false;
  }

  /**
   * A line of the conversation: kept in its record with who spoke it (unless the bot said it aside: it
   * restarts, it is back) and posted in its transcript.
   */
  #transcriptLine(guildId: string, line: ConversationLine): void {
    const entry = this.#guilds.get(guildId);
    if (line.speaker === 'user') entry?.recorder?.turn({ speaker: 'user', text: line.text, members: [...line.members] });
    else if (!line.aside) entry?.recorder?.turn({ speaker: 'bot', text: line.text, members: [] });
    if (!entry?.settings.transcripts) return;
    const posting = this.#postLine(guildId, entry, line);
    entry.posting.add(posting);
    void posting.finally(() => entry.posting.delete(posting));
  }

  /** Posts a line in the transcript, and remembers which messages hold whose words (see MemberForgotten). */
  async #postLine(guildId: string, entry: GuildVoice, line: ConversationLine): Promise<void> {
    const messageIds = await entry.transcript.postLine(line);
    const threadId = entry.transcript.threadId;
    const lines = this.#deps.transcriptLines;
    if (!lines || threadId === undefined || messageIds.length === 0) return;
    const whose: Pick<IndexedLine, 'kind' | 'members' | 'answered'> =
      line.speaker === 'user'
        ? { kind: 'turn', members: [...line.members], answered: line.answered ? 'yes' : 'no' }
        : { kind: 'answer', members: [...(line.answering ?? [])], answered: 'none' };
    if (whose.members.length === 0) return;
    try {
      await rememberLine(lines, guildId, { threadId, messageIds, ...whose });
    } catch (error) {
      this.#deps.log.warn('could not remember whose words a transcript line holds', { guild: guildId, error });
    }
  }

  /**
   * Forgets a member in the server (they asked, or left it): their turns and the bot's answers to them go
   * from the conversation's record (live, or kept for a restart), from the live realtime session's context
   * and what the next session would be given, and from the transcripts. What was removed.
   */
  async forgetMember(guildId: string, userId: string): Promise<MemberForgotten> {
    const entry = this.#guilds.get(guildId);
    const log = this.#deps.log.child({ guild: guildId });
    let turns = 0;
    if (entry) {
      await Promise.all(entry.posting);
      const reconfigure = entry.realtime.forget(userId);
      const items = entry.session.forgetMember(userId, { reconfigure });
      turns = entry.recorder?.forget(userId) ?? 0;
      log.info('forgot a member in the live voice conversation', { turns, items, instructions: reconfigure });
    } else if (this.#deps.conversations) {
      turns = await forgetInStoredConversation(this.#deps.conversations, guildId, userId, Date.now());
    }
    const lines = this.#deps.transcriptLines;
    const transcripts = lines
      ? await forgetInTranscripts(userId, {
          outbox: this.#deps.outbox,
          lines,
          guildId,
          word: (told) => this.#channel.word(guildId, told),
          memberName: async (other) => {
            const guild = this.#deps.client.guilds.cache.get(guildId);
            return guild && memberName(guild, other);
          },
          log,
        })
      : { deleted: 0, edited: 0 };
    log.info('forgot a member', { turns, ...transcripts });
    return { turns, ...transcripts };
  }

  #onVoiceState(before: VoiceState, after: VoiceState): void {
    const guildId = after.guild.id;
    const entry = this.#guilds.get(guildId);
    if (!entry) return;
    if (after.id === this.#deps.client.user?.id) {
      // Someone disconnected the bot (Discord says so before the voice socket closes), or moved it.
      if (after.channelId === null) {
        void this.leave(guildId, { why: 'disconnected' });
        return;
      }
      if (entry.voiceChannelId !== after.channelId) entry.recorder?.change({ voiceChannelId: after.channelId });
      entry.voiceChannelId = after.channelId;
    } else if (before.channelId === entry.voiceChannelId && after.channelId !== entry.voiceChannelId) {
      entry.session.forgetUser(after.id);
      entry.hearing.forget(after.id);
    } else if (after.channelId === entry.voiceChannelId && before.channelId !== entry.voiceChannelId) {
      // Read before they can be heard: until it answers, they are not.
      void entry.hearing.load([after.id]);
    }
    const people = peopleIn(this.#deps.client, after.guild, entry.voiceChannelId);
    if (people === 0) {
      void this.leave(guildId, { why: 'empty' });
      return;
    }
    entry.session.answerOnlyWhenNamed(answersOnlyWhenNamed(entry.settings.respond, people));
  }

  #leaveIdle(): void {
    const now = this.#now();
    for (const [guildId, entry] of this.#guilds) {
      entry.recorder?.refresh(Date.now());
      if (!entry.session.speaking && now - entry.activity.last > entry.settings.idleMinutes * 60_000)
        void this.leave(guildId, { why: 'idle', minutes: entry.settings.idleMinutes });
    }
  }
}
