import { PermissionFlagsBits, type Client, type Guild, type VoiceState } from 'discord.js';
import type { VoiceSettings } from '../ports/voice-settings.ts';

// What the bot reads of a voice channel in discord.js's cache: what it may do there, who is in it, and
// what counts as its name there, and the names of the members it hears.

/** What the bot needs in a voice channel, by the name the catalogs give each (`voice.permission`). */
const VOICE_PERMISSIONS = [
  ['view', PermissionFlagsBits.ViewChannel],
  ['connect', PermissionFlagsBits.Connect],
  ['speak', PermissionFlagsBits.Speak],
] as const;

export type VoicePermission = (typeof VOICE_PERMISSIONS)[number][0];

/**
 * What the bot lacks to talk in a voice channel, from the cached roles and overwrites. Discord does not
 * answer a join without Connect at all (the connection would just time out), and without Speak the bot
 * would listen but never be heard. Unknown (the bot's member not cached): nothing is reported missing.
 */
export function missingVoicePermissions(guild: Guild, channelId: string): VoicePermission[] {
  const me = guild.members.me;
  const permissions = me ? guild.channels.cache.get(channelId)?.permissionsFor(me) : undefined;
  if (!permissions) return [];
  return VOICE_PERMISSIONS.filter(([, flag]) => !permissions.has(flag)).map(([name]) => name);
}

/**
 * People in a voice channel, from the voice states: the member cache is not complete (without the
 * members intent, GUILD_CREATE lists only some members, and a voice state's member is optional).
 */
export function peopleIn(client: Client, guild: Guild, channelId: string): number {
  return peopleIdsIn(client, guild, channelId).length;
}

/** The user ids of the people in a voice channel (as `peopleIn` counts them). */
export function peopleIdsIn(client: Client, guild: Guild, channelId: string): string[] {
  const botId = client.user?.id;
  const isBot = (state: VoiceState) => state.member?.user.bot ?? client.users.cache.get(state.id)?.bot ?? false;
  return [...guild.voiceStates.cache.filter((state) => state.channelId === channelId && state.id !== botId && !isBot(state)).keys()];
}

/** The bot's display name on the server (its nickname there, else its own name); undefined before it logged in. */
export function botName(client: Client, guild: Guild): string | undefined {
  return guild.members.me?.displayName ?? client.user?.username;
}

/** What counts as the bot's name: the server's wake words, else its display name there. */
export function wakeWords(client: Client, guild: Guild, settings: VoiceSettings): string[] {
  if (settings.wakeWords.length > 0) return settings.wakeWords;
  const name = botName(client, guild);
  return name === undefined ? [] : [name];
}

/**
 * A member's display name on the server (nickname, else global name, else username): from the cache,
 * which holds whoever is in a voice channel (their voice state carries the member), else asked of
 * Discord. Undefined when it cannot be had (they left the server, Discord did not answer).
 */
export async function memberName(guild: Guild, userId: string): Promise<string | undefined> {
  const cached = guild.members.cache.get(userId);
  if (cached) return cached.displayName;
  try {
    return (await guild.members.fetch(userId)).displayName;
  } catch {
    return guild.client.users.cache.get(userId)?.displayName;
  }
}
