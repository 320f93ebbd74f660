import { Client, GatewayIntentBits, Options } from 'discord.js';

/**
 * Only the intents the bot needs, none privileged: GUILDS (servers, channels, roles, interactions)
 * and GUILD_VOICE_STATES (who is in which voice channel, and the voice connection handshake).
 */
const BOT_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates];

export function createDiscordClient(apiUrl: string | undefined): Client {
  return new Client({
    intents: BOT_INTENTS,
    rest: apiUrl ? { api: apiUrl } : {},
    // The bot reads no message history: keep the caches small.
    makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
  });
}
