import { ChannelType, PermissionFlagsBits, type Guild } from 'discord.js';

// What the bot reads of a server's channel in discord.js's cache when an admin picks one: what kind it is,
// and whether the bot may post there.

/** What kind of channel a member writes in: text (announcements too), a forum, or another (voice, a thread, a category). */
export function channelKind(type: ChannelType): 'text' | 'forum' | 'other' {
  if (type === ChannelType.GuildText || type === ChannelType.GuildAnnouncement) return 'text';
  return type === ChannelType.GuildForum ? 'forum' : 'other';
}

/** What the bot needs to post a message in a channel, by the names the catalogs give each. */
const POST_PERMISSIONS = [
  ['view', PermissionFlagsBits.ViewChannel],
  ['send', PermissionFlagsBits.SendMessages],
] as const;

export type PostPermission = (typeof POST_PERMISSIONS)[number][0];

/**
 * What the bot lacks to post in a channel, from the cached roles and overwrites. Unknown (the bot's member
 * or the channel not cached): nothing is reported missing, and a post that fails says so where it fails.
 */
export function missingPostPermissions(guild: Guild, channelId: string): PostPermission[] {
  const me = guild.members.me;
  const permissions = me ? guild.channels.cache.get(channelId)?.permissionsFor(me) : undefined;
  if (!permissions) return [];
  return POST_PERMISSIONS.filter(([, flag]) => !permissions.has(flag)).map(([name]) => name);
}
