// Driver calls for voice situations the stand-in's own API does not stage (yet).

import type { DiscordStandIn } from './index.ts';

/**
 * What Discord does when a moderator disconnects the bot from voice: the bot's voice state leaves the
 * channel (VOICE_STATE_UPDATE with channel_id null) and the voice server closes the bot's socket with
 * 4014. (A minimal version until the stand-in offers `disconnectBotFromVoice` itself.)
 */
export function disconnectBotFromVoice(discord: DiscordStandIn, guildId: string): void {
  discord.leaveVoice(discord.state.botUser, guildId);
  discord.voice.botLeft(guildId);
}
