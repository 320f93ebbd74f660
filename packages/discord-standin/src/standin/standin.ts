import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import { Gateway, type IdentifyRecord, type ShardSession } from '../gateway/gateway.ts';
import { createLogger, type Logger } from '../lib/log.ts';
import { RestApi } from '../rest/api.ts';
import { Interactions, type InteractionRecord } from '../rest/interactions.ts';
import { MessageStore, NONCE_WINDOW_MS } from '../rest/messages.ts';
import { startVoiceServer, type VoiceServer, type VoiceUserOptions } from '../voice/server.ts';
import type { PrivilegedIntent } from '../world/privileged-intents.ts';
import { StandInState, memberObject, type DeniableBotPermission, type Message, type PrivateChannel, type User } from '../world/state.ts';
import {
  StandInActions,
  type AutocompleteRun,
  type ButtonClickOptions,
  type CommandRun,
  type MessageCommandOptions,
  type ModalSubmitOptions,
  type PostMessageOptions,
} from './actions.ts';
import { StandInFaults, type DropShardOptions, type FailRouteOptions, type RateLimitOptions } from './faults.ts';
import type { AutocompleteChoice, InteractionHandle } from './interaction-handle.ts';
import { StandInObservation } from './observation.ts';
import type { StandInParts } from './parts.ts';
import {
  StandInWorld,
  type CreateGuildOptions,
  type CreatePrivateChannelOptions,
  type CreateUserOptions,
  type TestGuild,
} from './world.ts';

// A local Discord for end-to-end tests: the real discord.js (in the bot's own process) talks to it over
// REST and the gateway, @discordjs/voice over the voice websocket and UDP, and tests drive simulated users.
// DiscordStandIn wires the servers and offers one flat API, whose methods are those of its four roles:
// the world a test sets up (world.ts), what simulated users do (actions.ts), failures injected on demand
// (faults.ts), and what the bot did (observation.ts).

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
   * dave_protocol_version 0, as it did before it spoke DAVE (README.md, "DAVE").
   */
  dave?: boolean;
  /** The shard count GET /gateway/bot recommends (default 1). */
  shards?: number;
  /** session_start_limit.max_concurrency: how many rate-limit buckets of identifies there are (default 1). */
  maxConcurrency?: number;
  /** How long a bucket stays taken after an accepted IDENTIFY (Discord: 5 s; default 5000; 0 turns the limit off). */
  identifyWindowMs?: number;
}

const EPHEMERAL = 64;
/** Discord's identify window per rate-limit bucket. */
const IDENTIFY_WINDOW_MS = 5000;

export class DiscordStandIn {
  readonly state = new StandInState();
  readonly events = new EventEmitter();
  /** Every REST request, in order of completion. */
  readonly requests: StandInObservation['requests'];
  /** Every file the bot uploaded (messages, replies, edits and follow-ups). */
  readonly uploads: StandInObservation['uploads'];
  /** Every interaction the simulated users started, with its callbacks, reply and follow-ups. */
  readonly interactions: InteractionRecord[];
  readonly voice: VoiceServer;
  readonly log: Logger;
  readonly responseDeadlineMs: number;
  readonly tokenLifetimeMs: number;
  readonly #server: Server;
  readonly #baseUrl: string;
  readonly #gateway: Gateway;
  readonly #interactions: Interactions;
  readonly #world: StandInWorld;
  readonly #actions: StandInActions;
  readonly #faults: StandInFaults;
  readonly #observation: StandInObservation;

  constructor(server: Server, baseUrl: string, voice: VoiceServer, options: Required<Omit<StandInOptions, 'dave'>>) {
    for (const [name, value, least] of [
      ['shards', options.shards, 1],
      ['maxConcurrency', options.maxConcurrency, 1],
      ['identifyWindowMs', options.identifyWindowMs, 0],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < least)
        throw new Error(`the stand-in's ${name} is a whole number from ${least}, not ${value}`);
    }
    this.#server = server;
    this.#baseUrl = baseUrl;
    this.voice = voice;
    this.log = options.log;
    this.responseDeadlineMs = options.responseDeadlineMs;
    this.tokenLifetimeMs = options.tokenLifetimeMs;
    this.events.setMaxListeners(0);
    this.state.baseUrl = baseUrl;
    const messages = new MessageStore(
      this.state,
      {
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
          if ((message.flags & EPHEMERAL) === 0 && this.state.botSeesChannel(message.channelId)) {
            this.#gateway.dispatch('MESSAGE_DELETE', {
              id: message.id,
              channel_id: message.channelId,
              guild_id: this.state.channel(message.channelId)?.guild.id,
            });
          }
        },
        uploaded: (upload) => {
          // Files a member posts are theirs (postMessage), not the bot's uploads.
          if (this.state.messages.get(upload.messageId)?.authorId !== this.state.botUser.id) return;
          this.uploads.push(upload);
          this.events.emit('upload', upload);
        },
      },
      options.nonceWindowMs,
    );
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
    const parts: StandInParts = {
      state: this.state,
      events: this.events,
      gateway: this.#gateway,
      interactions: this.#interactions,
      messages,
    };
    this.#observation = new StandInObservation(parts, options);
    this.requests = this.#observation.requests;
    this.uploads = this.#observation.uploads;
    this.interactions = this.#observation.interactions;
    this.#world = new StandInWorld(parts);
    this.#faults = new StandInFaults(parts);
    this.#actions = new StandInActions(parts, this.#observation, this.#faults);
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
      failures: this.#faults.failures,
    });
    server.on('request', (request, response) => {
      const url = new URL(request.url ?? '/', 'http://stand-in');
      const attachment = /^\/(?:ephemeral-)?attachments\/\d+\/(\d+)\//.exec(url.pathname);
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
        if (!response.headersSent)
          response.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"stand-in failure","code":0}');
      });
    });
    server.on('upgrade', (request, socket, head) => {
      if (this.#faults.gatewayDown) socket.end('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      else if (new URL(request.url ?? '/', 'http://stand-in').pathname === '/gateway') this.#gateway.handleUpgrade(request, socket, head);
      else socket.destroy();
    });
  }

  /**
   * Discord sends the bot its own messages too; ephemeral ones never reach the gateway, nor messages
   * where the bot is not (a server it is not in, a DM between users: a user install answers there).
   */
  #dispatchMessage(event: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE', message: Message): void {
    if ((message.flags & EPHEMERAL) !== 0 || !this.state.botSeesChannel(message.channelId)) return;
    const object = this.state.messageObject(message);
    const member = this.state.channel(message.channelId)?.guild.members.get(message.authorId);
    const author = this.state.users.get(message.authorId);
    this.#gateway.dispatch(event, {
      ...object,
      ...(member && author && !message.webhookId ? { member: memberObject(member, author) } : {}),
    });
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

  // ---- The world (world.ts) --------------------------------------------------------------------------

  createUser(options?: CreateUserOptions): User {
    return this.#world.createUser(options);
  }

  setPrivilegedIntents(settings: Partial<Record<PrivilegedIntent, boolean>>): void {
    this.#world.setPrivilegedIntents(settings);
  }

  removeMember(guildId: string, user: User): void {
    this.#world.removeMember(guildId, user);
  }

  createGuild(options?: CreateGuildOptions): TestGuild {
    return this.#world.createGuild(options);
  }

  /** A role with these permission bits (`PERMISSIONS`); its id, for `createUser({ roles })`. */
  createRole(guildId: string, options: { name?: string; permissions: bigint }): string {
    return this.#world.createRole(guildId, options);
  }

  setAttachmentSizeLimit(guildId: string, bytes: number): void {
    this.#world.setAttachmentSizeLimit(guildId, bytes);
  }

  /** The user picks another language in Discord: their next interactions carry it as `locale`. */
  setUserLocale(userId: string, locale: string): void {
    this.#world.setUserLocale(userId, locale);
  }

  installAppForUser(user: User): void {
    this.#world.installAppForUser(user);
  }

  uninstallAppForUser(user: User): void {
    this.#world.uninstallAppForUser(user);
  }

  botDmChannel(user: User): string {
    return this.#world.botDmChannel(user);
  }

  createPrivateChannel(options: CreatePrivateChannelOptions): PrivateChannel {
    return this.#world.createPrivateChannel(options);
  }

  // ---- What simulated users do (actions.ts) -------------------------------------------------------------

  runCommand(run: CommandRun): InteractionHandle {
    return this.#actions.runCommand(run);
  }

  runMessageCommand(options: MessageCommandOptions): InteractionHandle {
    return this.#actions.runMessageCommand(options);
  }

  autocomplete(run: AutocompleteRun): Promise<AutocompleteChoice[]> {
    return this.#actions.autocomplete(run);
  }

  clickButton(options: ButtonClickOptions): InteractionHandle {
    return this.#actions.clickButton(options);
  }

  submitModal(options: ModalSubmitOptions): InteractionHandle {
    return this.#actions.submitModal(options);
  }

  postMessage(options: PostMessageOptions): Message {
    return this.#actions.postMessage(options);
  }

  joinVoice(user: User, guildId: string, channelId: string, options?: VoiceUserOptions): void {
    this.#actions.joinVoice(user, guildId, channelId, options);
  }

  leaveVoice(user: User, guildId: string): void {
    this.#actions.leaveVoice(user, guildId);
  }

  // ---- Faults on demand (faults.ts) --------------------------------------------------------------------

  get interactionIdClockSkewMs(): number {
    return this.#faults.interactionIdClockSkewMs;
  }

  set interactionIdClockSkewMs(ms: number) {
    this.#faults.interactionIdClockSkewMs = ms;
  }

  rateLimit(options: RateLimitOptions): void {
    this.#faults.rateLimit(options);
  }

  failRoute(options: FailRouteOptions): () => void {
    return this.#faults.failRoute(options);
  }

  denyBotPermission(channelId: string, permission: DeniableBotPermission): void {
    this.#faults.denyBotPermission(channelId, permission);
  }

  restoreBotPermissions(channelId: string): void {
    this.#faults.restoreBotPermissions(channelId);
  }

  expireInteraction(handle: InteractionHandle): void {
    this.#faults.expireInteraction(handle);
  }

  closeDirectMessages(userId: string): void {
    this.#faults.closeDirectMessages(userId);
  }

  openDirectMessages(userId: string): void {
    this.#faults.openDirectMessages(userId);
  }

  takeGatewayDown(): void {
    this.#faults.takeGatewayDown();
  }

  bringGatewayBack(): void {
    this.#faults.bringGatewayBack();
  }

  dropGatewayConnection(): void {
    this.#faults.dropGatewayConnection();
  }

  dropShardConnection(shardId: number, options?: DropShardOptions): void {
    this.#faults.dropShardConnection(shardId, options);
  }

  withholdHeartbeatAck(count?: number): void {
    this.#faults.withholdHeartbeatAck(count);
  }

  disconnectBotFromVoice(guildId: string): void {
    this.#faults.disconnectBotFromVoice(guildId);
  }

  // ---- What the bot did (observation.ts) ---------------------------------------------------------------

  waitFor<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return this.#observation.waitFor(check, timeoutMs, what);
  }

  waitForBot(timeoutMs?: number): Promise<true> {
    return this.#observation.waitForBot(timeoutMs);
  }

  waitForShard(shardId: number, timeoutMs?: number): Promise<ShardSession> {
    return this.#observation.waitForShard(shardId, timeoutMs);
  }

  get identifies(): readonly IdentifyRecord[] {
    return this.#observation.identifies;
  }

  shardSessions(): ShardSession[] {
    return this.#observation.shardSessions();
  }

  get identifiedIntents(): number | undefined {
    return this.#observation.identifiedIntents;
  }

  get gatewayConnected(): boolean {
    return this.#observation.gatewayConnected;
  }

  waitForCommands(guildId?: string, timeoutMs?: number): Promise<Record<string, unknown>[]> {
    return this.#observation.waitForCommands(guildId, timeoutMs);
  }

  commands(guildId?: string): Record<string, unknown>[] {
    return this.#observation.commands(guildId);
  }

  messages(channelId: string): Message[] {
    return this.#observation.messages(channelId);
  }

  waitForMessage(channelId: string, predicate: (message: Message) => boolean, timeoutMs?: number): Promise<Message> {
    return this.#observation.waitForMessage(channelId, predicate, timeoutMs);
  }

  directMessages(userId: string): Message[] {
    return this.#observation.directMessages(userId);
  }

  waitForDirectMessage(userId: string, predicate: (message: Message) => boolean, timeoutMs?: number): Promise<Message> {
    return this.#observation.waitForDirectMessage(userId, predicate, timeoutMs);
  }

  waitForResponseDeadline(handle: InteractionHandle, timeoutMs?: number): Promise<true> {
    return this.#observation.waitForResponseDeadline(handle, timeoutMs);
  }

  waitForTokenExpiry(handle: InteractionHandle, timeoutMs?: number): Promise<true> {
    return this.#observation.waitForTokenExpiry(handle, timeoutMs);
  }

  messageErrors(json: Record<string, unknown>, options?: { filenames?: string[]; editing?: Message }): Record<string, unknown> | undefined {
    return this.#observation.messageErrors(json, options);
  }

  botVoiceChannel(guildId: string): string | undefined {
    return this.#observation.botVoiceChannel(guildId);
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
