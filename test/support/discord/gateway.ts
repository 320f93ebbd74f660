import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { isRecord } from '../../../src/lib/json.ts';
import { channelObject, memberObject, roleObject, userObject, type Guild, type StandInState } from './state.ts';
import type { VoiceStandIn, VoiceUserOptions } from './voice-contract.ts';
import { websocketText } from '../../../src/lib/websocket-text.ts';

// Discord's gateway as @discordjs/ws 1.2 speaks it (JSON, no compression): HELLO, IDENTIFY, READY, a
// complete GUILD_CREATE per guild, heartbeats, RESUME with replay of what was missed, and the voice state
// handshake for the bot's own voice connections.

const OP = { dispatch: 0, heartbeat: 1, identify: 2, voiceStateUpdate: 4, resume: 6, reconnect: 7, invalidSession: 9, hello: 10, heartbeatAck: 11 } as const;
const INTENT = { guilds: 1 << 0, guildMembers: 1 << 1, guildVoiceStates: 1 << 7, guildMessages: 1 << 9 } as const;
const REPLAY_LIMIT = 2000;

/** Which intent a dispatch needs; anything not listed needs none (READY, INTERACTION_CREATE, RESUMED). */
const EVENT_INTENTS: Record<string, number> = {
  GUILD_CREATE: INTENT.guilds,
  CHANNEL_CREATE: INTENT.guilds,
  CHANNEL_UPDATE: INTENT.guilds,
  THREAD_CREATE: INTENT.guilds,
  GUILD_ROLE_UPDATE: INTENT.guilds,
  GUILD_MEMBER_ADD: INTENT.guildMembers,
  VOICE_STATE_UPDATE: INTENT.guildVoiceStates,
  MESSAGE_CREATE: INTENT.guildMessages,
  MESSAGE_UPDATE: INTENT.guildMessages,
  MESSAGE_DELETE: INTENT.guildMessages,
};

interface Session {
  id: string;
  intents: number;
  sequence: number;
  replay: { s: number; t: string; d: unknown }[];
  socket: WebSocket | undefined;
}

export interface GatewayOptions {
  state: StandInState;
  voice: VoiceStandIn;
  events: EventEmitter;
  heartbeatIntervalMs: number;
  url: () => string;
}

export class Gateway {
  readonly #options: GatewayOptions;
  readonly #server = new WebSocketServer({ noServer: true });
  #session: Session | undefined;
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

  get connected(): boolean {
    return this.#session?.socket?.readyState === WebSocket.OPEN;
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#server.handleUpgrade(request, socket, head, (ws) => this.#server.emit('connection', ws, request));
  }

  /** Sends a dispatch now, or keeps it for a RESUME if the bot is between connections. */
  dispatch(event: string, data: unknown): void {
    const session = this.#session;
    if (!session) return;
    const needed = EVENT_INTENTS[event] ?? 0;
    if ((session.intents & needed) !== needed) return;
    const payload = { op: OP.dispatch, t: event, s: ++session.sequence, d: data };
    session.replay.push({ s: payload.s, t: event, d: data });
    if (session.replay.length > REPLAY_LIMIT) session.replay.shift();
    this.#send(session.socket, payload);
  }

  /** Drops the bot's connection as a network failure would (no close frame); the bot resumes. */
  dropConnection(): void {
    this.#session?.socket?.terminate();
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
      preferred_locale: 'en-US',
      roles: guild.roles.map(roleObject),
      channels: guild.channels.map(channelObject),
      members: [...guild.members.values()].flatMap((member) => {
        const user = state.users.get(member.userId);
        return user ? [memberObject(member, user)] : [];
      }),
      voice_states: [...guild.voiceStates.entries()].map(([userId, voiceState]) => this.#voiceState(guild, userId, voiceState.channelId, voiceState.sessionId)),
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
      if (this.#session?.socket === socket) this.#session.socket = undefined;
      this.#options.events.emit('gatewayClose');
    });
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
        this.#botVoiceState(payload);
        break;
      default:
        break;
    }
  }

  #identify(socket: WebSocket, payload: Readonly<Record<string, unknown>>): void {
    const { state } = this.#options;
    if (payload.token !== state.botToken) {
      socket.close(4004, 'Authentication failed.');
      return;
    }
    const intents = typeof payload.intents === 'number' ? payload.intents : 0;
    this.#identifiedIntents = intents;
    this.#session?.socket?.terminate();
    this.#session = { id: randomBytes(16).toString('hex'), intents, sequence: 0, replay: [], socket };
    this.#options.events.emit('identify', { intents });
    this.dispatch('READY', {
      v: 10,
      user: { ...userObject(state.botUser), verified: true, mfa_enabled: false },
      guilds: [...state.guilds.keys()].map((id) => ({ id, unavailable: true })),
      application: { id: state.applicationId, flags: 0 },
      session_id: this.#session.id,
      resume_gateway_url: this.#options.url(),
      shard: [0, 1],
      private_channels: [],
      presences: [],
      guild_join_requests: [],
      user_settings: {},
    });
    for (const guild of state.guilds.values()) this.dispatch('GUILD_CREATE', this.guildCreate(guild));
    this.#ready = true;
    this.#options.events.emit('botReady');
  }

  #resume(socket: WebSocket, payload: Readonly<Record<string, unknown>>): void {
    const session = this.#session;
    if (!session || payload.session_id !== session.id || payload.token !== this.#options.state.botToken) {
      this.#send(socket, { op: OP.invalidSession, d: false });
      return;
    }
    session.socket = socket;
    const since = typeof payload.seq === 'number' ? payload.seq : 0;
    for (const missed of session.replay.filter((entry) => entry.s > since)) this.#send(socket, { op: OP.dispatch, ...missed });
    this.dispatch('RESUMED', {});
    this.#options.events.emit('resumed', { replayed: session.replay.filter((entry) => entry.s > since).length });
  }

  /** The bot joins or leaves voice: VOICE_STATE_UPDATE first, then VOICE_SERVER_UPDATE (order matters). */
  #botVoiceState(payload: Readonly<Record<string, unknown>>): void {
    const { state, voice } = this.#options;
    const guild = typeof payload.guild_id === 'string' ? state.guilds.get(payload.guild_id) : undefined;
    if (!guild) return;
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
