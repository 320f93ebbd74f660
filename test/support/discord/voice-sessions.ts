// The voice server's bookkeeping: per guild, who the bot is expected to be (from the gateway's
// expectBot), its identified connection, the simulated users; plus routing of UDP datagrams by SSRC.
// The websocket protocol order lives in voice-socket.ts; the public API in voice-server.ts.

import { randomBytes, randomInt } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { Logger } from '../../../src/lib/log.ts';
import { SECRET_KEY_LENGTH } from './rtp-crypto.ts';
import { buildIpDiscoveryResponse, classifyDatagram } from './udp-datagrams.ts';
import { BotConnection } from './voice-bot-connection.ts';
import type { BotVoiceSession } from './voice-contract.ts';
import { GuildVoice } from './voice-guild.ts';
import { VoiceCloseCode, VoiceOp } from './voice-protocol.ts';
import type { IdentifyData, ResumeData } from './voice-protocol.ts';
import type { Rejection, VoiceSocketHost } from './voice-socket.ts';
import { SimulatedSpeaker } from './voice-speaker.ts';
import { ConditionWaiters } from './voice-waiters.ts';

export interface VoiceSessionsOptions {
  log: Logger;
  udpAddress: { address: string; port: number };
  heartbeatIntervalMs: number;
  speakingLeadMs: number;
  sendDatagram: (packet: Buffer, port: number, address: string) => void;
}

export class VoiceSessions {
  readonly guilds = new Map<string, GuildVoice>();
  /** Every state change notifies these, so tests await conditions instead of sleeping. */
  readonly waiters = new ConditionWaiters();
  keepalives = 0;
  readonly #options: VoiceSessionsOptions;
  readonly #log: Logger;
  /** Bot connections by their SSRC: UDP packets carry nothing else to tell guilds apart. */
  readonly #connectionsBySsrc = new Map<number, BotConnection>();
  readonly #usedSsrcs = new Set<number>();

  constructor(options: VoiceSessionsOptions) {
    this.#options = options;
    this.#log = options.log;
  }

  guild(guildId: string): GuildVoice {
    let guild = this.guilds.get(guildId);
    if (!guild) {
      guild = new GuildVoice(guildId, this.#log);
      this.guilds.set(guildId, guild);
    }
    return guild;
  }

  // ---- The gateway's side (VoiceStandIn) ----------------------------------------------------------

  expectBot(session: BotVoiceSession): { token: string } {
    const guild = this.guild(session.guildId);
    const token = randomBytes(24).toString('base64url');
    guild.expected = { ...session, token };
    // Moved within the guild on the same voice server: the live connection now serves the new channel.
    if (guild.connection && guild.connection.userId === session.userId) guild.connection.channelId = session.channelId;
    this.#log.info('voice stand-in: expecting the bot', {
      guildId: session.guildId,
      channelId: session.channelId,
      userId: session.userId,
    });
    return { token };
  }

  botLeft(guildId: string): void {
    const guild = this.guilds.get(guildId);
    if (!guild) return;
    guild.expected = undefined;
    const connection = guild.connection;
    guild.connection = undefined;
    if (connection) {
      this.#forgetConnection(connection);
      connection.closeSocket(VoiceCloseCode.Disconnected, 'left the voice channel');
    }
    this.#log.info('voice stand-in: the bot left voice', { guildId });
    this.waiters.notify();
  }

  userJoined(guildId: string, channelId: string, userId: string): void {
    const guild = this.guild(guildId);
    const existing = guild.users.get(userId);
    const previousChannel = existing?.channelId;
    if (existing) {
      existing.channelId = channelId;
    } else {
      const speaker = new SimulatedSpeaker({
        userId,
        ssrc: this.#allocateSsrc(),
        link: () => guild.linkFor(userId),
        speakingLeadMs: this.#options.speakingLeadMs,
        log: this.#log.child({ guildId }),
      });
      guild.users.set(userId, { channelId, speaker });
    }
    const connection = guild.connection;
    if (connection?.ready && previousChannel !== channelId) {
      if (channelId === connection.channelId) connection.send(VoiceOp.ClientsConnect, { user_ids: [userId] });
      else if (previousChannel === connection.channelId) connection.send(VoiceOp.ClientDisconnect, { user_id: userId });
    }
  }

  userLeft(guildId: string, userId: string): void {
    const guild = this.guilds.get(guildId);
    const user = guild?.users.get(userId);
    if (!guild || !user) return;
    user.speaker.stop();
    guild.users.delete(userId);
    this.#usedSsrcs.delete(user.speaker.ssrc);
    const connection = guild.connection;
    if (connection?.ready && connection.channelId === user.channelId) {
      connection.send(VoiceOp.ClientDisconnect, { user_id: userId });
    }
  }

  // ---- The bot's side -------------------------------------------------------------------------------

  socketHost(): VoiceSocketHost {
    return {
      heartbeatIntervalMs: this.#options.heartbeatIntervalMs,
      udpAddress: this.#options.udpAddress,
      log: this.#log,
      identify: (socket, data) => this.#identify(socket, data),
      resume: (socket, data) => this.#resume(socket, data),
      sessionDescribed: (connection) => {
        const users = this.guilds.get(connection.guildId)?.usersIn(connection.channelId) ?? [];
        if (users.length > 0) connection.send(VoiceOp.ClientsConnect, { user_ids: users });
        this.#log.info('voice stand-in: bot voice connection ready', { guildId: connection.guildId, ssrc: connection.ssrc });
        this.waiters.notify();
      },
      botMessage: (connection, op) => {
        if (!connection) return;
        this.guilds.get(connection.guildId)?.botMessages.push({ at: Date.now(), op });
        this.waiters.notify();
      },
      botSpeaking: (connection, speaking, ssrc) => {
        this.guilds.get(connection.guildId)?.recorder.recordSpeaking({ at: Date.now(), speaking, ssrc });
        this.waiters.notify();
      },
      socketClosed: (connection, socket, code) => {
        if (!connection) return;
        this.guilds.get(connection.guildId)?.socketCloses.push({ at: Date.now(), code });
        // The session outlives its socket: the bot may RESUME on a new one.
        if (connection.socket === socket) connection.socket = undefined;
        this.#log.info('voice stand-in: bot voice websocket closed', { guildId: connection.guildId, code });
        this.waiters.notify();
      },
    };
  }

  onDatagram(message: Buffer, address: string, port: number): void {
    const datagram = classifyDatagram(message);
    switch (datagram.kind) {
      case 'keepalive':
        this.keepalives++;
        return;
      case 'ipDiscovery':
        if (!this.#connectionsBySsrc.has(datagram.ssrc)) {
          this.#log.warn('voice stand-in: IP discovery for an unknown SSRC', { ssrc: datagram.ssrc });
          return;
        }
        this.#options.sendDatagram(buildIpDiscoveryResponse(datagram.ssrc, address, port), port, address);
        return;
      case 'rtp': {
        const connection = this.#connectionsBySsrc.get(datagram.ssrc);
        if (!connection) return;
        const guild = this.guilds.get(connection.guildId);
        if (guild?.recorder.record(message, connection.secretKey, Date.now())) this.waiters.notify();
        return;
      }
      case 'unknown':
        this.#log.debug('voice stand-in: unrecognised datagram', { bytes: message.length });
        return;
    }
  }

  /** Stops every speaker, frees decoders and fails pending waits; recordings stay readable. */
  shutdown(): void {
    this.waiters.close('the voice server closed');
    for (const guild of this.guilds.values()) {
      for (const user of guild.users.values()) user.speaker.stop();
      guild.recorder.close();
    }
  }

  #allocateSsrc(): number {
    for (;;) {
      const ssrc = randomInt(1, 2 ** 32 - 1);
      if (!this.#usedSsrcs.has(ssrc)) {
        this.#usedSsrcs.add(ssrc);
        return ssrc;
      }
    }
  }

  #forgetConnection(connection: BotConnection): void {
    if (this.#connectionsBySsrc.get(connection.ssrc) === connection) this.#connectionsBySsrc.delete(connection.ssrc);
    this.#usedSsrcs.delete(connection.ssrc);
  }

  #identify(socket: WebSocket, data: IdentifyData): BotConnection | Rejection {
    const guild = this.guilds.get(data.serverId);
    const expected = guild?.expected;
    if (!guild || !expected) {
      return { closeCode: VoiceCloseCode.AuthenticationFailed, reason: `no voice session expected in guild ${data.serverId}` };
    }
    // Name the mismatching fields, never their values: the token is a secret.
    const mismatched = [
      data.userId !== expected.userId && 'user_id',
      data.sessionId !== expected.sessionId && 'session_id',
      data.token !== expected.token && 'token',
    ].filter((field) => field !== false);
    if (mismatched.length > 0) {
      return { closeCode: VoiceCloseCode.AuthenticationFailed, reason: `IDENTIFY does not match: ${mismatched.join(', ')}` };
    }
    const previous = guild.connection;
    if (previous) {
      this.#forgetConnection(previous);
      if (previous.socket !== socket) previous.closeSocket(1000, 'superseded by a new IDENTIFY');
    }
    const connection = new BotConnection({
      guildId: data.serverId,
      channelId: expected.channelId,
      userId: data.userId,
      sessionId: data.sessionId,
      token: data.token,
      ssrc: this.#allocateSsrc(),
      secretKey: randomBytes(SECRET_KEY_LENGTH),
      maxDaveProtocolVersion: data.maxDaveProtocolVersion,
      socket,
      sendDatagram: this.#options.sendDatagram,
      log: this.#log,
    });
    guild.connection = connection;
    this.#connectionsBySsrc.set(connection.ssrc, connection);
    this.#log.info('voice stand-in: bot identified', {
      guildId: data.serverId,
      channelId: expected.channelId,
      ssrc: connection.ssrc,
      maxDaveProtocolVersion: data.maxDaveProtocolVersion,
    });
    return connection;
  }

  #resume(socket: WebSocket, data: ResumeData): BotConnection | Rejection {
    const connection = this.guilds.get(data.serverId)?.connection;
    if (!connection || connection.sessionId !== data.sessionId || connection.token !== data.token) {
      return { closeCode: VoiceCloseCode.SessionNoLongerValid, reason: 'no voice session to resume' };
    }
    if (connection.socket && connection.socket !== socket) connection.closeSocket(1000, 'superseded by RESUME');
    connection.socket = socket;
    this.#log.info('voice stand-in: bot resumed', { guildId: data.serverId, seqAck: data.seqAck });
    this.waiters.notify();
    return connection;
  }
}
