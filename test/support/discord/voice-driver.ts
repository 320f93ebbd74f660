// Driver calls for voice situations the stand-in's own API does not stage: a user the bot knows only
// from their voice state.

import type { DiscordStandIn, User } from './index.ts';

/**
 * A user the bot has no member data for: not among the guild's members the stand-in lists in
 * GUILD_CREATE, and voice states without `member`. Real Discord does the same to a bot without the
 * members intent (GUILD_CREATE lists only a few members; a voice state's `member` is optional).
 */
export function createVoiceOnlyUser(discord: DiscordStandIn, name?: string): User {
  return discord.createUser({ name });
}
