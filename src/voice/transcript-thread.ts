import { MESSAGE_LIMITS } from '../discord/message-limits.ts';
import { splitText } from '../lib/text.ts';
import { DISCORD_ERRORS, isDiscordError, type DiscordOutbox } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import { notice, type Notice } from '../wording/notice.ts';

// A conversation's transcript: a thread of the text channel, opened at the first line from a message
// that names the voice channel, one post per line. A conversation brought back goes on in its thread.

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
  /** The thread was opened: the conversation's record keeps it. */
  onOpened(threadId: string): void;
  /** The bot may not open a thread: transcripts are off for this conversation. */
  onRefused(): void;
  /** Posts in the text channel, logging a failure (that the transcript is off). */
  post(channelId: string, told: Notice): Promise<unknown>;
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

  /** Posts a line; a member's line says whether the bot answered it (it answers only turns that name it, with several people in the channel). */
  async postLine(speaker: 'user' | 'bot', text: string, answered: boolean): Promise<void> {
    const { outbox, log, word } = this.#options;
    try {
      const threadId = this.#threadId ?? (await this.#open());
      if (threadId === undefined) return;
      const line = word(notice('voice.transcript.line', { speaker, text, answered: speaker === 'bot' ? 'bot' : answered ? 'yes' : 'no' }));
      // A long turn (minutes of speech) is posted whole, in as many messages as it takes.
      for (const piece of splitText(line, MESSAGE_LIMITS.content)) await outbox.say(threadId, piece);
    } catch (error) {
      log.warn('could not post a transcript line', { guild: this.#options.guildId, error });
    }
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
