// Who asked, where, and how the bot can still answer them: what a command hands the video part about
// the interaction it is answering.

/** Discord's upload limit in a channel without boosts: for an interaction that does not say its channel's, or a request without one. */
export const DEFAULT_ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024;

import type { UserInstallPlace } from './user-install.ts';

export interface InteractionContext {
  /**
   * The server whose key, settings and limits the request counts under; for a use through the member's own
   * install of the app, their scope (`userInstallScope()`), as the settings and the task record take it.
   */
  guildId: string;
  /**
   * Set for a use through the member's own install where the bot is not in the channel: the card goes
   * through the interaction, and a video done after its token ends, to the member's DMs.
   */
  userInstall?: UserInstallPlace;
  channelId: string;
  userId: string;
  applicationId: string;
  interactionToken: string;
  /**
   * When this process received the interaction (Date.now()): its token expires 15 minutes from about
   * then. Not the id's snowflake time, which another clock wrote.
   */
  interactionReceivedAt: number;
  /** The largest file the bot may upload in this channel (Discord's `attachment_size_limit`). */
  attachmentSizeLimit: number;
  /** The member's Discord language (`interaction.locale`): what only they read is worded in it; unset: English. */
  locale?: string;
  /**
   * The server's Discord language (`interaction.guild_locale`; for a video asked for by voice, the server's
   * preferred locale): what the whole channel reads, the video's card, is worded in it; unset: English.
   */
  guildLocale?: string | null;
  /**
   * A request that came without an interaction (asked for by voice): the channel message that is its
   * card. The card is then edited as that message (`interactionToken` is empty).
   */
  cardMessageId?: string;
}

/** An interaction's token answers for this long after Discord made it. */
export const INTERACTION_TOKEN_LIFETIME_MS = 15 * 60_000;
/** Leave a margin: the interaction reached the bot a little after Discord made it, and an edit sent at 14:59 may arrive after 15:00. */
const TOKEN_SAFETY_MARGIN_MS = 30_000;

/** Until when the bot may still answer or edit through the interaction's token. */
export function tokenUsableUntil(context: Pick<InteractionContext, 'interactionReceivedAt'>): number {
  return context.interactionReceivedAt + INTERACTION_TOKEN_LIFETIME_MS - TOKEN_SAFETY_MARGIN_MS;
}
