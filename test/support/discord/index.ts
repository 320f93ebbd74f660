import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import { isRecord } from '../../../src/lib/json.ts';
import { createLogger, type Logger } from '../../../src/lib/log.ts';
import { Gateway, type IdentifyRecord, type ShardPair, type ShardSession } from './gateway.ts';
import { CALLBACK, Interactions, type Callback, type InteractionRecord } from './interactions.ts';
import { MessageStore, NONCE_WINDOW_MS, RestApi, type InjectedFailure, type RecordedRequest } from './rest.ts';
import { shardOfGuild, snowflake, snowflakeOnShard } from './snowflake.ts';
import {
  DEFAULT_ATTACHMENT_LIMIT,
  EVERYONE_PERMISSIONS,
  PERMISSIONS,
  StandInState,
  channelObject,
  memberObject,
  memberPermissions,
  roleObject,
  userObject,
  type DeniableBotPermission,
  type Guild,
  type Member,
  type Message,
  type Upload,
  type User,
} from './state.ts';
import { startVoiceServer, type VoiceServer, type VoiceUserOptions } from './voice-server.ts';
import { waitUntil } from '../../../src/lib/wait-until.ts';

// A local Discord for end-to-end tests: the real discord.js (in the bot's own process) talks to it over
// REST and the gateway, @discordjs/voice over the voice websocket and UDP, and tests drive simulated users.

export { PERMISSIONS, type Message, type Upload, type User };
export type { Callback, InteractionRecord } from './interactions.ts';
export type { RecordedRequest } from './rest.ts';
export type { IdentifyOutcome, IdentifyRecord, ShardPair, ShardSession } from './gateway.ts';
export { shardOfGuild };

export interface StandInOptions {
  /** Discord's 3 s for the first response; shorter in tests that prove the deadline. */
  responseDeadlineMs?: number;
  /** Discord's 15 min interaction token. */
  tokenLifetimeMs?: number;
  /** How long a message nonce with enforce_nonce is remembered (Discord: a few minutes). */
  nonceWindowMs?: number;
  heartbeatIntervalMs?: number;
  /** Where the stand-in logs requests (debug), routes it lacks (warn) and its own failures (error). */
  log?: Logger;
  /**
   * DAVE end-to-end encryption in voice (default true, as on Discord). false: the voice server answers
   * dave_protocol_version 0, as it did before it spoke DAVE (test/support/discord/README.md, "DAVE").
   */
  dave?: boolean;
  /** The shard count GET /gateway/bot recommends (default 1). */
  shards?: number;
  /** session_start_limit.max_concurrency: how many rate-limit buckets of identifies there are (default 1). */
  maxConcurrency?: number;
  /** How long a bucket stays taken after an accepted IDENTIFY (Discord: 5 s; default 5000; 0 turns the limit off). */
  identifyWindowMs?: number;
}

export interface AutocompleteChoice {
  name: string;
  value: string | number;
}

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

export interface AttachmentValue {
  filename: string;
  bytes: Buffer;
  contentType: string;
}

export type OptionValue = string | number | boolean | AttachmentValue | User;

export interface CommandRun {
  user: User;
  guildId: string;
  channelId: string;
  command: string;
  group?: string;
  subcommand?: string;
  options?: Record<string, OptionValue | undefined>;
}

const OPTION = { subcommand: 1, group: 2, string: 3, integer: 4, boolean: 5, user: 6, channel: 7, role: 8, mentionable: 9, number: 10, attachment: 11 } as const;
const INTERACTION = { command: 2, component: 3, autocomplete: 4, modal: 5 } as const;
/** Application command types: a slash command, and the Apps menu on a message. */
const COMMAND_TYPE = { chatInput: 1, message: 3 } as const;
const EPHEMERAL = 64;
/** Discord's identify window per rate-limit bucket. */
const IDENTIFY_WINDOW_MS = 5000;
const LOADING = 128;

function isAttachment(value: unknown): value is AttachmentValue {
  return isRecord(value) && Buffer.isBuffer(value.bytes) && typeof value.filename === 'string';
}

function isUser(value: unknown): value is User {
  return isRecord(value) && typeof value.id === 'string' && typeof value.username === 'string';
}

export class InteractionHandle {
  readonly record: InteractionRecord;
  readonly #standIn: DiscordStandIn;

  constructor(record: InteractionRecord, standIn: DiscordStandIn) {
    this.record = record;
    this.#standIn = standIn;
  }

  get interaction(): Record<string, unknown> {
    return this.record.payload;
  }

  get followUps(): Message[] {
    return this.record.followUps;
  }

  /** The first callback; rejects when none came before Discord's deadline. */
  response(): Promise<Callback> {
    return this.#standIn.waitFor(() => this.record.callbacks[0], this.#standIn.responseDeadlineMs + 500, `a response to /${this.record.name}`);
  }

  /** The reply as it stands once it is more than a "thinking…" placeholder. */
  reply(timeoutMs?: number): Promise<Message> {
    return this.waitForReply(() => true, timeoutMs);
  }

  waitForReply(predicate: (message: Message) => boolean, timeoutMs = 10_000): Promise<Message> {
    return this.#standIn.waitFor(
      () => {
        const original = this.record.original;
        return original && (original.flags & LOADING) === 0 && predicate(original) ? original : undefined;
      },
      timeoutMs,
      `the reply to /${this.record.name}`,
    );
  }

  /** The first follow-up message that satisfies `predicate`. */
  waitForFollowUp(predicate: (message: Message) => boolean, timeoutMs = 10_000): Promise<Message> {
    return this.#standIn.waitFor(() => this.record.followUps.find((message) => !message.deleted && predicate(message)), timeoutMs, `a follow-up to /${this.record.name}`);
  }

  /** Autocomplete choices offered (callback type 8). */
  async choices(): Promise<AutocompleteChoice[]> {
    const callback = await this.response();
    if (callback.type !== CALLBACK.autocomplete) throw new Error(`expected autocomplete choices, got callback type ${callback.type}`);
    const choices = Array.isArray(callback.data.choices) ? callback.data.choices : [];
    return choices.flatMap((choice: unknown) =>
      isRecord(choice) && typeof choice.name === 'string' && (typeof choice.value === 'string' || typeof choice.value === 'number') ? [{ name: choice.name, value: choice.value }] : [],
    );
  }

  /** The modal shown (callback type 9): its custom id and text inputs. */
  async modal(): Promise<{ customId: string; inputs: string[] }> {
    const callback = await this.response();
    if (callback.type !== CALLBACK.modal) throw new Error(`expected a modal, got callback type ${callback.type}`);
    const rows = Array.isArray(callback.data.components) ? callback.data.components : [];
    const inputs = rows.flatMap((row: unknown) => {
      const children: unknown[] = isRecord(row) && Array.isArray(row.components) ? row.components : isRecord(row) && isRecord(row.component) ? [row.component] : [];
      return children.flatMap((child) => (isRecord(child) && typeof child.custom_id === 'string' ? [child.custom_id] : []));
    });
    return { customId: typeof callback.data.custom_id === 'string' ? callback.data.custom_id : '', inputs };
  }
}

export class DiscordStandIn {
  readonly state = new StandInState();
  readonly events = new EventEmitter();
  /** Every REST request, in order of completion. */
  readonly requests: RecordedRequest[] = [];
  /** Every file the bot uploaded (messages, replies, edits and follow-ups). */
  readonly uploads: Upload[] = [];
  /** Every interaction the simulated users started, with its callbacks, reply and follow-ups. */
  readonly interactions: InteractionRecord[] = [];
  readonly voice: VoiceServer;
  readonly log: Logger;
  readonly responseDeadlineMs: number;
  readonly tokenLifetimeMs: number;
  readonly #server: Server;
  readonly #gateway: Gateway;
  /** takeGatewayDown() until bringGatewayBack(): gateway websocket upgrades are refused with 503. */
  #gatewayDown = false;
  readonly #interactions: Interactions;
  readonly #messages: MessageStore;
  readonly #failures: InjectedFailure[] = [];
  readonly #baseUrl: string;
  /** Interaction ids carry a timestamp from a clock this far off the bot's (real hosts drift, and ids need not be time-based). */
  interactionIdClockSkewMs = 0;

  constructor(server: Server, baseUrl: string, voice: VoiceServer, options: Required<Omit<StandInOptions, 'dave'>>) {
    for (const [name, value, least] of [['shards', options.shards, 1], ['maxConcurrency', options.maxConcurrency, 1], ['identifyWindowMs', options.identifyWindowMs, 0]] as const) {
      if (!Number.isSafeInteger(value) || value < least) throw new Error(`the stand-in's ${name} is a whole number from ${least}, not ${value}`);
    }
    this.#server = server;
    this.#baseUrl = baseUrl;
    this.voice = voice;
    this.log = options.log;
    this.responseDeadlineMs = options.responseDeadlineMs;
    this.tokenLifetimeMs = options.tokenLifetimeMs;
    this.events.setMaxListeners(0);
    this.state.baseUrl = baseUrl;
    const messages = (this.#messages = new MessageStore(this.state, {
      created: (message) => {
        this.events.emit('message', message);
        this.#dispatchMessage('MESSAGE_CREATE', message);
      },
      updated: (message) => {
        this.events.emit('messageUpdate', message);
        this.#dispatchMessage('MESSAGE_UPDATE', message);
      },
      deleted: (message) => {
        this.events.emit('messageDelete', message);
        if ((message.flags & EPHEMERAL) === 0) {
          this.#gateway.dispatch('MESSAGE_DELETE', { id: message.id, channel_id: message.channelId, guild_id: this.state.channel(message.channelId)?.guild.id });
        }
      },
      uploaded: (upload) => {
        // Files a member posts are theirs (postMessage), not the bot's uploads.
        if (this.state.messages.get(upload.messageId)?.authorId !== this.state.botUser.id) return;
        this.uploads.push(upload);
        this.events.emit('upload', upload);
      },
    }, options.nonceWindowMs));
    this.#interactions = new Interactions(this.state, messages, this.events, options);
    this.#gateway = new Gateway({
      state: this.state,
      voice,
      events: this.events,
      log: this.log,
      heartbeatIntervalMs: options.heartbeatIntervalMs,
      url: () => `${baseUrl.replace('http', 'ws')}/gateway`,
      maxConcurrency: options.maxConcurrency,
      identifyWindowMs: options.identifyWindowMs,
    });
    const rest = new RestApi({
      log: this.log,
      state: this.state,
      messages,
      interactions: this.#interactions,
      gatewayUrl: () => `${baseUrl.replace('http', 'ws')}/gateway`,
      gatewayBot: { shards: options.shards, maxConcurrency: options.maxConcurrency },
      dispatch: (event, data) => this.#gateway.dispatch(event, data),
      record: (request) => {
        this.requests.push(request);
        this.events.emit('request', request);
      },
      failures: this.#failures,
    });
    server.on('request', (request, response) => {
      const url = new URL(request.url ?? '/', 'http://stand-in');
      const attachment = /^\/attachments\/\d+\/(\d+)\//.exec(url.pathname);
      if (attachment) {
        const stored = this.state.attachments.get(attachment[1] ?? '');
        if (!stored) response.writeHead(404).end();
        else response.writeHead(200, { 'content-type': stored.contentType, 'content-length': stored.bytes.length }).end(stored.bytes);
        return;
      }
      const api = /^\/api(?:\/v\d+)?(\/.*)$/.exec(url.pathname);
      if (!api) {
        response.writeHead(404).end();
        return;
      }
      rest.handle(request, response, api[1] ?? '/').catch((error: unknown) => {
        // A fault in the stand-in itself, not in the bot: logged and announced, never thrown at the test.
        this.log.error('discord stand-in failed a request', { method: request.method, error });
        this.events.emit('failure', error);
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"stand-in failure","code":0}');
      });
    });
    server.on('upgrade', (request, socket, head) => {
      if (this.#gatewayDown) socket.end('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      else if (new URL(request.url ?? '/', 'http://stand-in').pathname === '/gateway') this.#gateway.handleUpgrade(request, socket, head);
      else socket.destroy();
    });
  }

  /** Discord sends the bot its own messages too; ephemeral ones never reach the gateway. */
  #dispatchMessage(event: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE', message: Message): void {
    if ((message.flags & EPHEMERAL) !== 0) return;
    const object = this.state.messageObject(message);
    const member = this.state.channel(message.channelId)?.guild.members.get(message.authorId);
    const author = this.state.users.get(message.authorId);
    this.#gateway.dispatch(event, { ...object, ...(member && author && !message.webhookId ? { member: memberObject(member, author) } : {}) });
  }

  get apiUrl(): string {
    return `${this.#baseUrl}/api`;
  }

  get botToken(): string {
    return this.state.botToken;
  }

  get applicationId(): string {
    return this.state.applicationId;
  }

  get botUserId(): string {
    return this.state.botUser.id;
  }

  get caCertPath(): string {
    return this.voice.caCertPath;
  }

  /** Resolves once `check` returns something, re-checking after every stand-in event. */
  waitFor<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const names = ['message', 'messageUpdate', 'messageDelete', 'upload', 'callback', 'interactionDeadline', 'interactionTokenExpired', 'request', 'botReady', 'identify', 'identifyRefused', 'resumed', 'botVoiceState', 'gatewayOpen', 'gatewayClose'];
    return waitUntil({
      check,
      subscribe: (wake) => {
        for (const name of names) this.events.on(name, wake);
        return () => {
          for (const name of names) this.events.off(name, wake);
        };
      },
      timeoutMs,
      timeoutError: () => new Error(`the Discord stand-in waited ${timeoutMs} ms for ${what} in vain`),
    });
  }

  /** A simulated user, a member of the guild when one is given (GUILD_MEMBER_ADD for bots with that intent). */
  createUser(options: { guildId?: string; name?: string; roles?: string[] } = {}): User {
    const user = this.#newUser(options.name);
    if (options.guildId) {
      const guild = this.#guild(options.guildId);
      const member = this.#addMember(guild, user, options.roles ?? []);
      this.#gateway.dispatch('GUILD_MEMBER_ADD', { guild_id: guild.id, ...memberObject(member, user) });
    }
    return user;
  }

  #newUser(name: string | undefined): User {
    const user: User = { id: snowflake(), username: name ?? `user-${randomBytes(3).toString('hex')}`, bot: false };
    this.state.users.set(user.id, user);
    return user;
  }

  #addMember(guild: Guild, user: User, roleIds: string[]): Member {
    const member: Member = { userId: user.id, roleIds, joinedAt: new Date().toISOString() };
    guild.members.set(user.id, member);
    return member;
  }

  /**
   * A server with the bot in it. `shard: [id, count]` picks its id so that it lands on shard `id` of
   * `count` (`(guild_id >> 22) % count`), with a timestamp at most `count - 1` ms in the past.
   */
  createGuild(options: { name?: string; attachmentSizeLimit?: number; shard?: ShardPair } = {}): TestGuild {
    const id = options.shard ? snowflakeOnShard(options.shard[0], options.shard[1]) : snowflake();
    const owner = this.#newUser('owner');
    const adminRoleId = snowflake();
    const memberRoleId = snowflake();
    const guild: Guild = {
      id,
      name: options.name ?? `server-${randomBytes(2).toString('hex')}`,
      ownerId: owner.id,
      attachmentSizeLimit: options.attachmentSizeLimit ?? DEFAULT_ATTACHMENT_LIMIT,
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
    this.#addMember(guild, this.state.botUser, []);
    this.#addMember(guild, admin, [adminRoleId]);
    this.#addMember(guild, member, [memberRoleId]);
    this.state.guilds.set(id, guild);
    // A server added while the bot runs arrives as the bot joining it, members included.
    if (this.#gateway.ready) this.#gateway.dispatch('GUILD_CREATE', this.#gateway.guildCreate(guild));
    return { id, name: guild.name, textChannelId: guild.channels[0]!.id, voiceChannelId: guild.channels[1]!.id, adminRoleId, memberRoleId, admin, member };
  }

  setAttachmentSizeLimit(guildId: string, bytes: number): void {
    this.#guild(guildId).attachmentSizeLimit = bytes;
  }

  /** IDENTIFY done and every GUILD_CREATE sent (by any shard's session). */
  waitForBot(timeoutMs = 20_000): Promise<true> {
    return this.waitFor(() => (this.#gateway.ready ? true : undefined), timeoutMs, 'bot login');
  }

  /** A session of shard `shardId` identified (READY and its guilds' GUILD_CREATEs sent) and connected. */
  waitForShard(shardId: number, timeoutMs = 20_000): Promise<ShardSession> {
    return this.waitFor(() => this.shardSessions().find((session) => session.shard[0] === shardId && session.connected), timeoutMs, `a session of shard ${shardId}`);
  }

  /** Every IDENTIFY the gateway got, in order: shard, time, rate-limit bucket and what became of it. */
  get identifies(): readonly IdentifyRecord[] {
    return this.#gateway.identifies;
  }

  /** The gateway sessions that receive events or may resume, each with its shard and the guilds it receives. */
  shardSessions(): ShardSession[] {
    return this.#gateway.sessions();
  }

  /**
   * Drops the connections of shard `shardId`'s sessions, leaving the sessions resumable: without a code
   * as a network failure would, with one as Discord closing with that code (4000: discord.js resumes).
   * Throws when no session of that shard is connected.
   */
  dropShardConnection(shardId: number, options: { code?: number } = {}): void {
    this.#gateway.dropShardConnection(shardId, options.code);
  }

  waitForCommands(guildId?: string, timeoutMs = 20_000): Promise<Record<string, unknown>[]> {
    return this.waitFor(() => {
      const commands = this.commands(guildId);
      return commands.length > 0 ? commands : undefined;
    }, timeoutMs, 'command registration');
  }

  commands(guildId?: string): Record<string, unknown>[] {
    return this.state.commands.get(guildId ?? 'global') ?? [];
  }

  messages(channelId: string): Message[] {
    return [...this.state.messages.values()].filter((message) => message.channelId === channelId && !message.deleted);
  }

  waitForMessage(channelId: string, predicate: (message: Message) => boolean, timeoutMs = 15_000): Promise<Message> {
    return this.waitFor(() => this.messages(channelId).find(predicate), timeoutMs, `a message in channel ${channelId}`);
  }

  rateLimit(options: { method?: string; route: RegExp; times: number; retryAfterSeconds: number; global?: boolean }): void {
    this.#failures.push({ method: options.method, route: options.route, remaining: options.times, status: 429, retryAfterSeconds: options.retryAfterSeconds, global: options.global ?? false });
  }

  failRoute(options: { method?: string; route: RegExp; times: number; status: number; code?: number; message?: string; errors?: Record<string, unknown> }): void {
    const { times, ...failure } = options;
    this.#failures.push({ ...failure, method: options.method, remaining: times });
  }

  /**
   * Takes a channel permission from the bot, as a server admin's member overwrite does: the bot sees the
   * overwrite (CHANNEL_UPDATE, interactions' app_permissions), and its requests there are refused as
   * Discord refuses them.
   */
  denyBotPermission(channelId: string, permission: DeniableBotPermission): void {
    const denied = this.state.deniedBotPermissions.get(channelId) ?? new Set();
    denied.add(permission);
    this.state.deniedBotPermissions.set(channelId, denied);
    this.#showBotOverwrite(channelId);
  }

  restoreBotPermissions(channelId: string): void {
    this.state.deniedBotPermissions.delete(channelId);
    this.#showBotOverwrite(channelId);
  }

  #showBotOverwrite(channelId: string): void {
    const found = this.state.channel(channelId);
    if (!found) return;
    const botId = this.state.botUser.id;
    const deny = this.state.deniedBotBits(channelId);
    const others = (found.channel.permissionOverwrites ?? []).filter((overwrite) => overwrite.id !== botId);
    found.channel.permissionOverwrites = deny === 0n ? others : [...others, { id: botId, type: 1, allow: 0n, deny }];
    this.#gateway.dispatch('CHANNEL_UPDATE', channelObject(found.channel));
  }

  expireInteraction(handle: InteractionHandle): void {
    this.#interactions.expire(handle.record);
  }

  /** Resolves once Discord's window for a first response to `handle` has closed: from then on a first response is refused with 10062. */
  waitForResponseDeadline(handle: InteractionHandle, timeoutMs = this.responseDeadlineMs + 5000): Promise<true> {
    return this.waitFor(() => (this.#interactions.deadlinePassed(handle.record) ? true : undefined), timeoutMs, `the response deadline of /${handle.record.name}`);
  }

  /** Resolves once the webhook token of `handle` is dead (its lifetime ran out, or expireInteraction()): from then on webhook calls with it are refused with 50027. */
  waitForTokenExpiry(handle: InteractionHandle, timeoutMs = this.tokenLifetimeMs + 5000): Promise<true> {
    return this.waitFor(() => (this.#interactions.tokenExpired(handle.record) ? true : undefined), timeoutMs, `the token of /${handle.record.name} to expire`);
  }

  /**
   * A gateway outage: every session's connection is cut and new websocket connections are answered 503
   * until bringGatewayBack(); REST goes on answering.
   */
  takeGatewayDown(): void {
    this.#gatewayDown = true;
    this.#gateway.dropConnection();
  }

  bringGatewayBack(): void {
    this.#gatewayDown = false;
  }

  /** Drops every session's connection (each shard's) as a network failure would; the bot resumes. */
  dropGatewayConnection(): void {
    this.#gateway.dropConnection();
  }

  withholdHeartbeatAck(count = 1): void {
    this.#gateway.withholdHeartbeatAck(count);
  }

  /** The intents the bot asked for in its last IDENTIFY (undefined before it identified). */
  get identifiedIntents(): number | undefined {
    return this.#gateway.identifiedIntents;
  }

  /** The session of the last accepted IDENTIFY is connected (for a sharded bot, see shardSessions()). */
  get gatewayConnected(): boolean {
    return this.#gateway.connected;
  }

  /** The user joins a voice channel; `{ dave: false }`: their client has no DAVE, and the call downgrades. */
  joinVoice(user: User, guildId: string, channelId: string, options?: VoiceUserOptions): void {
    this.#gateway.userVoiceState(this.#guild(guildId), user.id, channelId, options);
  }

  leaveVoice(user: User, guildId: string): void {
    this.#gateway.userVoiceState(this.#guild(guildId), user.id, null);
  }

  /**
   * A server admin disconnects the bot from voice: the bot gets a VOICE_STATE_UPDATE with channel_id
   * null and its voice websocket is closed with 4014 (so it must not rejoin by itself).
   */
  disconnectBotFromVoice(guildId: string): void {
    this.#gateway.disconnectBotFromVoice(this.#guild(guildId));
  }

  /** Which voice channel the bot is in, per Discord's voice states. */
  botVoiceChannel(guildId: string): string | undefined {
    return this.#guild(guildId).voiceStates.get(this.state.botUser.id)?.channelId;
  }

  #guild(guildId: string): Guild {
    const guild = this.state.guilds.get(guildId);
    if (!guild) throw new Error(`no guild ${guildId} in the stand-in`);
    return guild;
  }

  #definition(guildId: string, command: string): Record<string, unknown> {
    const definition = [...(this.state.commands.get(guildId) ?? []), ...(this.state.commands.get('global') ?? [])].find((candidate) => candidate.name === command);
    if (!definition) throw new Error(`the bot registered no /${command}`);
    return definition;
  }

  #base(type: number, user: User, guildId: string, channelId: string): { record: InteractionRecord; payload: Record<string, unknown> } {
    const guild = this.#guild(guildId);
    const channel = guild.channels.find((candidate) => candidate.id === channelId);
    if (!channel) throw new Error(`no channel ${channelId} in guild ${guildId}`);
    const member = guild.members.get(user.id);
    if (!member) throw new Error(`${user.username} is not a member of guild ${guildId}`);
    const id = snowflake(Date.now() + this.interactionIdClockSkewMs);
    const token = `aW50ZXJhY3Rpb24${randomBytes(48).toString('base64url')}`;
    const permissions = memberPermissions(guild, member);
    const payload: Record<string, unknown> = {
      id,
      application_id: this.state.applicationId,
      type,
      token,
      version: 1,
      guild_id: guildId,
      channel_id: channelId,
      channel: { ...channelObject(channel), permissions: permissions.toString() },
      member: memberObject(member, user, permissions),
      app_permissions: (((1n << 50n) - 1n) & ~this.state.deniedBotBits(channelId)).toString(),
      locale: 'en-US',
      guild_locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': guildId },
      context: 0,
      attachment_size_limit: guild.attachmentSizeLimit,
    };
    const record: InteractionRecord = {
      id,
      token,
      type,
      name: '',
      createdAt: Date.now(),
      guildId,
      channelId,
      userId: user.id,
      payload,
      callbacks: [],
      original: undefined,
      followUps: [],
      sourceMessage: undefined,
      tokenExpired: false,
    };
    return { record, payload };
  }

  #commandData(run: CommandRun, focused?: string): Record<string, unknown> {
    const definition = this.#definition(run.guildId, run.command);
    if (definition.type !== COMMAND_TYPE.chatInput) throw new Error(`${run.command} is not a slash command`);
    const resolved: Record<string, Record<string, unknown>> = {};
    let level: unknown[] = Array.isArray(definition.options) ? definition.options : [];
    const path: { name: string; type: number }[] = [];
    for (const [name, type] of [[run.group, OPTION.group], [run.subcommand, OPTION.subcommand]] as const) {
      if (!name) continue;
      const option = level.find((candidate) => isRecord(candidate) && candidate.name === name);
      if (!isRecord(option)) throw new Error(`/${run.command} has no ${name}`);
      path.push({ name, type });
      level = Array.isArray(option.options) ? option.options : [];
    }
    const values = Object.entries(run.options ?? {}).flatMap(([name, value]) => {
      if (value === undefined) return [];
      const option = level.find((candidate) => isRecord(candidate) && candidate.name === name);
      if (!isRecord(option) || typeof option.type !== 'number') throw new Error(`/${run.command} ${path.map((part) => part.name).join(' ')} has no option ${name}`);
      return [{ name, type: option.type, value: this.#optionValue(option.type, value, run, resolved), ...(focused === name ? { focused: true } : {}) }];
    });
    let options: unknown[] = values;
    for (const part of [...path].reverse()) options = [{ name: part.name, type: part.type, options }];
    return { id: definition.id, name: run.command, type: 1, options, resolved, guild_id: run.guildId };
  }

  #optionValue(type: number, value: OptionValue, run: CommandRun, resolved: Record<string, Record<string, unknown>>): unknown {
    const id = typeof value === 'string' ? value : isUser(value) ? value.id : '';
    if (type === OPTION.attachment) {
      if (!isAttachment(value)) throw new Error('an attachment option takes { filename, bytes, contentType }');
      const stored = this.state.storeAttachment(run.channelId, value.filename, value.contentType, value.bytes);
      (resolved.attachments ??= {})[stored.id] = { id: stored.id, filename: stored.filename, size: stored.bytes.length, url: stored.url, proxy_url: stored.url, content_type: stored.contentType };
      return stored.id;
    }
    // A mentionable is a user or a role; Discord resolves it as whichever it is.
    const mentionsUser = type === OPTION.mentionable && (isUser(value) || this.state.users.has(id));
    if (type === OPTION.user || mentionsUser) {
      const user = isUser(value) ? value : this.state.users.get(id);
      if (!user) throw new Error(`no user ${id}`);
      (resolved.users ??= {})[user.id] = userObject(user);
      const member = this.#guild(run.guildId).members.get(user.id);
      if (member) (resolved.members ??= {})[user.id] = { roles: member.roleIds, joined_at: member.joinedAt, nick: null, avatar: null, flags: 0, pending: false, premium_since: null, communication_disabled_until: null };
      return user.id;
    }
    if (type === OPTION.channel) {
      const channel = this.#guild(run.guildId).channels.find((candidate) => candidate.id === id);
      if (!channel) throw new Error(`no channel ${id}`);
      (resolved.channels ??= {})[channel.id] = { ...channelObject(channel), permissions: ((1n << 50n) - 1n).toString() };
      return channel.id;
    }
    if (type === OPTION.role || type === OPTION.mentionable) {
      const role = this.#guild(run.guildId).roles.find((candidate) => candidate.id === id);
      if (!role) throw new Error(type === OPTION.role ? `no role ${id}` : `no user or role ${id}`);
      (resolved.roles ??= {})[role.id] = roleObject(role);
      return role.id;
    }
    if (isAttachment(value) || isUser(value)) throw new Error(`option type ${type} takes a plain value`);
    return value;
  }

  #start(record: InteractionRecord, payload: Record<string, unknown>): InteractionHandle {
    this.#interactions.register(record);
    this.interactions.push(record);
    this.#gateway.dispatch('INTERACTION_CREATE', payload);
    return new InteractionHandle(record, this);
  }

  runCommand(run: CommandRun): InteractionHandle {
    const { record, payload } = this.#base(INTERACTION.command, run.user, run.guildId, run.channelId);
    record.name = run.command;
    payload.data = this.#commandData(run);
    return this.#start(record, payload);
  }

  /**
   * A member picks a message command from the Apps menu of `message`: type 2 with `data.type` 3,
   * `target_id` the message, and the message itself in `resolved.messages`, as Discord sends it (content,
   * attachments and embeds included, whatever the bot's intents).
   */
  runMessageCommand(options: { user: User; message: Message; command: string }): InteractionHandle {
    const found = this.state.channel(options.message.channelId);
    if (!found) throw new Error('the message is in no known channel');
    const definition = this.#definition(found.guild.id, options.command);
    if (definition.type !== COMMAND_TYPE.message) throw new Error(`${options.command} is not a message command`);
    const { record, payload } = this.#base(INTERACTION.command, options.user, found.guild.id, options.message.channelId);
    record.name = options.command;
    payload.data = {
      id: definition.id,
      name: options.command,
      type: COMMAND_TYPE.message,
      target_id: options.message.id,
      resolved: { messages: { [options.message.id]: this.state.messageObject(options.message) } },
      guild_id: found.guild.id,
    };
    return this.#start(record, payload);
  }

  /**
   * A member posts a message in a channel: text, files (stored and served as Discord's CDN serves
   * attachments) and embeds (as Discord makes them for a link, say). It is dispatched as MESSAGE_CREATE.
   */
  postMessage(options: { user: User; channelId: string; content?: string; attachments?: AttachmentValue[]; embeds?: Record<string, unknown>[] }): Message {
    const found = this.state.channel(options.channelId);
    if (!found) throw new Error(`no channel ${options.channelId}`);
    if (!found.guild.members.has(options.user.id)) throw new Error(`${options.user.username} is not a member of guild ${found.guild.id}`);
    const attachments = options.attachments ?? [];
    return this.#messages.create({
      channelId: options.channelId,
      authorId: options.user.id,
      body: {
        json: { content: options.content ?? '', embeds: options.embeds ?? [], attachments: attachments.map((file, index) => ({ id: String(index), filename: file.filename })) },
        files: attachments.map((file, index) => ({ part: index, name: file.filename, contentType: file.contentType, bytes: file.bytes })),
      },
    });
  }

  /** A user typing in an option with autocomplete: resolves with the choices the bot offered. */
  autocomplete(run: CommandRun & { focused: string }): Promise<AutocompleteChoice[]> {
    const { record, payload } = this.#base(INTERACTION.autocomplete, run.user, run.guildId, run.channelId);
    record.name = run.command;
    payload.data = this.#commandData(run, run.focused);
    return this.#start(record, payload).choices();
  }

  clickButton(options: { user: User; message: Message; customId: string }): InteractionHandle {
    const found = this.state.channel(options.message.channelId);
    if (!found) throw new Error('the message is in no known channel');
    const { record, payload } = this.#base(INTERACTION.component, options.user, found.guild.id, options.message.channelId);
    record.name = options.customId;
    record.sourceMessage = options.message;
    payload.data = { custom_id: options.customId, component_type: 2 };
    payload.message = this.state.messageObject(options.message);
    return this.#start(record, payload);
  }

  submitModal(options: { user: User; guildId: string; channelId: string; customId: string; fields: Record<string, string> }): InteractionHandle {
    const { record, payload } = this.#base(INTERACTION.modal, options.user, options.guildId, options.channelId);
    record.name = options.customId;
    payload.data = {
      custom_id: options.customId,
      components: Object.entries(options.fields).map(([customId, value]) => ({ type: 1, components: [{ type: 4, custom_id: customId, value }] })),
    };
    return this.#start(record, payload);
  }

  async close(): Promise<void> {
    this.#interactions.close();
    this.#gateway.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    await this.voice.close();
  }
}

export async function startDiscordStandIn(options: StandInOptions = {}): Promise<DiscordStandIn> {
  const voice = await startVoiceServer({ dave: options.dave ?? true });
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the stand-in is not on a TCP port');
  return new DiscordStandIn(server, `http://127.0.0.1:${address.port}`, voice, {
    responseDeadlineMs: options.responseDeadlineMs ?? 3000,
    tokenLifetimeMs: options.tokenLifetimeMs ?? 15 * 60_000,
    nonceWindowMs: options.nonceWindowMs ?? NONCE_WINDOW_MS,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
    shards: options.shards ?? 1,
    maxConcurrency: options.maxConcurrency ?? 1,
    identifyWindowMs: options.identifyWindowMs ?? IDENTIFY_WINDOW_MS,
    log: options.log ?? createLogger({ level: 'warn', fields: { component: 'discord-stand-in' } }),
  });
}
