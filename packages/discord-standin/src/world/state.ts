import { DEFAULT_LOCALE } from './locales.ts';
import { randomBytes } from 'node:crypto';
import { snowflake } from './snowflake.ts';
import { PrivilegedIntents } from './privileged-intents.ts';

// What the stand-in knows: guilds with their channels, roles and members, users, messages, commands.
// Shapes follow Discord's API objects, trimmed to what discord.js reads.

export const PERMISSIONS = {
  administrator: 1n << 3n,
  manageGuild: 1n << 5n,
  viewChannel: 1n << 10n,
  sendMessages: 1n << 11n,
  manageMessages: 1n << 13n,
  embedLinks: 1n << 14n,
  attachFiles: 1n << 15n,
  readMessageHistory: 1n << 16n,
  connect: 1n << 20n,
  speak: 1n << 21n,
  mentionEveryone: 1n << 17n,
  useExternalEmojis: 1n << 18n,
  useApplicationCommands: 1n << 31n,
  createPublicThreads: 1n << 35n,
  sendMessagesInThreads: 1n << 38n,
  sendPolls: 1n << 49n,
} as const;

/**
 * `app_permissions` where the app is there only through a user's install (README.md, "User installs"):
 * Discord gives ATTACH_FILES | EMBED_LINKS | MENTION_EVERYONE in (group) DMs between users, and adds
 * USE_EXTERNAL_EMOJIS in the bot's own DM; captured interactions also carry SEND_POLLS, and in a server
 * the bot is not in the same set as the bot's DM.
 */
export const USER_INSTALL_APP_PERMISSIONS = {
  privateChannel: PERMISSIONS.attachFiles | PERMISSIONS.embedLinks | PERMISSIONS.mentionEveryone | PERMISSIONS.sendPolls,
  botDm:
    PERMISSIONS.attachFiles | PERMISSIONS.embedLinks | PERMISSIONS.mentionEveryone | PERMISSIONS.useExternalEmojis | PERMISSIONS.sendPolls,
  guildWithoutBot:
    PERMISSIONS.attachFiles | PERMISSIONS.embedLinks | PERMISSIONS.mentionEveryone | PERMISSIONS.useExternalEmojis | PERMISSIONS.sendPolls,
} as const;

export const EVERYONE_PERMISSIONS =
  PERMISSIONS.viewChannel |
  PERMISSIONS.sendMessages |
  PERMISSIONS.embedLinks |
  PERMISSIONS.attachFiles |
  PERMISSIONS.readMessageHistory |
  PERMISSIONS.connect |
  PERMISSIONS.speak |
  PERMISSIONS.useApplicationCommands |
  PERMISSIONS.createPublicThreads |
  PERMISSIONS.sendMessagesInThreads;

export const DEFAULT_ATTACHMENT_LIMIT = 10 * 1024 * 1024;

export interface User {
  id: string;
  username: string;
  bot: boolean;
  /** The language the user picked in Discord (a Discord locale code): interactions carry it as `locale`. */
  locale: string;
}

export interface Role {
  id: string;
  name: string;
  permissions: bigint;
  position: number;
}

/** A channel's permission overwrite for a role (type 0) or a member (type 1). */
export interface PermissionOverwrite {
  id: string;
  type: 0 | 1;
  allow: bigint;
  deny: bigint;
}

export interface Channel {
  id: string;
  guildId: string;
  type: number;
  name: string;
  parentId?: string;
  permissionOverwrites?: PermissionOverwrite[];
}

/**
 * A DM (type 1, two users) or group DM (type 3) outside any server. The bot's DM with a user is a DM
 * whose recipients are the user and the bot; a private channel between users does not hold the bot.
 */
export interface PrivateChannel {
  id: string;
  type: 1 | 3;
  recipientIds: string[];
  name?: string;
}

export interface Member {
  userId: string;
  roleIds: string[];
  joinedAt: string;
}

export interface Guild {
  id: string;
  name: string;
  ownerId: string;
  attachmentSizeLimit: number;
  /** The server's language (Community settings): `preferred_locale`, and interactions' `guild_locale`. */
  preferredLocale: string;
  roles: Role[];
  channels: Channel[];
  members: Map<string, Member>;
  voiceStates: Map<string, { channelId: string; sessionId: string }>;
}

export interface StoredAttachment {
  id: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
  url: string;
}

/** One edit of a message as the bot sent it: what it changed, and the files it added. */
export interface MessageEdit {
  at: number;
  json: Readonly<Record<string, unknown>>;
  files: string[];
}

export interface Message {
  id: string;
  channelId: string;
  authorId: string;
  content: string;
  embeds: unknown[];
  components: unknown[];
  attachments: StoredAttachment[];
  flags: number;
  messageReference?: { message_id: string };
  /** The `allowed_mentions` the author sent with the message, as sent: who its mentions were allowed to ping. */
  allowedMentions?: Readonly<Record<string, unknown>>;
  nonce?: string | number;
  timestamp: string;
  editedTimestamp: string | null;
  webhookId?: string;
  interaction?: { id: string; type: number; name: string; userId: string; owners?: Readonly<Record<string, string>> };
  /** Every edit in order; the fields above show the message as it stands after the last one. */
  edits: MessageEdit[];
  deleted: boolean;
}

/** A file the bot uploaded, and the message it went out with. */
export interface Upload {
  channelId: string;
  messageId: string;
  attachment: StoredAttachment;
  at: number;
}

export function userObject(user: User): Record<string, unknown> {
  return { id: user.id, username: user.username, discriminator: '0', global_name: user.username, avatar: null, bot: user.bot, flags: 0 };
}

/** An attachment as Discord's API shows it, in a message or in an interaction's `resolved`. */
export function attachmentObject(attachment: StoredAttachment): Record<string, unknown> {
  return {
    id: attachment.id,
    filename: attachment.filename,
    size: attachment.bytes.length,
    url: attachment.url,
    proxy_url: attachment.url,
    content_type: attachment.contentType,
  };
}

export function memberObject(member: Member, user: User, permissions?: bigint): Record<string, unknown> {
  return {
    user: userObject(user),
    roles: member.roleIds,
    joined_at: member.joinedAt,
    nick: null,
    avatar: null,
    premium_since: null,
    deaf: false,
    mute: false,
    pending: false,
    flags: 0,
    communication_disabled_until: null,
    ...(permissions === undefined ? {} : { permissions: permissions.toString() }),
  };
}

export function roleObject(role: Role): Record<string, unknown> {
  return {
    id: role.id,
    name: role.name,
    color: 0,
    hoist: false,
    icon: null,
    unicode_emoji: null,
    position: role.position,
    permissions: role.permissions.toString(),
    managed: false,
    mentionable: false,
    flags: 0,
  };
}

export function channelObject(channel: Channel): Record<string, unknown> {
  const overwrites = (channel.permissionOverwrites ?? []).map((overwrite) => ({
    id: overwrite.id,
    type: overwrite.type,
    allow: overwrite.allow.toString(),
    deny: overwrite.deny.toString(),
  }));
  const base = {
    id: channel.id,
    type: channel.type,
    guild_id: channel.guildId,
    name: channel.name,
    position: 0,
    permission_overwrites: overwrites,
    flags: 0,
  };
  if (channel.type === 2) return { ...base, bitrate: 64_000, user_limit: 0, rtc_region: null, parent_id: null, nsfw: false };
  if (channel.type === 11) {
    return {
      ...base,
      parent_id: channel.parentId,
      owner_id: null,
      message_count: 0,
      member_count: 0,
      thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false },
    };
  }
  return { ...base, topic: null, nsfw: false, parent_id: null, last_message_id: null, rate_limit_per_user: 0 };
}

export function memberPermissions(guild: Guild, member: Member): bigint {
  const everyone = guild.roles.find((role) => role.id === guild.id)?.permissions ?? 0n;
  const combined = member.roleIds.reduce(
    (sum, roleId) => sum | (guild.roles.find((role) => role.id === roleId)?.permissions ?? 0n),
    everyone,
  );
  if (guild.ownerId === member.userId || (combined & PERMISSIONS.administrator) !== 0n) return (1n << 50n) - 1n;
  return combined;
}

/** Channel permissions a test can take from the bot, to see how it copes with Discord's refusals. */
export type DeniableBotPermission =
  'viewChannel' | 'sendMessages' | 'attachFiles' | 'readMessageHistory' | 'connect' | 'speak' | 'createPublicThreads';

export class StandInState {
  readonly users = new Map<string, User>();
  /** Per channel, what the bot may not do there (every permission by default). */
  readonly deniedBotPermissions = new Map<string, Set<DeniableBotPermission>>();
  readonly guilds = new Map<string, Guild>();
  readonly messages = new Map<string, Message>();
  /** Registered commands: key "global" or a guild id. */
  readonly commands = new Map<string, Record<string, unknown>[]>();
  readonly attachments = new Map<string, StoredAttachment>();
  /** DMs and group DMs, the bot's DMs with users among them. */
  readonly privateChannels = new Map<string, PrivateChannel>();
  /** Users who installed the app for themselves (USER_INSTALL). */
  readonly userInstalls = new Set<string>();
  /** Users who accept no DMs from the bot (their privacy settings, or they blocked it). */
  readonly closedDms = new Set<string>();
  /** The Developer Portal's privileged intent toggles (all on unless a test turns one off). */
  readonly privilegedIntents = new PrivilegedIntents();
  readonly botUser: User;
  readonly applicationId: string;
  readonly botToken: string;
  #baseUrl = '';

  constructor() {
    this.applicationId = snowflake();
    this.botUser = { id: this.applicationId, username: 'video-voice-bot', bot: true, locale: DEFAULT_LOCALE };
    this.users.set(this.botUser.id, this.botUser);
    this.botToken = `${Buffer.from(this.botUser.id).toString('base64url')}.${randomBytes(4).toString('base64url')}.${randomBytes(20).toString('base64url')}`;
  }

  /** The permission bits the bot is denied in a channel. */
  deniedBotBits(channelId: string): bigint {
    return [...(this.deniedBotPermissions.get(channelId) ?? [])].reduce((bits, permission) => bits | PERMISSIONS[permission], 0n);
  }

  set baseUrl(url: string) {
    this.#baseUrl = url;
  }

  botInGuild(guild: Guild): boolean {
    return guild.members.has(this.botUser.id);
  }

  /** The bot's DM with a user if it was ever opened. */
  openBotDm(userId: string): PrivateChannel | undefined {
    for (const channel of this.privateChannels.values())
      if (channel.type === 1 && channel.recipientIds.includes(userId) && channel.recipientIds.includes(this.botUser.id)) return channel;
    return undefined;
  }

  /** The bot's DM with a user, opened the first time it is needed (as Discord opens it). */
  botDm(userId: string): PrivateChannel {
    const open = this.openBotDm(userId);
    if (open) return open;
    const channel: PrivateChannel = { id: snowflake(), type: 1, recipientIds: [userId, this.botUser.id] };
    this.privateChannels.set(channel.id, channel);
    return channel;
  }

  /** Whether the user shares a server with the bot. */
  sharesGuildWithBot(userId: string): boolean {
    return [...this.guilds.values()].some((guild) => this.botInGuild(guild) && guild.members.has(userId));
  }

  /** Whether the bot can see a channel: a channel of a server it is in, or a DM it is a recipient of. */
  botSeesChannel(channelId: string): boolean {
    const found = this.channel(channelId);
    if (found) return this.botInGuild(found.guild);
    return this.privateChannels.get(channelId)?.recipientIds.includes(this.botUser.id) ?? false;
  }

  /** A DM channel as Discord shows it to `viewerId`: its recipients are the others. */
  privateChannelObject(channel: PrivateChannel, viewerId: string): Record<string, unknown> {
    const recipients = channel.recipientIds
      .filter((id) => id !== viewerId)
      .flatMap((id) => {
        const user = this.users.get(id);
        return user ? [userObject(user)] : [];
      });
    return {
      id: channel.id,
      type: channel.type,
      last_message_id: null,
      flags: 0,
      recipients,
      ...(channel.type === 3 ? { name: channel.name ?? null, icon: null, owner_id: channel.recipientIds[0] } : {}),
    };
  }

  channel(channelId: string): { guild: Guild; channel: Channel } | undefined {
    for (const guild of this.guilds.values()) {
      const channel = guild.channels.find((candidate) => candidate.id === channelId);
      if (channel) return { guild, channel };
    }
    return undefined;
  }

  /**
   * Stores bytes behind a signed-looking CDN url (ex/is/hm, as Discord's expiring links). A file a
   * member uploaded into a form is `ephemeral`: Discord serves it from `/ephemeral-attachments/`.
   */
  storeAttachment(
    channelId: string,
    filename: string,
    contentType: string,
    bytes: Buffer,
    options: { ephemeral?: boolean } = {},
  ): StoredAttachment {
    const id = snowflake();
    const expires = Math.floor(Date.now() / 1000) + 86_400;
    const signature = `ex=${expires.toString(16)}&is=${Math.floor(Date.now() / 1000).toString(16)}&hm=${randomBytes(32).toString('hex')}`;
    const folder = options.ephemeral ? 'ephemeral-attachments' : 'attachments';
    const url = `${this.#baseUrl}/${folder}/${channelId}/${id}/${encodeURIComponent(filename)}?${signature}`;
    const attachment = { id, filename, contentType, bytes, url };
    this.attachments.set(id, attachment);
    return attachment;
  }

  messageObject(message: Message): Record<string, unknown> {
    const author = this.users.get(message.authorId) ?? this.botUser;
    return {
      id: message.id,
      channel_id: message.channelId,
      guild_id: this.channel(message.channelId)?.guild.id,
      author: userObject(author),
      content: message.content,
      timestamp: message.timestamp,
      edited_timestamp: message.editedTimestamp,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: message.attachments.map(attachmentObject),
      embeds: message.embeds,
      components: message.components,
      pinned: false,
      type: message.messageReference ? 19 : message.interaction ? 20 : 0,
      flags: message.flags,
      ...(message.nonce === undefined ? {} : { nonce: message.nonce }),
      ...(message.webhookId ? { webhook_id: message.webhookId, application_id: this.applicationId } : {}),
      ...(message.messageReference ? { message_reference: { ...message.messageReference, channel_id: message.channelId } } : {}),
      ...(message.interaction
        ? {
            interaction_metadata: {
              id: message.interaction.id,
              type: message.interaction.type,
              user: userObject(this.users.get(message.interaction.userId) ?? this.botUser),
              authorizing_integration_owners: message.interaction.owners ?? {},
            },
          }
        : {}),
    };
  }
}
