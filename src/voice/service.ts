import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import { PermissionFlagsBits, type Client, type Guild, type GuildMember, type VoiceState } from 'discord.js';
import { DISCORD_ERRORS, isDiscordError, type DiscordOutbox } from '../discord/outbox.ts';
import { RealtimeClient, type RealtimeSessionConfig } from '../gateway/realtime/client.ts';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import { REALTIME_SESSION_MAX_MS } from '../gateway/spec.ts';
import type { Logger } from '../lib/log.ts';
import type { GatewayAccessResolver } from '../ports/gateway-access.ts';
import type { VoiceCaller, VoiceVideoRequests } from '../ports/voice-video.ts';
import type { VoiceSettings, VoiceSettingsSource } from '../ports/voice-settings.ts';
import type { VoiceSpending } from '../ports/voice-spend.ts';
import { budgetSpent, budgetWarning } from './budget-notices.ts';
import { ConversationMeter, type BudgetReasons } from './meter.ts';
import { addressesBot, answersOnlyWhenNamed } from './addressing.ts';
import { describeCallEncryption, type CallEncryption } from './call-encryption.ts';
import { VoiceAccessError, finalFailure } from './realtime-errors.ts';
import { VoiceSession } from './session.ts';
import type { VoiceFunctionCall, VoiceSessionMetrics } from './session-options.ts';
import { VOICE_TOOLS, runToolCall } from './tools.ts';
import { ConversationRecorder, type ConversationRecord, type ConversationRecords, type RecordedTurn } from './conversation-record.ts';
import type { Result } from '../lib/result.ts';
import { ENGLISH, formatList, languageName, resolveLocale, SUPPORTED_LOCALES, t, type Locale } from '../i18n/index.ts';
import type { BotMetrics } from '../lib/metrics.ts';

// Voice conversations, one per server: joining and leaving, telling the text channel, leaving empty or
// idle channels, transcripts in a thread, and spoken notices from the rest of the bot.

const JOIN_TIMEOUT_MS = 20_000;
/** After joining an encrypted call, how long the bot waits for its keys (and the privacy code) before it answers. */
const ENCRYPTION_JOIN_WAIT_MS = 3_000;
/** A disconnected voice connection gets this long to start over (a move or a resume) before the bot gives up. */
const DISCONNECTED_GRACE_MS = 5_000;
/** A connection that is not Ready (rejoining, resuming) gets this long to be Ready again. */
const RECOVERY_TIMEOUT_MS = JOIN_TIMEOUT_MS;

/** Why a conversation ended, worded in the server's language when the text channel is told. */
export type LeaveReason =
  | { why: 'asked'; by: string }
  | { why: 'moving' | 'connection-ended' | 'connection-lost' | 'disconnected' | 'model-unavailable' | 'budget' | 'restarting' | 'empty' }
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
/** Audio before the detected start of speech that server VAD keeps, so a turn's first syllable is not cut. */
const VAD_PREFIX_PADDING_MS = 300;
/** How often a conversation's session time is counted: a crash loses at most this much of it (the issue allows a minute). */
const METER_HEARTBEAT_MS = 30_000;
/** The longest the bot waits for its goodbye (why it leaves) to be heard before it leaves anyway. */
const LAST_LINE_MAX_MS = 15_000;
/**
 * The longest a graceful stop waits for "restarting" to be heard: an answer under way first, then the
 * line (about 3 s of speech). Well within the stop's 10 s, which also drains commands and closes the rest.
 */
const RESTART_LINE_MAX_MS = 6_000;
/** What the bot says of the restart itself, in every language, is not kept as a turn of the conversation: it would only crowd the real ones out. */
const RESTART_LINES: ReadonlySet<string> = new Set(
  SUPPORTED_LOCALES.flatMap((locale) => [t(locale, 'voice.spoken.restarting'), t(locale, 'voice.spoken.back')]),
);
/** How long a new realtime session gets to take the earlier turns as items before they go in its instructions instead. */
const RESTORE_TIMEOUT_MS = 5_000;
/** A conversation that cannot be brought back after a restart is tried this many times (across starts), then dropped. */
const MAX_REJOIN_ATTEMPTS = 3;
const REJOIN_BACKOFF: BackoffPolicy = { baseMs: 2_000, maxMs: 10_000, jitter: 0.25, spread: 'within-bounds' };

interface GuildVoice {
  session: VoiceSession;
  connection: VoiceConnection;
  voiceChannelId: string;
  textChannelId: string;
  transcriptThreadId: string | undefined;
  /** The channel message the transcript thread starts from, once posted. */
  transcriptAnchorId?: string;
  /** When someone last spoke or the bot last answered. */
  activity: { last: number };
  settings: VoiceSettings;
  /** Counts the conversation's session time and watches its budget; undefined without a spending port. */
  meter: ConversationMeter | undefined;
  /** Keeps the conversation's record in the store, to bring it back after a restart; undefined without a store. */
  recorder: ConversationRecorder | undefined;
}

/** What tells the model which language to answer in when the speaker's is unclear; the instruction itself stays English, which every model reads. */
function languageInstruction(locale: string): string {
  return `Answer in the language the speaker uses. If the speaker's language is unclear, answer in ${languageName(ENGLISH, locale)}.`;
}

/** The earlier turns in words, for a gateway that does not take them as conversation items. */
function earlierTurnsNote(turns: readonly RecordedTurn[]): string {
  const lines = turns.map((turn) => `${turn.speaker === 'user' ? 'Member' : 'You'}: ${turn.text}`);
  return `You were restarted in the middle of this conversation. What was said before, oldest first:\n${lines.join('\n')}`;
}

/** What the bot needs in a voice channel, by the name the catalogs give each (`voice.permission`). */
const VOICE_PERMISSIONS = [
  ['view', PermissionFlagsBits.ViewChannel],
  ['connect', PermissionFlagsBits.Connect],
  ['speak', PermissionFlagsBits.Speak],
] as const;

type VoicePermission = (typeof VOICE_PERMISSIONS)[number][0];

/**
 * What the bot lacks to talk in a voice channel, from the cached roles and overwrites. Discord does not
 * answer a join without Connect at all (the connection would just time out), and without Speak the bot
 * would listen but never be heard. Unknown (the bot's member not cached): nothing is reported missing.
 */
function missingVoicePermissions(guild: Guild, channelId: string): VoicePermission[] {
  const me = guild.members.me;
  const permissions = me ? guild.channels.cache.get(channelId)?.permissionsFor(me) : undefined;
  if (!permissions) return [];
  return VOICE_PERMISSIONS.filter(([, flag]) => !permissions.has(flag)).map(([name]) => name);
}

export type JoinResult = Result<{ alreadyThere: true } | { alreadyThere?: false; encryption: CallEncryption }>;

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
}

export class VoiceService {
  readonly #deps: VoiceServiceDeps;
  readonly #guilds = new Map<string, GuildVoice>();
  readonly #joining = new Set<string>();
  readonly #idleTimer: NodeJS.Timeout;
  readonly #now: () => number;
  /** stopAll() ran: nothing is brought back any more. */
  #stopped = false;

  constructor(deps: VoiceServiceDeps) {
    this.#deps = deps;
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
   * a refusal is worded for them, in `memberLocale`.
   */
  async join(guildId: string, voiceChannelId: string, textChannelId: string, userId: string, memberLocale?: Locale): Promise<JoinResult> {
    // A refusal goes to the member who asked, in their language (the server's when not told).
    return this.#join(guildId, voiceChannelId, textChannelId, userId, memberLocale ?? this.#locale(guildId), undefined);
  }

  /**
   * `resumed`: the record of a conversation a restart interrupted, brought back with its settings, its
   * transcript thread and its earlier turns in the new realtime session's context.
   */
  async #join(
    guildId: string,
    voiceChannelId: string,
    textChannelId: string,
    userId: string,
    locale: Locale,
    resumed: ConversationRecord | undefined,
  ): Promise<JoinResult> {
    const current = this.#guilds.get(guildId);
    if (current?.voiceChannelId === voiceChannelId) return { ok: true, alreadyThere: true };
    if (this.#joining.has(guildId)) return { ok: false, message: t(locale, 'voice.join.busy') };
    const guild = this.#deps.client.guilds.cache.get(guildId);
    if (!guild) return { ok: false, message: t(locale, 'voice.join.no-server') };
    const missing = missingVoicePermissions(guild, voiceChannelId);
    if (missing.length > 0) {
      return {
        ok: false,
        message: t(locale, 'voice.join.missing-permissions', {
          channel: `<#${voiceChannelId}>`,
          missing: formatList(
            locale,
            missing.map((permission) => `**${t(locale, 'voice.permission', { permission })}**`),
          ),
        }),
      };
    }
    const access = await this.#deps.access.resolveGatewayAccess(guildId, locale);
    if (!access.ok) return { ok: false, message: access.message };
    const spending = this.#deps.spending;
    const budget = await spending?.checkStart(guildId, userId, Date.now());
    if (budget && !budget.ok) return budget;

    this.#joining.add(guildId);
    try {
      if (current) await this.leave(guildId, { why: 'moving' }, false);
      const settings = resumed?.settings ?? (await this.#deps.settings.voiceSettings(guildId));
      const log = this.#deps.log.child({ guild: guildId });
      const connection = joinVoiceChannel({
        guildId,
        channelId: voiceChannelId,
        adapterCreator: guild.voiceAdapterCreator,
        selfDeaf: false,
        selfMute: false,
      });
      // Websocket, UDP and DAVE failures surface as 'error' events; unheard, one would end the process.
      // The connection's own state machine resumes or rejoins after them.
      connection.on('error', (error) => log.warn('voice connection error', { error }));
      try {
        await entersState(connection, VoiceConnectionStatus.Ready, JOIN_TIMEOUT_MS);
      } catch (error) {
        log.warn('the voice connection did not become ready', { channel: voiceChannelId, error });
        connection.destroy();
        return { ok: false, message: t(locale, 'voice.could-not-connect') };
      }
      const activity = { last: this.#now() };
      // The earlier turns of a conversation brought back: items of its first realtime session, or, when the
      // gateway does not take those, a note in the instructions of every session from then on.
      let toRestore = resumed && resumed.turns.length > 0 ? resumed.turns : undefined;
      let earlierTurns: string | undefined;
      // The model answers in the speaker's language; when that is unclear, in the one /voice settings chose, else the server's.
      const languageNote = languageInstruction(this.#spokenLocale(guildId, settings));
      const sessionConfig = (manual: boolean): RealtimeSessionConfig => ({
        voice: settings.voice,
        instructions: [settings.instructions, languageNote, earlierTurns].filter((part) => part !== undefined).join('\n\n'),
        turnDetection: manual
          ? null
          : {
              type: 'server_vad',
              threshold: settings.vadThreshold,
              silenceDurationMs: settings.silenceMs,
              prefixPaddingMs: VAD_PREFIX_PADDING_MS,
            },
        ...(this.#toolsOn(settings) ? { tools: VOICE_TOOLS } : {}),
      });
      const meter = spending && this.#meter(spending, guildId, userId, settings, log);
      const session = new VoiceSession({
        guildId,
        connection,
        settings,
        botUserId: this.#deps.client.user?.id ?? '',
        log,
        sessionLimitMs: this.#deps.sessionLimitMs ?? REALTIME_SESSION_MAX_MS,
        reconnect: REALTIME_RECONNECT,
        connectRealtime: async (manual) => {
          // Said where the conversation is posted: in the server's language.
          const latest = await this.#deps.access.resolveGatewayAccess(guildId, this.#locale(guildId));
          if (!latest.ok) throw new VoiceAccessError(latest.message);
          const client = await RealtimeClient.connect({
            wsBaseUrl: this.#deps.wsBaseUrl,
            apiKey: latest.apiKey,
            model: settings.model,
            session: sessionConfig(manual),
            log,
          });
          // Every session the conversation opens (the first, renewals, reconnects) costs until it closes.
          meter?.opened(client);
          if (toRestore) {
            const turns = toRestore;
            const taken = await client.addMessages(
              turns.map((turn) => ({ role: turn.speaker === 'user' ? 'user' : 'assistant', text: turn.text })),
              RESTORE_TIMEOUT_MS,
            );
            if (taken.ok) {
              log.info('the earlier turns of the conversation are in the new realtime session', { turns: turns.length });
            } else {
              log.warn('the gateway did not take the earlier turns as items; they go in the instructions', { reason: taken.message });
              earlierTurns = earlierTurnsNote(turns);
              client.updateSession(sessionConfig(manual));
            }
            toRestore = undefined;
          }
          return client;
        },
        sessionConfig,
        onlyWhenNamed: answersOnlyWhenNamed(settings.respond, this.#peopleIn(guild, voiceChannelId)),
        addressed: (transcript) => addressesBot(transcript, this.#wakeWords(guild, settings)),
        onFunctionCall: (call) => this.#functionCall(guild, textChannelId, call),
        onTranscript: (speaker, text, answered) => {
          if (!(speaker === 'bot' && RESTART_LINES.has(text))) this.#guilds.get(guildId)?.recorder?.turn({ speaker, text });
          void this.#transcript(guildId, speaker, text, answered);
        },
        onProblem: (message) => void this.#say(textChannelId, message),
        locale: this.#locale(guildId),
        onGiveUp: (reason) => void this.#stopBecause(guildId, reason),
        onActivity: () => {
          activity.last = this.#now();
        },
        metrics: this.#deps.metrics,
      });
      try {
        await session.start();
      } catch (error) {
        connection.destroy();
        await meter?.end();
        log.warn('could not open the realtime session', { error });
        return {
          ok: false,
          message: t(locale, 'voice.join.could-not-start', {
            why: finalFailure(error, locale) ?? t(locale, 'voice.join.model-unreachable'),
          }),
        };
      }
      this.#watch(guildId, connection);
      const records = this.#deps.conversations;
      const recorder =
        records &&
        new ConversationRecorder(
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
      this.#guilds.set(guildId, {
        session,
        connection,
        voiceChannelId,
        textChannelId,
        transcriptThreadId: resumed?.transcriptThreadId,
        activity,
        settings,
        meter,
        recorder,
      });
      // Kept from now on, so that a crash leaves it too; not waited for (a slow store must not hold up the join).
      void recorder?.write();
      this.#deps.metrics?.voiceConversations(1);
      session.on('state', (status) => {
        if (status === 'reconnecting') this.#deps.metrics?.realtimeReconnect();
      });
      const encryption = await session.encryptionSettled(ENCRYPTION_JOIN_WAIT_MS);
      // The channel's posts: the server's language, whoever asked.
      const channelLocale = this.#locale(guildId);
      if (resumed) session.announce(t(this.#spokenLocale(guildId, settings), 'voice.spoken.back'));
      const listening = t(channelLocale, resumed ? 'voice.back' : 'voice.joined', { channel: `<#${voiceChannelId}>` });
      await this.#say(textChannelId, `${listening}\n${describeCallEncryption(channelLocale, encryption)}`);
      // After the channel heard that the bot listens: a budget with under a minute left is warned of at once.
      void meter?.start();
      return { ok: true, encryption };
    } finally {
      this.#joining.delete(guildId);
    }
  }

  /**
   * Follows the voice connection once the conversation runs. Disconnected: a move or a resume starts
   * over within a few seconds; otherwise (kicked, channel deleted, voice server gone) the connection is
   * destroyed. Not Ready for long: destroyed too. Destroyed: the conversation ends, and the text channel
   * is told why.
   */
  #watch(guildId: string, connection: VoiceConnection): void {
    let reason: LeaveReason = { why: 'connection-ended' };
    let recovery: NodeJS.Timeout | undefined;
    let disconnected: NodeJS.Timeout | undefined;
    const giveUp = (why: LeaveReason) => {
      reason = why;
      if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
    };
    connection.on('stateChange', (_previous, next) => {
      clearTimeout(disconnected);
      if (next.status === VoiceConnectionStatus.Ready) {
        clearTimeout(recovery);
        recovery = undefined;
        return;
      }
      if (next.status === VoiceConnectionStatus.Destroyed) {
        clearTimeout(recovery);
        if (this.#guilds.get(guildId)?.connection === connection) void this.leave(guildId, reason);
        return;
      }
      recovery ??= setTimeout(() => giveUp({ why: 'connection-lost' }), RECOVERY_TIMEOUT_MS);
      if (next.status === VoiceConnectionStatus.Disconnected)
        disconnected = setTimeout(() => giveUp({ why: 'disconnected' }), DISCONNECTED_GRACE_MS);
    });
  }

  /** Ends the conversation for good (its record goes too), and says so in the text channel unless `announce` is false. */
  async leave(guildId: string, reason: LeaveReason, announce = true): Promise<boolean> {
    const entry = this.#guilds.get(guildId);
    if (!entry || !(await this.#end(guildId, entry, reason.why, 'remove'))) return false;
    if (announce)
      await this.#say(
        entry.textChannelId,
        t(this.#locale(guildId), 'voice.left', { channel: `<#${entry.voiceChannelId}>`, ...leaveValues(reason) }),
      );
    return true;
  }

  /** Leaves the channel; the record is removed, or kept for the next start (a restart). */
  async #end(guildId: string, entry: GuildVoice, reason: string, record: 'remove' | 'keep'): Promise<boolean> {
    if (this.#guilds.get(guildId) !== entry) return false;
    this.#guilds.delete(guildId);
    this.#deps.metrics?.voiceConversations(-1);
    entry.session.stop();
    if (entry.connection.state.status !== VoiceConnectionStatus.Destroyed) entry.connection.destroy();
    // Counted before the leave is answered: /usage right after it shows the whole conversation.
    await Promise.all([entry.meter?.end(), record === 'remove' ? entry.recorder?.remove() : entry.recorder?.keepForRestart()]);
    this.#deps.log.info('left voice', { guild: guildId, reason });
    return true;
  }

  /** The conversation cannot go on (see VoiceSession.onGiveUp): leave, and say why in full. */
  async #stopBecause(guildId: string, reason: string): Promise<void> {
    const entry = this.#guilds.get(guildId);
    if (!entry || !(await this.leave(guildId, { why: 'model-unavailable' }, false))) return;
    await this.#say(entry.textChannelId, t(this.#locale(guildId), 'voice.stopped', { channel: `<#${entry.voiceChannelId}>`, reason }));
  }

  #meter(spending: VoiceSpending, guildId: string, userId: string, settings: VoiceSettings, log: Logger): ConversationMeter {
    const spokenLocale = this.#spokenLocale(guildId, settings);
    const meter: ConversationMeter = new ConversationMeter({
      spending,
      guildId,
      userId,
      model: settings.model,
      spokenLocale,
      heartbeatMs: this.#deps.meterHeartbeatMs ?? METER_HEARTBEAT_MS,
      log,
      onWarning: ({ msLeft, reason, spokenReason }) => {
        const entry = this.#guilds.get(guildId);
        if (entry?.meter !== meter) return;
        const notice = budgetWarning(this.#locale(guildId), msLeft, reason, Date.now(), { locale: spokenLocale, reason: spokenReason });
        entry.session.announce(notice.spoken);
        void this.#say(entry.textChannelId, notice.text);
      },
      onSpent: (reasons) => void this.#budgetSpent(guildId, meter, reasons),
    });
    return meter;
  }

  /** A budget ran out: say why, aloud (heard before the bot goes) and in the text channel, then leave. */
  async #budgetSpent(guildId: string, meter: ConversationMeter, { reason, spokenReason }: BudgetReasons): Promise<void> {
    const entry = this.#guilds.get(guildId);
    if (entry?.meter !== meter) return;
    const locale = this.#locale(guildId);
    const notice = budgetSpent(locale, reason, Date.now(), { locale: this.#spokenLocale(guildId, entry.settings), reason: spokenReason });
    await entry.session.speakLast(notice.spoken, LAST_LINE_MAX_MS);
    if (this.#guilds.get(guildId) !== entry || !(await this.leave(guildId, { why: 'budget' }, false))) return;
    await this.#say(entry.textChannelId, t(locale, 'voice.stopped', { channel: `<#${entry.voiceChannelId}>`, reason: notice.text }));
  }

  /** Speaks a notice in the voice channel, if the bot is in one on that server: `words` in the conversation's language. */
  announce(guildId: string, words: (locale: Locale) => string): boolean {
    const entry = this.#guilds.get(guildId);
    if (!entry || entry.session.state !== 'live') return false;
    entry.session.announce(words(this.#spokenLocale(guildId, entry.settings)));
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
        const locale = this.#locale(guildId);
        await Promise.all([
          entry.session.speakLast(t(this.#spokenLocale(guildId, entry.settings), 'voice.spoken.restarting'), RESTART_LINE_MAX_MS),
          this.#say(entry.textChannelId, t(locale, 'voice.restarting', { channel: `<#${entry.voiceChannelId}>` })),
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
    const back = await Promise.all(interrupted.map(([guildId, record]) => this.#comeBack(records, guildId, record)));
    return back.filter(Boolean).length;
  }

  async #comeBack(records: ConversationRecords, guildId: string, record: ConversationRecord): Promise<boolean> {
    const log = this.#deps.log.child({ guild: guildId });
    for (let attempt = record.rejoinAttempts; !this.#stopped; attempt++) {
      const guild = this.#deps.client.guilds.cache.get(guildId);
      if (guild && this.#peopleIn(guild, record.voiceChannelId) === 0) {
        log.info('not rejoining voice after the restart: nobody is in the channel any more', { channel: record.voiceChannelId });
        await this.#dropRecord(records, guildId, log);
        return false;
      }
      if (attempt >= MAX_REJOIN_ATTEMPTS) {
        log.warn('giving up on rejoining voice after the restart', { channel: record.voiceChannelId, attempts: attempt });
        await this.#dropRecord(records, guildId, log);
        await this.#say(
          record.textChannelId,
          t(this.#locale(guildId), 'voice.could-not-come-back', { channel: `<#${record.voiceChannelId}>` }),
        );
        return false;
      }
      // Counted before it is tried: a start that dies while rejoining counts too.
      try {
        await records.update(guildId, (current) => current && { ...current, rejoinAttempts: attempt + 1 });
      } catch (error) {
        log.warn('could not count an attempt to rejoin voice', { error });
      }
      const joined = guild
        ? await this.#join(guildId, record.voiceChannelId, record.textChannelId, record.userId, this.#locale(guildId), record)
        : { ok: false as const, message: 'the server is not available' };
      if (joined.ok) {
        log.info('rejoined voice after the restart', {
          channel: record.voiceChannelId,
          turns: record.turns.length,
          restarting: record.restarting,
        });
        return true;
      }
      log.warn('could not rejoin voice after the restart', {
        channel: record.voiceChannelId,
        attempt: attempt + 1,
        reason: joined.message,
      });
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt - record.rejoinAttempts, REJOIN_BACKOFF)).unref());
    }
    return false;
  }

  async #dropRecord(records: ConversationRecords, guildId: string, log: Logger): Promise<void> {
    try {
      await records.delete(guildId);
    } catch (error) {
      log.warn("could not drop the voice conversation's record", { error });
    }
  }

  /** The server's language (its Community setting): what the bot posts in its channels is in it. */
  #locale(guildId: string): Locale {
    return resolveLocale(undefined, this.#deps.client.guilds.cache.get(guildId)?.preferredLocale, 'channel');
  }

  /**
   * The conversation's language: what the bot says aloud in it, the language the model is told to fall back
   * to (`/voice settings language`, else the server's).
   */
  #spokenLocale(guildId: string, settings: Pick<VoiceSettings, 'language'>): Locale {
    // Without a language of its own, resolveLocale falls back to the server's (a supported locale already).
    return resolveLocale(settings.language, this.#locale(guildId), 'member');
  }

  async #say(channelId: string, content: string): Promise<string | undefined> {
    try {
      return await this.#deps.outbox.say(channelId, content);
    } catch (error) {
      this.#deps.log.warn('could not post in a text channel', { channel: channelId, error });
      return undefined;
    }
  }

  /** Tools are declared when the server has not turned them off and the video part is wired. */
  #toolsOn(settings: VoiceSettings): boolean {
    return this.#deps.videoRequests !== undefined && settings.tools !== false;
  }

  /** What counts as the bot's name: the server's wake words, else its display name there. */
  #wakeWords(guild: Guild, settings: VoiceSettings): string[] {
    if (settings.wakeWords.length > 0) return settings.wakeWords;
    const name = guild.members.me?.displayName ?? this.#deps.client.user?.username;
    return name === undefined ? [] : [name];
  }

  /** A tool call runs as the member who spoke the turn, with their roles and permissions. */
  async #functionCall(guild: Guild, textChannelId: string, call: VoiceFunctionCall): Promise<string> {
    const requests = this.#deps.videoRequests;
    if (!requests) return JSON.stringify({ status: 'not_done', message: 'No tools are available here.' });
    let caller: VoiceCaller | undefined;
    if (call.speakerId !== undefined) {
      let member: GuildMember | undefined;
      try {
        member = guild.members.cache.get(call.speakerId) ?? (await guild.members.fetch(call.speakerId));
      } catch (error) {
        this.#deps.log.warn('could not look up the member who spoke a turn with a tool call', {
          guild: guild.id,
          user: call.speakerId,
          error,
        });
      }
      if (member) {
        caller = {
          guildId: guild.id,
          channelId: textChannelId,
          userId: member.id,
          roleIds: member.roles.cache.filter((role) => role.id !== guild.id).map((role) => role.id),
          isServerManager: member.permissions.has(PermissionFlagsBits.ManageGuild),
        };
      }
    }
    return runToolCall(requests, caller, call.name, call.arguments);
  }

  async #transcript(guildId: string, speaker: 'user' | 'bot', text: string, answered: boolean): Promise<void> {
    const entry = this.#guilds.get(guildId);
    if (!entry?.settings.transcripts) return;
    const locale = this.#locale(guildId);
    try {
      if (!entry.transcriptThreadId) {
        // Posted once: a thread that cannot be opened must not leave one anchor per line in the channel.
        entry.transcriptAnchorId ??= await this.#deps.outbox.say(
          entry.textChannelId,
          t(locale, 'voice.transcript.header', { channel: `<#${entry.voiceChannelId}>` }),
        );
        try {
          entry.transcriptThreadId = await this.#deps.outbox.startThread(
            entry.textChannelId,
            entry.transcriptAnchorId,
            t(locale, 'voice.transcript.thread'),
          );
          entry.recorder?.change({ transcriptThreadId: entry.transcriptThreadId });
        } catch (error) {
          if (!isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) throw error;
          entry.settings = { ...entry.settings, transcripts: false };
          entry.recorder?.change({ settings: entry.settings });
          this.#deps.log.warn('may not open a transcript thread; no transcript for this conversation', {
            guild: guildId,
            channel: entry.textChannelId,
            error,
          });
          await this.#say(entry.textChannelId, t(locale, 'voice.transcript.no-thread'));
          return;
        }
      }
      // A member's line says whether the bot answered it (it answers only turns that name it, with several people in the channel).
      await this.#deps.outbox.say(
        entry.transcriptThreadId,
        t(locale, 'voice.transcript.line', { speaker, text, answered: speaker === 'bot' ? 'bot' : answered ? 'yes' : 'no' }),
      );
    } catch (error) {
      this.#deps.log.warn('could not post a transcript line', { guild: guildId, error });
    }
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
    }
    const people = this.#peopleIn(after.guild, entry.voiceChannelId);
    if (people === 0) {
      void this.leave(guildId, { why: 'empty' });
      return;
    }
    entry.session.answerOnlyWhenNamed(answersOnlyWhenNamed(entry.settings.respond, people));
  }

  /**
   * People in a voice channel, from the voice states: the member cache is not complete (without the
   * members intent, GUILD_CREATE lists only some members, and a voice state's member is optional).
   */
  #peopleIn(guild: Guild, channelId: string): number {
    const botId = this.#deps.client.user?.id;
    const isBot = (state: VoiceState) => state.member?.user.bot ?? this.#deps.client.users.cache.get(state.id)?.bot ?? false;
    return guild.voiceStates.cache.filter((state) => state.channelId === channelId && state.id !== botId && !isBot(state)).size;
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
