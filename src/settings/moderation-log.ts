import { setTimeout as delay } from 'node:timers/promises';
import { escapeMarkdown } from 'discord.js';
import { DISCORD_ERRORS, isDiscordError } from '../discord/outbox.ts';
import { MESSAGE_LIMITS } from '../discord/message-limits.ts';
import { ENGLISH, type Locale } from '../i18n/index.ts';
import type { Logger } from '../lib/log.ts';
import { shorten, splitText } from '../lib/text.ts';
import type {
  LoggedJob,
  LoggedModeration,
  LoggedRefusal,
  LoggedVoiceEnd,
  LoggedVoiceStart,
  ModerationLogPort,
} from '../ports/moderation-log.ts';
import { isUserInstallScope } from '../ports/user-install.ts';
import { notice, word, type Notice } from '../wording/notice.ts';

// A server's moderation log (issue 36): one line for each job its members ask for, each refusal by a
// rule, a limit or a budget, each /config change and each voice conversation's start and end, posted in
// the channel `/config rules log_channel` names, in the server's language, members mentioned but never
// pinged. Lines are gathered per channel and posted together: a burst of jobs is a few messages, not
// one each (Discord allows a channel about 5 messages per 5 s). What a channel holds waiting is bounded;
// past it the oldest lines go, and the next message says how many. Nothing here throws into its caller:
// a post that fails is logged and its lines dropped, and a channel the bot cannot reach is logged once.

/** How long a channel's lines wait for others before they are posted. */
export const LOG_BATCH_MS = 2_000;
/** Lines a channel holds waiting, at most; past it the oldest are dropped. */
export const MAX_WAITING_LINES = 200;
/** The prompt of a job or a refusal is cut to this many characters. */
export const LOGGED_PROMPT_LENGTH = 200;
/** A /config change's description is cut to this many characters (a list of blocked words can be long). */
const LOGGED_CHANGE_LENGTH = 300;
/** What a line leaves of a message for the note of dropped lines written in front of it (about 110 characters in French). */
const NOTE_ROOM = 200;
/** Channels whose failure was logged and not yet followed by a post that worked; past it the oldest is forgotten. */
const MAX_UNREACHABLE_REMEMBERED = 1_000;

/**
 * The refusals the log records, by the start of their notices' keys: a server's rules (its roles, its
 * moderators' rules), its limits and its budgets, and a member's place in their key's line. A refusal
 * of a bad option or a missing file is the member's business, not the moderators'.
 */
export const LOGGED_REFUSALS: readonly string[] = [
  'access.',
  'rules.',
  'limits.',
  'budget.',
  'voice.budget.',
  'video.refusal.member-limit',
  // A prompt with a blocked word, typed or asked for again (Regenerate, Vary, a held video confirmed).
  'video.refusal.blocked-word',
  // A request by voice that a member who spoke it may not make: denied, or without the role.
  'video.voice.member-',
  'video.voice.blocked-word',
  // The provider's content moderation refusing a submission outright (a task it refuses later is logged as such when it ends).
  'gateway-error.moderated',
];

/** Whether a refusal is a rule's, a limit's or a budget's, which the log records. */
export function isLoggedRefusal(why: Notice): boolean {
  return LOGGED_REFUSALS.some((start) => why.key.startsWith(start));
}

export interface ModerationLogOptions {
  /** The server's log channel (`/config rules log_channel`); undefined: it keeps none. */
  logChannel(guildId: string): Promise<string | undefined>;
  /** Posts one message in a channel, pinging nobody (no user, no role, no @everyone). */
  post(channelId: string, content: string): Promise<unknown>;
  /** The server's language (its Community setting), which the lines are worded in; default English. */
  serverLocale?: (guildId: string) => Locale;
  log: Logger;
  /** How long lines wait for others; default LOG_BATCH_MS. */
  batchMs?: number;
  /** Lines a channel holds waiting; default MAX_WAITING_LINES. */
  maxWaitingLines?: number;
}

/** A channel's lines waiting to be posted. */
interface WaitingLines {
  lines: string[];
  /** Lines dropped since the last message, which the next one says. */
  dropped: number;
  /** The language of the note of dropped lines: the last line's server's. */
  locale: Locale;
  /** Until it fires, lines that fill less than a message wait for more. */
  timer: NodeJS.Timeout | undefined;
  /** The timer fired: what waits goes now, however little. */
  due: boolean;
  /** A message of this channel is being posted: the next waits for it (they arrive in order). */
  posting: boolean;
}

/** A member's text as one line of the log: on one line, its Markdown shown as typed, cut to `length`. */
export function loggedText(text: string, length: number): string {
  return escapeMarkdown(shorten(text.replace(/\s+/g, ' ').trim(), length));
}

/** The link to a job's card: its message when known, else its channel. */
export function cardLink(guildId: string, channelId: string, messageId: string | undefined): string {
  return messageId === undefined ? `<#${channelId}>` : `https://discord.com/channels/${guildId}/${channelId}/${messageId}`;
}

/**
 * The first message of `lines` (after the note of dropped lines, when there is one), at most `limit`
 * long, and how many lines it takes. A line is never longer than `limit` (they are split when queued).
 */
export function firstMessage(note: string | undefined, lines: readonly string[], limit: number): { content: string; taken: number } {
  let content = note ?? '';
  let taken = 0;
  for (const line of lines) {
    const next = content === '' ? line : `${content}\n${line}`;
    if (next.length > limit) break;
    content = next;
    taken++;
  }
  return { content, taken };
}

export class ModerationLog implements ModerationLogPort {
  readonly #options: ModerationLogOptions;
  readonly #waiting = new Map<string, WaitingLines>();
  /** Channels a failure was logged for (not yet followed by a post that worked): logged once. */
  readonly #unreachable = new Set<string>();
  /** Lines on their way to a queue (their channel being read): what flush() waits for too. */
  readonly #arriving = new Set<Promise<void>>();
  /** Channels being emptied, so flush() can wait for them. */
  readonly #sending = new Set<Promise<void>>();

  constructor(options: ModerationLogOptions) {
    this.#options = options;
  }

  job(job: LoggedJob): void {
    this.#add(job.guildId, (locale) =>
      word(
        locale,
        notice('moderation-log.job', {
          member: `<@${job.userId}>`,
          videos: job.videos,
          estimate: { phrase: 'estimate', usdTicks: job.estimateUsdTicks },
          prompt: loggedText(job.prompt, LOGGED_PROMPT_LENGTH),
          card: cardLink(job.guildId, job.channelId, job.messageId),
        }),
      ),
    );
  }

  refused(refusal: LoggedRefusal): void {
    if (!isLoggedRefusal(refusal.why)) return;
    const prompt = refusal.prompt?.trim() ? loggedText(refusal.prompt, LOGGED_PROMPT_LENGTH) : '';
    this.#add(refusal.guildId, (locale) =>
      word(
        locale,
        notice('moderation-log.refused', {
          member: `<@${refusal.userId}>`,
          // ICU selectors take no hyphen.
          what: refusal.what.replaceAll('-', '_'),
          command: refusal.command ?? '',
          why: refusal.why,
          hasPrompt: prompt === '' ? 'no' : 'yes',
          prompt,
        }),
      ),
    );
  }

  moderated(moderation: LoggedModeration): void {
    this.#add(moderation.guildId, (locale) =>
      word(
        locale,
        notice('moderation-log.moderated', {
          member: `<@${moderation.userId}>`,
          outcome: moderation.outcome,
          charged: moderation.charged ? 'yes' : 'no',
          prompt: loggedText(moderation.prompt, LOGGED_PROMPT_LENGTH),
          card: cardLink(moderation.guildId, moderation.channelId, moderation.messageId),
        }),
      ),
    );
  }

  /** A /config change, as the settings' history records it (`change` is that record's words). */
  configChanged(change: { guildId: string; by: string; change: string }): void {
    this.#add(change.guildId, (locale) =>
      word(locale, notice('moderation-log.config', { member: `<@${change.by}>`, change: loggedText(change.change, LOGGED_CHANGE_LENGTH) })),
    );
  }

  voiceStarted(start: LoggedVoiceStart): void {
    this.#add(start.guildId, (locale) =>
      word(
        locale,
        notice('moderation-log.voice-started', {
          member: `<@${start.userId}>`,
          channel: `<#${start.voiceChannelId}>`,
          resumed: start.resumed ? 'yes' : 'no',
        }),
      ),
    );
  }

  voiceEnded(end: LoggedVoiceEnd): void {
    this.#add(end.guildId, (locale) =>
      word(
        locale,
        notice('moderation-log.voice-ended', {
          member: `<@${end.userId}>`,
          channel: `<#${end.voiceChannelId}>`,
          duration: { phrase: 'duration', seconds: Math.round(end.ms / 1000) },
          cost: { phrase: 'cost', usdTicks: end.usdTicks },
          restarting: end.restarting ? 'yes' : 'no',
        }),
      ),
    );
  }

  /**
   * Posts every line waiting now (a shutdown, or a test that wants them), and resolves when they are sent
   * or dropped, or after `withinMs` at the latest (a shutdown has a deadline; Discord may be slow).
   */
  async flush(withinMs = Infinity): Promise<void> {
    const flushed = (async () => {
      await Promise.allSettled([...this.#arriving]);
      for (const [channelId, waiting] of this.#waiting) {
        clearTimeout(waiting.timer);
        waiting.timer = undefined;
        waiting.due = true;
        this.#send(channelId, waiting);
      }
      while (this.#sending.size > 0) await Promise.allSettled([...this.#sending]);
    })();
    if (withinMs === Infinity) return flushed;
    await Promise.race([flushed, delay(withinMs, undefined, { ref: false })]);
  }

  /** Words a line for the server's log channel, if it has one, and queues it there; never throws. */
  #add(guildId: string, line: (locale: Locale) => string): void {
    // A member's own install of the app is no server's: there is no moderator's channel to tell.
    if (isUserInstallScope(guildId)) return;
    const arriving = this.#options
      .logChannel(guildId)
      .then((channelId) => {
        if (channelId === undefined) return;
        const locale = this.#options.serverLocale?.(guildId) ?? ENGLISH;
        this.#queue(channelId, locale, line(locale));
      })
      .catch((error: unknown) => this.#options.log.warn('could not write a line of a moderation log', { guild: guildId, error }));
    this.#arriving.add(arriving);
    void arriving.finally(() => this.#arriving.delete(arriving));
  }

  #queue(channelId: string, locale: Locale, line: string): void {
    let waiting = this.#waiting.get(channelId);
    if (!waiting) {
      waiting = { lines: [], dropped: 0, locale, timer: undefined, due: false, posting: false };
      this.#waiting.set(channelId, waiting);
    }
    waiting.locale = locale;
    waiting.lines.push(...splitText(line, MESSAGE_LIMITS.content - NOTE_ROOM));
    const over = waiting.lines.length - (this.#options.maxWaitingLines ?? MAX_WAITING_LINES);
    if (over > 0) {
      waiting.lines.splice(0, over);
      waiting.dropped += over;
    }
    if (!waiting.timer && !waiting.due) {
      const armed = waiting;
      armed.timer = setTimeout(() => {
        armed.timer = undefined;
        armed.due = true;
        this.#send(channelId, armed);
      }, this.#options.batchMs ?? LOG_BATCH_MS);
      armed.timer.unref();
    }
    this.#send(channelId, waiting);
  }

  /**
   * Posts the channel's next message when there is a full one, or anything once due; one at a time, each
   * post looking again when it is done (lines may have come meanwhile). What goes is decided here, at once,
   * so that a line arriving while a post is under way is never overlooked.
   */
  #send(channelId: string, waiting: WaitingLines): void {
    if (waiting.posting) return;
    const message = this.#nextMessage(waiting);
    if (!message) {
      if (waiting.lines.length === 0 && !waiting.timer && this.#waiting.get(channelId) === waiting) this.#waiting.delete(channelId);
      return;
    }
    waiting.posting = true;
    const sending = this.#post(channelId, message.content, message.taken).finally(() => {
      waiting.posting = false;
      this.#sending.delete(sending);
      this.#send(channelId, waiting);
    });
    this.#sending.add(sending);
  }

  /** The message to post now, its lines taken from those waiting; undefined while they fill less than one and are not due. */
  #nextMessage(waiting: WaitingLines): { content: string; taken: number } | undefined {
    const note = waiting.dropped > 0 ? word(waiting.locale, notice('moderation-log.dropped', { count: waiting.dropped })) : undefined;
    const message = firstMessage(note, waiting.lines, MESSAGE_LIMITS.content);
    const full = message.taken < waiting.lines.length;
    if (message.content === '' || (!full && !waiting.due)) return undefined;
    waiting.lines.splice(0, message.taken);
    waiting.dropped = 0;
    if (waiting.lines.length === 0) waiting.due = false;
    return message;
  }

  async #post(channelId: string, content: string, lines: number): Promise<void> {
    const { log } = this.#options;
    try {
      await this.#options.post(channelId, content);
      this.#unreachable.delete(channelId);
    } catch (error) {
      const gone = isDiscordError(error, DISCORD_ERRORS.unknownChannel, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions);
      if (!gone) {
        log.warn('could not post in a moderation log; its lines are dropped', { channel: channelId, lines, error });
        return;
      }
      if (this.#unreachable.has(channelId)) return;
      this.#unreachable.add(channelId);
      if (this.#unreachable.size > MAX_UNREACHABLE_REMEMBERED) this.#unreachable.delete(this.#unreachable.values().next().value!);
      log.warn('a moderation log channel is gone or the bot may not post there; its lines are dropped until it can', {
        channel: channelId,
        error,
      });
    }
  }
}
