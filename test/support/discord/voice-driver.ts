// Driver calls for voice situations the stand-in's own API does not stage (yet): a moderator
// disconnecting the bot, and a user the bot knows only from their voice state.

import type { DiscordStandIn, User } from './index.ts';

/**
 * What Discord does when a moderator disconnects the bot from voice: the bot's voice state leaves the
 * channel (VOICE_STATE_UPDATE with channel_id null) and the voice server closes the bot's socket with
 * 4014. (A minimal version until the stand-in offers `disconnectBotFromVoice` itself.)
 */
export function disconnectBotFromVoice(discord: DiscordStandIn, guildId: string): void {
  discord.leaveVoice(discord.state.botUser, guildId);
  discord.voice.botLeft(guildId);
}

/**
 * A user the bot has no member data for: not among the guild's members the stand-in lists in
 * GUILD_CREATE, and voice states without `member`. Real Discord does the same to a bot without the
 * members intent (GUILD_CREATE lists only a few members; a voice state's `member` is optional).
 */
export function createVoiceOnlyUser(discord: DiscordStandIn, name?: string): User {
  return discord.createUser({ name });
}
