import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { isRecord } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { shardOfGuild } from '../world/snowflake.ts';
import { channelObject, memberObject, roleObject, userObject, type Guild, type StandInState } from '../world/state.ts';
import type { VoiceStandIn, VoiceUserOptions } from '../voice/contract.ts';
import { websocketText } from '../lib/websocket-text.ts';
import { DISALLOWED_INTENTS_CLOSE } from '../world/privileged-intents.ts';

// Discord's gateway as @discordjs/ws 1.2 speaks it (JSON, no compression): HELLO, IDENTIFY, READY, a
// complete GUILD_CREATE per guild, heartbeats, RESUME with replay of what was missed, and the voice state
// handshake for the bot's own voice connections. Sharded as Discord shards: one session per IDENTIFY, each
// receiving only the events of its shard's guilds, and identifies limited per rate-limit bucket
// (README.md, "Sharding").

const OP = {
  dispatch: 0,
  heartbeat: 1,
  identify: 2,
  voiceStateUpdate: 4,
  resume: 6,
  reconnect: 7,
  invalidSession: 9,
  hello: 10,
  heartbeatAck: 11,
} as const;
const CLOSE = { authenticationFailed: 4004, alreadyAuthenticated: 4005, invalidShard: 4010 } as const;
const INTENT = { guilds: 1 << 0, guildMembers: 1 << 1, guildVoiceStates: 1 << 7, guildMessages: 1 << 9, directMessages: 1 << 12 } as const;
const REPLAY_LIMIT = 2000;

/** Which intent a dispatch needs; anything not listed needs none (READY, INTERACTION_CREATE, RESUMED). */
const EVENT_INTENTS: Record<string, number> = {
  GUILD_CREATE: INTENT.guilds,
  CHANNEL_CREATE: INTENT.guilds,
  CHANNEL_UPDATE: INTENT.guilds,
  THREAD_CREATE: INTENT.guilds,
  GUILD_ROLE_CREATE: INTENT.guilds,
  GUILD_ROLE_UPDATE: INTENT.guilds,
  GUILD_MEMBER_ADD: INTENT.guildMembers,
  GUILD_MEMBER_REMOVE: INTENT.guildMembers,
  VOICE_STATE_UPDATE: INTENT.guildVoiceStates,
  MESSAGE_CREATE: INTENT.guildMessages,
  MESSAGE_UPDATE: INTENT.guildMessages,
  MESSAGE_DELETE: INTENT.guildMessages,
};

/** Message events outside servers (the bot's DMs) need DirectMessages instead of GuildMessages. */
const MESSAGE_EVENTS = new Set(['MESSAGE_CREATE', 'MESSAGE_UPDATE', 'MESSAGE_DELETE']);

/** Events about a guild that carry the guild as their own `id` rather than in `guild_id`. */
const GUILD_OBJECT_EVENTS = new Set(['GUILD_CREATE', 'GUILD_UPDATE', 'GUILD_DELETE']);

/** `[shard_id, num_shards]`, as IDENTIFY sends it and READY echoes it. */
export type ShardPair = readonly [shardId: number, shardCount: number];

/** What an IDENTIFY without a `shard` is: the one shard of an unsharded bot. */
const UNSHARDED: ShardPair = [0, 1];

/**
 * What became of an IDENTIFY: `accepted` (READY followed), `rate-limited` (op 9 `d: false`: its bucket
 * identified less than the identify window ago), `invalid-shard` (closed 4010), `authentication-failed`
 * (closed 4004), `already-authenticated` (closed 4005: the socket already holds a session),
 * `disallowed-intents` (closed 4014: a privileged intent the application's portal settings do not allow).
 */
export type IdentifyOutcome =
  'accepted' | 'rate-limited' | 'invalid-shard' | 'authentication-failed' | 'already-authenticated' | 'disallowed-intents';

export interface IdentifyRecord {
  /** The identify's `[shard_id, num_shards]` (`[0, 1]` when it sent none); null when it sent no pair of whole numbers. */
  shard: ShardPair | null;
  /** When it arrived (ms since the Unix epoch). */
  at: number;
  /** Its rate-limit bucket, `shard_id % max_concurrency`; null without a shard. */
  bucket: number | null;
  outcome: IdentifyOutcome;
  /**
   * It came less than the identify window after its bucket's last accepted identify. Refused as
   * `rate-limited` when it names more than one shard in all; an unsharded `[0, 1]` identify is only
   * marked (the stand-in's choice, so restarting an unsharded bot stays instant).
   */
  overLimit: boolean;
  /** The session it started (accepted identifies only). */
  sessionId?: string;
}

/** A gateway session as a test sees it. */
export interface ShardSession {
  sessionId: string;
  shard: ShardPair;
  intents: number;
  /** Its websocket is open; false between a dropped connection and a RESUME. */
  connected: boolean;
  identifiedAt: number;
  /** The guilds whose events it receives: those with `(guild_id >> 22) % num_shards === shard_id`. */
  guildIds: string[];
}

interface Session {
  id: string;
  shard: ShardPair;
  intents: number;
  identifiedAt: number;
  sequence: number;
  replay: { s: number; t: string; d: unknown }[];
  socket: WebSocket | undefined;
}

export interface GatewayOptions {
  state: StandInState;
  voice: VoiceStandIn;
  events: EventEmitter;
  log: Logger;
  heartbeatIntervalMs: number;
  url: () => string;
  /** Buckets of identifies: shard_id % maxConcurrency (session_start_limit.max_concurrency). */
  maxConcurrency: number;
  /** How long a bucket stays taken after an accepted identify (Discord: 5 s). */
  identifyWindowMs: number;
}

/** The guild a dispatch is about, if any: events without one go to shard 0 alone (DMs, as on Discord). */
function guildIdOf(event: string, data: unknown): string | undefined {
  if (!isRecord(data)) return undefined;
  const id = GUILD_OBJECT_EVENTS.has(event) ? data.id : data.guild_id;
  return typeof id === 'string' && /^\d+$/.test(id) ? id : undefined;
}

/** IDENTIFY's `shard`: absent is `[0, 1]`; anything but two whole numbers is null (whether they make a valid shard is `validShard`). */
function readShard(value: unknown): ShardPair | null {
  if (value === undefined || value === null) return UNSHARDED;
  if (!Array.isArray(value) || value.length !== 2) return null;
  const id: unknown = value[0];
  const count: unknown = value[1];
  if (typeof id !== 'number' || typeof count !== 'number' || !Number.isSafeInteger(id) || !Number.isSafeInteger(count)) return null;
  return [id, count];
}

function validShard([id, count]: ShardPair): boolean {
  return count >= 1 && id >= 0 && id < count;
}

export class Gateway {
  readonly #options: GatewayOptions;
  readonly #server = new WebSocketServer({ noServer: true });
  /** Every session that can still receive or resume, in the order they identified. */
  #sessions: Session[] = [];
  /** The session of the last accepted IDENTIFY. */
  #latest: Session | undefined;
  readonly #identifies: IdentifyRecord[] = [];
  /** When each rate-limit bucket last had an identify accepted. */
  readonly #bucketTaken = new Map<number, number>();
  #withholdAcks = 0;
  #ready = false;
  #identifiedIntents: number | undefined;

  constructor(options: GatewayOptions) {
    this.#options = options;
    this.#server.on('connection', (socket) => this.#accept(socket));
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** The intents of the last IDENTIFY that carried the right token. */
  get identifiedIntents(): number | undefined {
    return this.#identifiedIntents;
  }

  /** The session of the last accepted IDENTIFY has its websocket open. */
  get connected(): boolean {
    return this.#latest?.socket?.readyState === WebSocket.OPEN;
  }

  /** Every IDENTIFY that arrived, in order, with what became of it. */
  get identifies(): readonly IdentifyRecord[] {
    return this.#identifies;
  }

  /** The sessions that receive events or may resume, in the order they identified. */
  sessions(): ShardSession[] {
    const { state } = this.#options;
    const guildIds = [...state.guilds.values()].filter((guild) => state.botInGuild(guild)).map((guild) => guild.id);
    return this.#sessions.map((session) => ({
      sessionId: session.id,
      shard: session.shard,
      intents: session.intents,
      connected: session.socket?.readyState === WebSocket.OPEN,
      identifiedAt: session.identifiedAt,
      guildIds: guildIds.filter((guildId) => this.#receives(session, guildId)),
    }));
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#server.handleUpgrade(request, socket, head, (ws) => this.#server.emit('connection', ws, request));
  }

  /**
   * Sends a dispatch to every session of the shard its guild belongs to (shard 0 for events without a
   * guild), now, or kept for a RESUME if that session is between connections.
   */
  dispatch(event: string, data: unknown): void {
    const guildId = guildIdOf(event, data);
    // A server the bot is not in sends it nothing but the interactions of members who installed the app.
    const guild = guildId === undefined ? undefined : this.#options.state.guilds.get(guildId);
    if (guild && !this.#options.state.botInGuild(guild) && event !== 'INTERACTION_CREATE') return;
    for (const session of this.#sessions) if (this.#receives(session, guildId)) this.#dispatchTo(session, event, data);
  }

  #receives(session: Session, guildId: string | undefined): boolean {
    const [shardId, shardCount] = session.shard;
    return guildId === undefined ? shardId === 0 : shardOfGuild(guildId, shardCount) === shardId;
  }

  #dispatchTo(session: Session, event: string, data: unknown): void {
    const needed = MESSAGE_EVENTS.has(event) && guildIdOf(event, data) === undefined ? INTENT.directMessages : (EVENT_INTENTS[event] ?? 0);
    if ((session.intents & needed) !== needed) return;
    const payload = { op: OP.dispatch, t: event, s: ++session.sequence, d: data };
    session.replay.push({ s: payload.s, t: event, d: data });
    if (session.replay.length > REPLAY_LIMIT) session.replay.shift();
    this.#send(session.socket, payload);
  }

  /** Drops every session's connection as a network failure would (no close frame); the bot resumes. */
  dropConnection(): void {
    for (const session of this.#sessions) session.socket?.terminate();
  }

  /**
   * Drops the connections of one shard's sessions: without a code as a network failure would (no close
   * frame), with one as Discord closing with that code. The sessions stay resumable. Returns how many
   * connections it dropped, and throws when that shard has none open.
   */
  dropShardConnection(shardId: number, code?: number): number {
    const open = this.#sessions.filter((session) => session.shard[0] === shardId && session.socket?.readyState === WebSocket.OPEN);
    if (open.length === 0) throw new Error(`no session of shard ${shardId} is connected`);
    for (const session of open) {
      if (code === undefined) session.socket?.terminate();
      else session.socket?.close(code, 'Closed by the test.');
    }
    return open.length;
  }

  /** The next heartbeats go unanswered, so the bot declares the connection dead and resumes. */
  withholdHeartbeatAck(count = 1): void {
    this.#withholdAcks += count;
  }

  guildCreate(guild: Guild): Record<string, unknown> {
    const { state } = this.#options;
    return {
      id: guild.id,
      name: guild.name,
      icon: null,
      owner_id: guild.ownerId,
      unavailable: false,
      features: [],
      member_count: guild.members.size,
      joined_at: new Date().toISOString(),
      large: false,
      premium_tier: 0,
      preferred_locale: guild.preferredLocale,
      roles: guild.roles.map(roleObject),
      channels: guild.channels.map(channelObject),
      members: [...guild.members.values()].flatMap((member) => {
        const user = state.users.get(member.userId);
        return user ? [memberObject(member, user)] : [];
      }),
      voice_states: [...guild.voiceStates.entries()].map(([userId, voiceState]) =>
        this.#voiceState(guild, userId, voiceState.channelId, voiceState.sessionId),
      ),
      presences: [],
      threads: [],
      stage_instances: [],
      guild_scheduled_events: [],
      emojis: [],
      stickers: [],
    };
  }

  #voiceState(guild: Guild, userId: string, channelId: string | null, sessionId: string): Record<string, unknown> {
    const member = guild.members.get(userId);
    const user = this.#options.state.users.get(userId);
    return {
      guild_id: guild.id,
      channel_id: channelId,
      user_id: userId,
      session_id: sessionId,
      deaf: false,
      mute: false,
      self_deaf: false,
      self_mute: false,
      self_video: false,
      suppress: false,
      request_to_speak_timestamp: null,
      ...(member && user ? { member: memberObject(member, user) } : {}),
    };
  }

  /** A simulated user joins (channelId) or leaves (null) a voice channel. */
  userVoiceState(guild: Guild, userId: string, channelId: string | null, options?: VoiceUserOptions): void {
    const sessionId = guild.voiceStates.get(userId)?.sessionId ?? randomBytes(16).toString('hex');
    if (channelId) guild.voiceStates.set(userId, { channelId, sessionId });
    else guild.voiceStates.delete(userId);
    this.dispatch('VOICE_STATE_UPDATE', this.#voiceState(guild, userId, channelId, sessionId));
    if (channelId) this.#options.voice.userJoined(guild.id, channelId, userId, options);
    else this.#options.voice.userLeft(guild.id, userId);
  }

  /**
   * Someone else takes the bot out of voice (a server admin's "Disconnect"): Discord tells the bot its
   * voice state is now channel_id null, and the voice server closes its websocket with 4014, after
   * which @discordjs/voice stays disconnected instead of rejoining.
   */
  disconnectBotFromVoice(guild: Guild): void {
    const botId = this.#options.state.botUser.id;
    const previous = guild.voiceStates.get(botId);
    if (!previous) throw new Error(`the bot is in no voice channel of guild ${guild.id}`);
    guild.voiceStates.delete(botId);
    this.dispatch('VOICE_STATE_UPDATE', this.#voiceState(guild, botId, null, previous.sessionId));
    this.#options.voice.botLeft(guild.id);
  }

  close(): void {
    for (const client of this.#server.clients) client.terminate();
    this.#server.close();
  }

  #send(socket: WebSocket | undefined, payload: unknown): void {
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(payload));
  }

  #accept(socket: WebSocket): void {
    this.#options.events.emit('gatewayOpen');
    this.#send(socket, { op: OP.hello, d: { heartbeat_interval: this.#options.heartbeatIntervalMs } });
    socket.on('message', (data: RawData) => this.#receive(socket, data));
    socket.on('close', () => {
      const session = this.#sessionOf(socket);
      if (session) session.socket = undefined;
      this.#options.events.emit('gatewayClose', { shard: session?.shard });
    });
  }

  #sessionOf(socket: WebSocket): Session | undefined {
    return this.#sessions.find((session) => session.socket === socket);
  }

  #receive(socket: WebSocket, data: RawData): void {
    let message: unknown;
    try {
      message = JSON.parse(websocketText(data));
    } catch {
      socket.close(4002, 'Error while decoding payload.');
      return;
    }
    if (!isRecord(message)) return;
    const payload = isRecord(message.d) ? message.d : {};
    switch (message.op) {
      case OP.heartbeat:
        if (this.#withholdAcks > 0) this.#withholdAcks--;
        else this.#send(socket, { op: OP.heartbeatAck });
        break;
      case OP.identify:
        this.#identify(socket, payload);
        break;
      case OP.resume:
        this.#resume(socket, payload);
        break;
      case OP.voiceStateUpdate:
        this.#botVoiceState(socket, payload);
        break;
      default:
        break;
    }
  }

  #identify(socket: WebSocket, payload: Readonly<Record<string, unknown>>): void {
    const { state, maxConcurrency, identifyWindowMs } = this.#options;
    const at = Date.now();
    const shard = readShard(payload.shard);
    const bucket = shard ? shard[0] % maxConcurrency : null;
    const lastTaken = bucket === null ? undefined : this.#bucketTaken.get(bucket);
    const overLimit = lastTaken !== undefined && at - lastTaken < identifyWindowMs;
    const refuse = (outcome: IdentifyOutcome, close?: { code: number; reason: string }): void => {
      this.#identifies.push({ shard, at, bucket, outcome, overLimit });
      this.#options.events.emit('identifyRefused', { shard, outcome });
      if (close) socket.close(close.code, close.reason);
      else this.#send(socket, { op: OP.invalidSession, d: false });
    };
    // A socket carries one session: a second IDENTIFY on it is Discord's 4005.
    if (this.#sessionOf(socket))
      return refuse('already-authenticated', { code: CLOSE.alreadyAuthenticated, reason: 'Already authenticated.' });
    if (payload.token !== state.botToken)
      return refuse('authentication-failed', { code: CLOSE.authenticationFailed, reason: 'Authentication failed.' });
    if (!shard || !validShard(shard)) return refuse('invalid-shard', { code: CLOSE.invalidShard, reason: 'Invalid shard.' });
    const intents = typeof payload.intents === 'number' ? payload.intents : 0;
    // Refused before the rate limit: a refused identify takes no bucket (README.md, "Privileged intents").
    if (state.privilegedIntents.disallowed(intents).length > 0) return refuse('disallowed-intents', DISALLOWED_INTENTS_CLOSE);
    // Discord answers an identify over max_concurrency with op 9; the session is not started.
    if (overLimit && shard[1] > 1) return refuse('rate-limited');
    if (bucket !== null) this.#bucketTaken.set(bucket, at);

    this.#identifiedIntents = intents;
    // Discord lets several sessions hold the same shard, each receiving its events; a new session only
    // replaces those of its shard whose connection is gone (their client gave them up to identify anew).
    this.#sessions = this.#sessions.filter((session) => session.shard[0] !== shard[0] || session.socket !== undefined);
    const session: Session = { id: randomBytes(16).toString('hex'), shard, intents, identifiedAt: at, sequence: 0, replay: [], socket };
    this.#sessions.push(session);
    this.#latest = session;
    this.#identifies.push({ shard, at, bucket, outcome: 'accepted', overLimit, sessionId: session.id });
    this.#options.events.emit('identify', { intents, shard, sessionId: session.id });
    const guilds = [...state.guilds.values()].filter((guild) => state.botInGuild(guild) && this.#receives(session, guild.id));
    this.#dispatchTo(session, 'READY', {
      v: 10,
      user: { ...userObject(state.botUser), verified: true, mfa_enabled: false },
      guilds: guilds.map((guild) => ({ id: guild.id, unavailable: true })),
      application: { id: state.applicationId, flags: state.privilegedIntents.applicationFlags },
      session_id: session.id,
      resume_gateway_url: this.#options.url(),
      shard: [...shard],
      private_channels: [],
      presences: [],
      guild_join_requests: [],
      user_settings: {},
    });
    for (const guild of guilds) this.#dispatchTo(session, 'GUILD_CREATE', this.guildCreate(guild));
    this.#ready = true;
    this.#options.events.emit('botReady', { shard });
  }

  #resume(socket: WebSocket, payload: Readonly<Record<string, unknown>>): void {
    if (this.#sessionOf(socket)) {
      socket.close(CLOSE.alreadyAuthenticated, 'Already authenticated.');
      return;
    }
    const session = this.#sessions.find((candidate) => candidate.id === payload.session_id);
    if (!session || payload.token !== this.#options.state.botToken) {
      this.#send(socket, { op: OP.invalidSession, d: false });
      return;
    }
    session.socket = socket;
    const since = typeof payload.seq === 'number' ? payload.seq : 0;
    const missed = session.replay.filter((entry) => entry.s > since);
    for (const entry of missed) this.#send(socket, { op: OP.dispatch, ...entry });
    this.#dispatchTo(session, 'RESUMED', {});
    this.#options.events.emit('resumed', { replayed: missed.length, shard: session.shard, sessionId: session.id });
  }

  /**
   * The bot joins or leaves voice: VOICE_STATE_UPDATE first, then VOICE_SERVER_UPDATE (order matters).
   * Op 4 must come over a session of the guild's shard; from another it is ignored (and logged), so a bot
   * that sends it on the wrong shard never gets its voice connection.
   */
  #botVoiceState(socket: WebSocket, payload: Readonly<Record<string, unknown>>): void {
    const { state, voice } = this.#options;
    const guild = typeof payload.guild_id === 'string' ? state.guilds.get(payload.guild_id) : undefined;
    if (!guild) return;
    const session = this.#sessionOf(socket);
    if (session && !this.#receives(session, guild.id)) {
      this.#options.log.warn("discord stand-in ignored a voice state update sent on another shard than its guild's", {
        guildId: guild.id,
        sentOn: session.shard,
        guildShard: shardOfGuild(guild.id, session.shard[1]),
      });
      return;
    }
    const channelId = typeof payload.channel_id === 'string' ? payload.channel_id : null;
    const botId = state.botUser.id;
    this.#options.events.emit('botVoiceState', { guildId: guild.id, channelId });
    if (!channelId) {
      const previous = guild.voiceStates.get(botId);
      guild.voiceStates.delete(botId);
      voice.botLeft(guild.id);
      this.dispatch('VOICE_STATE_UPDATE', this.#voiceState(guild, botId, null, previous?.sessionId ?? randomBytes(16).toString('hex')));
      return;
    }
    // Discord does not answer a join the bot has no Connect permission for: the connection never starts.
    if (state.deniedBotPermissions.get(channelId)?.has('connect')) return;
    const sessionId = randomBytes(16).toString('hex');
    guild.voiceStates.set(botId, { channelId, sessionId });
    const { token } = voice.expectBot({ guildId: guild.id, channelId, userId: botId, sessionId });
    this.dispatch('VOICE_STATE_UPDATE', this.#voiceState(guild, botId, channelId, sessionId));
    this.dispatch('VOICE_SERVER_UPDATE', { token, guild_id: guild.id, endpoint: voice.endpoint });
  }
}
