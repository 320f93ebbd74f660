import { escapeMarkdown } from 'discord.js';
import { MESSAGE_LIMITS } from '../discord/message-limits.ts';
import { splitText } from '../lib/text.ts';
import { DISCORD_ERRORS, isDiscordError, type DiscordOutbox } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import { notice, type Notice, type Phrase } from '../wording/notice.ts';
import type { ConversationLine } from './session-options.ts';

// A conversation's transcript: a thread of the text channel, opened at the first line from a message
// that names the voice channel, one post per line. A conversation brought back goes on in its thread.
// Each post names whose words it holds: the members who spoke the turn (display name and a mention,
// which pings nobody: the outbox allows no mentions), or the bot by its name. A line too long for one
// message is posted in several, each named so: every message of the bot in the thread says by its
// mentions which members' words it carries, which is how they can be found again.

/**
 * A line's pieces hold at least this much of its text, however long its label (a turn of many members
 * with long names): the outbox splits a message that still runs over.
 */
const MIN_PIECE_CHARS = 500;

export interface TranscriptThreadOptions {
  outbox: Pick<DiscordOutbox, 'say' | 'startThread'>;
  log: Logger;
  guildId: string;
  textChannelId: string;
  /** The thread of a conversation brought back after a restart. */
  threadId: string | undefined;
  /** A notice in the server's language, which the transcript is posted in. */
  word: (told: Notice) => string;
  /** The voice channel the first message names (the bot may have been moved since the conversation began). */
  voiceChannelId(): string;
  /** A member's name on the server (nickname, else global name, else username); undefined when it cannot be looked up. */
  memberName(userId: string): Promise<string | undefined>;
  /** The bot's name on the server, its own lines' label. */
  botName(): string;
  /** The thread was opened: the conversation's record keeps it. */
  onOpened(threadId: string): void;
  /** The bot may not open a thread: transcripts are off for this conversation. */
  onRefused(): void;
  /** Posts in the text channel, logging a failure (that the transcript is off). */
  post(channelId: string, told: Notice): Promise<unknown>;
}

/** The members who spoke a line, each by name and mention (most heard first); "Someone" for none. */
export async function membersLabel(
  members: readonly string[],
  memberName: (userId: string) => Promise<string | undefined>,
): Promise<Phrase> {
  if (members.length === 0) return notice('voice.transcript.someone');
  const names = await Promise.all(members.map((userId) => memberName(userId)));
  const items = members.map((userId, index) => {
    const name = names[index];
    // A member whose name cannot be looked up is still named by their mention.
    return name === undefined ? `<@${userId}>` : notice('voice.transcript.member', { name: escapeMarkdown(name), mention: `<@${userId}>` });
  });
  return { phrase: 'list', items };
}

export class TranscriptThread {
  readonly #options: TranscriptThreadOptions;
  /** The channel message the thread starts from, once posted. */
  #anchorId: string | undefined;
  #threadId: string | undefined;

  constructor(options: TranscriptThreadOptions) {
    this.#options = options;
    this.#threadId = options.threadId;
  }

  get threadId(): string | undefined {
    return this.#threadId;
  }

  /**
   * Posts a line, named by who spoke it; a member's line says whether the bot answered it (it answers only
   * turns that name it, with several people in the channel). Resolves with the ids of the messages posted
   * (none when the line could not be).
   */
  async postLine(line: ConversationLine): Promise<string[]> {
    const { outbox, log, word } = this.#options;
    const posted: string[] = [];
    try {
      const threadId = this.#threadId ?? (await this.#open());
      if (threadId === undefined) return posted;
      const speaker = await this.#label(line);
      const answered = line.speaker === 'bot' ? 'none' : line.answered ? 'yes' : 'no';
      const worded = (text: string, last: boolean) =>
        word(notice('voice.transcript.line', { speaker, text, answered: last ? answered : 'none' }));
      // A long turn (minutes of speech) is posted whole, in as many messages as it takes, each named.
      const room = MESSAGE_LIMITS.content - worded('', true).length;
      const pieces = splitText(line.text, Math.max(room, MIN_PIECE_CHARS));
      for (const [index, piece] of pieces.entries()) {
        posted.push(await outbox.say(threadId, worded(piece.trimEnd(), index === pieces.length - 1)));
      }
    } catch (error) {
      log.warn('could not post a transcript line', { guild: this.#options.guildId, error });
    }
    return posted;
  }

  /** Who spoke the line: each member by name and mention, most heard first, or the bot by its name. */
  async #label(line: ConversationLine): Promise<Phrase> {
    if (line.speaker === 'bot') return notice('voice.transcript.bot', { name: escapeMarkdown(this.#options.botName()) });
    return membersLabel(line.members, (userId) => this.#options.memberName(userId));
  }

  /** Opens the thread; undefined when the bot may not (then transcripts are off, and the channel is told). */
  async #open(): Promise<string | undefined> {
    const { outbox, log, textChannelId, word } = this.#options;
    // Posted once: a thread that cannot be opened must not leave one anchor per line in the channel.
    this.#anchorId ??= await outbox.say(
      textChannelId,
      word(notice('voice.transcript.header', { channel: `<#${this.#options.voiceChannelId()}>` })),
    );
    try {
      this.#threadId = await outbox.startThread(textChannelId, this.#anchorId, word(notice('voice.transcript.thread')));
      this.#options.onOpened(this.#threadId);
      return this.#threadId;
    } catch (error) {
      if (!isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) throw error;
      this.#options.onRefused();
      log.warn('may not open a transcript thread; no transcript for this conversation', {
        guild: this.#options.guildId,
        channel: textChannelId,
        error,
      });
      await this.#options.post(textChannelId, notice('voice.transcript.no-thread'));
      return undefined;
    }
  }
}
