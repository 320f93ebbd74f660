import { ButtonStyle, ComponentType, type Client } from 'discord.js';
import type { DiscordOutbox } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import { resolveLocale, tChosenKey, type Locale, type MessageKey } from '../i18n/index.ts';
import { word, type Notice } from '../wording/notice.ts';

// What the bot posts about a conversation (that it listens, left, stopped, restarts; a budget warning; a
// problem; the transcript's lines), worded in the server's language: the parts of the voice service tell
// it as notices, this renderer words them.

/** How the channel shows a notice of these kinds: a mark in front. */
const MARK_OF: Partial<Record<MessageKey, string>> = { 'voice.budget.warning': '⏳ ' };

/** A button under a posted line: its custom id, and the catalog key of its label. */
export interface LineButton {
  customId: string;
  label: MessageKey;
}

export interface ChannelLinesOptions {
  /** The servers the bot is in, whose preferred language (their Community setting) the lines are worded in. */
  client: Client;
  outbox: DiscordOutbox;
  log: Logger;
}

export class ChannelLines {
  readonly #options: ChannelLinesOptions;

  constructor(options: ChannelLinesOptions) {
    this.#options = options;
  }

  /** The server's language (its Community setting): what the bot posts in its channels is in it. */
  serverLanguage(guildId: string): Locale {
    return resolveLocale(undefined, this.#options.client.guilds.cache.get(guildId)?.preferredLocale, 'channel');
  }

  /** Notices as the server's members read them, one a line. */
  word(guildId: string, ...lines: readonly Notice[]): string {
    const locale = this.serverLanguage(guildId);
    return lines.map((line) => `${MARK_OF[line.key] ?? ''}${word(locale, line)}`).join('\n');
  }

  /** Posts notices, one a line, in a text channel of the server; a failure is logged, never thrown. */
  async post(guildId: string, channelId: string, ...lines: readonly Notice[]): Promise<string | undefined> {
    return this.postWithButtons(guildId, channelId, lines, []);
  }

  /** Posts notices, one a line, with buttons under them labelled in the server's language; a failure is logged, never thrown. */
  async postWithButtons(
    guildId: string,
    channelId: string,
    lines: readonly Notice[],
    buttons: readonly LineButton[],
  ): Promise<string | undefined> {
    const locale = this.serverLanguage(guildId);
    const components =
      buttons.length === 0
        ? undefined
        : [
            {
              type: ComponentType.ActionRow as const,
              components: buttons.map(({ customId, label }) => ({
                type: ComponentType.Button as const,
                style: ButtonStyle.Primary as const,
                custom_id: customId,
                label: tChosenKey(locale, label),
              })),
            },
          ];
    try {
      return await this.#options.outbox.say(channelId, this.word(guildId, ...lines), components ? { components } : {});
    } catch (error) {
      this.#options.log.warn('could not post in a text channel', { channel: channelId, error });
      return undefined;
    }
  }
}
