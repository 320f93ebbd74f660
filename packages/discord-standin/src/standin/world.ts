import { randomBytes } from 'node:crypto';
import type { ShardPair } from '../gateway/gateway.ts';
import { DEFAULT_LOCALE, discordLocale } from '../world/locales.ts';
import { snowflake, snowflakeOnShard } from '../world/snowflake.ts';
import {
  DEFAULT_ATTACHMENT_LIMIT,
  EVERYONE_PERMISSIONS,
  PERMISSIONS,
  memberObject,
  roleObject,
  userObject,
  type Guild,
  type Member,
  type PrivateChannel,
  type User,
} from '../world/state.ts';
import type { PrivilegedIntent } from '../world/privileged-intents.ts';
import { guildOf, type StandInParts } from './parts.ts';

// The world a test sets up: servers with their roles, channels and members, and users.

export interface TestGuild {
  id: string;
  name: string;
  textChannelId: string;
  voiceChannelId: string;
  adminRoleId: string;
  memberRoleId: string;
  /** Has Manage Server through the admin role. */
  admin: User;
  /** No permission beyond @everyone. */
  member: User;
}

export interface CreateUserOptions {
  /** The guild the user joins as a member (none: a user in no guild). */
  guildId?: string;
  name?: string;
  /** Role ids the member has in that guild. */
  roles?: string[];
  /** The language the user picked in Discord, a Discord locale code (default `en-US`): their interactions' `locale`. */
  locale?: string;
}

export interface CreateGuildOptions {
  name?: string;
  /** The server's language, a Discord locale code (default `en-US`): `preferred_locale`, and its interactions' `guild_locale`. */
  locale?: string;
  attachmentSizeLimit?: number;
  /** [id, count]: the guild lands on shard `id` of `count`. */
  shard?: ShardPair;
  /**
   * Whether the app is installed to the server, its bot a member (default true). false: a server the bot
   * is not in, where only members who installed the app for themselves can use it.
   */
  withBot?: boolean;
}

export interface CreatePrivateChannelOptions {
  /** Who is in it: two users make a DM (type 1), three to ten a group DM (type 3). The bot is never in one. */
  users: User[];
  /** A group DM's name. */
  name?: string;
}

export class StandInWorld {
  readonly #parts: StandInParts;

  constructor(parts: StandInParts) {
    this.#parts = parts;
  }

  /** A simulated user, a member of the guild when one is given (GUILD_MEMBER_ADD for bots with that intent). */
  createUser(options: CreateUserOptions = {}): User {
    const user = this.#newUser(options.name, discordLocale(options.locale));
    if (options.guildId) {
      const guild = guildOf(this.#parts, options.guildId);
      const member = this.#addMember(guild, user, options.roles ?? []);
      this.#parts.gateway.dispatch('GUILD_MEMBER_ADD', { guild_id: guild.id, ...memberObject(member, user) });
    }
    return user;
  }

  /**
   * The application's privileged intent toggles in the Developer Portal (all on by default): an IDENTIFY
   * asking for one that is off is closed with 4014, and the application's flags say which are on.
   */
  setPrivilegedIntents(settings: Partial<Record<PrivilegedIntent, boolean>>): void {
    this.#parts.state.privilegedIntents.set(settings);
  }

  /**
   * The user leaves the guild (or is kicked): out of its voice channel first (VOICE_STATE_UPDATE), then no
   * longer a member, GUILD_MEMBER_REMOVE `{ guild_id, user }` going to bots with the GuildMembers intent.
   */
  removeMember(guildId: string, user: User): void {
    const guild = guildOf(this.#parts, guildId);
    if (guild.voiceStates.has(user.id)) this.#parts.gateway.userVoiceState(guild, user.id, null);
    guild.members.delete(user.id);
    this.#parts.gateway.dispatch('GUILD_MEMBER_REMOVE', { guild_id: guild.id, user: userObject(user) });
  }

  #newUser(name: string | undefined, locale = DEFAULT_LOCALE): User {
    const user: User = { id: snowflake(), username: name ?? `user-${randomBytes(3).toString('hex')}`, bot: false, locale };
    this.#parts.state.users.set(user.id, user);
    return user;
  }

  #addMember(guild: Guild, user: User, roleIds: string[]): Member {
    const member: Member = { userId: user.id, roleIds, joinedAt: new Date().toISOString() };
    guild.members.set(user.id, member);
    return member;
  }

  /**
   * A role in a guild with these permission bits (`PERMISSIONS`), above the guild's own roles (GUILD_ROLE_CREATE);
   * its id, for `createUser({ roles })`.
   */
  createRole(guildId: string, options: { name?: string; permissions: bigint }): string {
    const guild = guildOf(this.#parts, guildId);
    const role = {
      id: snowflake(),
      name: options.name ?? `role-${randomBytes(2).toString('hex')}`,
      permissions: options.permissions,
      position: guild.roles.length,
    };
    guild.roles.push(role);
    this.#parts.gateway.dispatch('GUILD_ROLE_CREATE', { guild_id: guild.id, role: roleObject(role) });
    return role.id;
  }

  /**
   * A server with the bot in it. `shard: [id, count]` picks its id so that it lands on shard `id` of
   * `count` (`(guild_id >> 22) % count`), with a timestamp at most `count - 1` ms in the past.
   */
  createGuild(options: CreateGuildOptions = {}): TestGuild {
    const { state, gateway } = this.#parts;
    const id = options.shard ? snowflakeOnShard(options.shard[0], options.shard[1]) : snowflake();
    const owner = this.#newUser('owner');
    const adminRoleId = snowflake();
    const memberRoleId = snowflake();
    const guild: Guild = {
      id,
      name: options.name ?? `server-${randomBytes(2).toString('hex')}`,
      ownerId: owner.id,
      attachmentSizeLimit: options.attachmentSizeLimit ?? DEFAULT_ATTACHMENT_LIMIT,
      preferredLocale: discordLocale(options.locale),
      roles: [
        { id, name: '@everyone', permissions: EVERYONE_PERMISSIONS, position: 0 },
        { id: adminRoleId, name: 'Admins', permissions: PERMISSIONS.manageGuild, position: 2 },
        { id: memberRoleId, name: 'Members', permissions: 0n, position: 1 },
      ],
      channels: [
        { id: snowflake(), guildId: id, type: 0, name: 'general' },
        { id: snowflake(), guildId: id, type: 2, name: 'Voice' },
      ],
      members: new Map(),
      voiceStates: new Map(),
    };
    const admin = this.#newUser('admin');
    const member = this.#newUser('member');
    this.#addMember(guild, owner, []);
    const withBot = options.withBot ?? true;
    if (withBot) this.#addMember(guild, state.botUser, []);
    this.#addMember(guild, admin, [adminRoleId]);
    this.#addMember(guild, member, [memberRoleId]);
    state.guilds.set(id, guild);
    // A server added while the bot runs arrives as the bot joining it, members included.
    if (gateway.ready && withBot) gateway.dispatch('GUILD_CREATE', gateway.guildCreate(guild));
    return {
      id,
      name: guild.name,
      textChannelId: guild.channels[0]!.id,
      voiceChannelId: guild.channels[1]!.id,
      adminRoleId,
      memberRoleId,
      admin,
      member,
    };
  }

  /** The user installs the app for themselves (USER_INSTALL): its commands that allow it follow them everywhere. */
  installAppForUser(user: User): void {
    this.#parts.state.userInstalls.add(this.#known(user).id);
  }

  uninstallAppForUser(user: User): void {
    this.#parts.state.userInstalls.delete(this.#known(user).id);
  }

  /**
   * The user's DM with the bot (its channel id), opened if it was not: where they run commands in
   * context 1 (they must share a server with the bot or have installed the app) and the bot's DMs land.
   */
  botDmChannel(user: User): string {
    return this.#parts.state.botDm(this.#known(user).id).id;
  }

  /** A DM or group DM between users, without the bot: a user install answers there in context 2. */
  createPrivateChannel(options: CreatePrivateChannelOptions): PrivateChannel {
    const ids = [...new Set(options.users.map((user) => this.#known(user).id))];
    if (ids.includes(this.#parts.state.botUser.id)) throw new Error("the bot's own DM is botDmChannel(user)");
    if (ids.length < 2 || ids.length > 10) throw new Error(`a DM holds 2 users and a group DM up to 10, not ${ids.length}`);
    const channel: PrivateChannel = {
      id: snowflake(),
      type: ids.length === 2 ? 1 : 3,
      recipientIds: ids,
      ...(options.name === undefined ? {} : { name: options.name }),
    };
    this.#parts.state.privateChannels.set(channel.id, channel);
    return channel;
  }

  #known(user: User): User {
    const known = this.#parts.state.users.get(user.id);
    if (!known) throw new Error(`no user ${user.id}`);
    return known;
  }

  /** The user picks another language in Discord: their next interactions carry it. */
  setUserLocale(userId: string, locale: string): void {
    const user = this.#parts.state.users.get(userId);
    if (!user) throw new Error(`no user ${userId}`);
    user.locale = discordLocale(locale);
  }

  setAttachmentSizeLimit(guildId: string, bytes: number): void {
    guildOf(this.#parts, guildId).attachmentSizeLimit = bytes;
  }
}
