// The voice server's bookkeeping: per guild, who the bot is expected to be (from the gateway's
// expectBot), its identified connection, the simulated users and their DAVE clients, each voice
// channel's DAVE call; plus routing of UDP datagrams by SSRC. The websocket protocol order lives in
// voice-socket.ts; the public API in voice-server.ts.

import { randomBytes, randomInt } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { Logger } from '../lib/log.ts';
import { DaveCall } from '../dave/call.ts';
import { DaveCallFaults } from '../dave/call-faults.ts';
import type { DaveParticipant } from '../dave/call.ts';
import { SimulatedDaveMember } from '../dave/sim-member.ts';
import type { ClientDaveMessage } from '../dave/sim-member.ts';
import { DAVE_PROTOCOL_VERSION } from '../dave/wire.ts';
import { SECRET_KEY_LENGTH } from './rtp-crypto.ts';
import { buildIpDiscoveryResponse, classifyDatagram } from './udp-datagrams.ts';
import { BotConnection } from './bot-connection.ts';
import type { BotVoiceSession, VoiceUserOptions } from './contract.ts';
import { GuildVoice } from './guild.ts';
import type { SimulatedUser } from './guild.ts';
import { VoiceCloseCode, VoiceOp } from './protocol.ts';
import type { IdentifyData, ResumeData } from './protocol.ts';
import type { Rejection, VoiceSocketHost } from './socket.ts';
import { SimulatedSpeaker } from './speaker.ts';
import type { SpeakerDave } from './speaker.ts';
import { ConditionWaiters } from '../lib/condition-waiters.ts';

export interface VoiceSessionsOptions {
  log: Logger;
  udpAddress: { address: string; port: number };
  heartbeatIntervalMs: number;
  speakingLeadMs: number;
  /** Whether voice channels run DAVE (end-to-end encryption). */
  dave: boolean;
  daveTransitionTimeoutMs: number;
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
  /** The DAVE call each bot connection is a member of. */
  readonly #botCalls = new Map<BotConnection, DaveCall>();
  readonly #faults = new WeakMap<DaveCall, DaveCallFaults>();

  constructor(options: VoiceSessionsOptions) {
    this.#options = options;
    this.#log = options.log;
  }

  guild(guildId: string): GuildVoice {
    let guild = this.guilds.get(guildId);
    if (!guild) {
      guild = new GuildVoice(guildId, this.#log, () => this.waiters.notify());
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
    if (guild.connection && guild.connection.userId === session.userId && guild.connection.channelId !== session.channelId) {
      // Its DAVE session belongs to the old channel's group: it joins the new call when it identifies again.
      this.#leaveCall(guild.connection);
      guild.connection.channelId = session.channelId;
    }
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

  userJoined(guildId: string, channelId: string, userId: string, options: VoiceUserOptions = {}): void {
    const guild = this.guild(guildId);
    const existing = guild.users.get(userId);
    const previousChannel = existing?.channelId;
    let user: SimulatedUser;
    if (existing) {
      if (previousChannel !== channelId || (options.dave !== undefined && options.dave !== existing.daveCapable))
        this.#detachDave(guild, existing);
      existing.channelId = channelId;
      existing.daveCapable = options.dave ?? existing.daveCapable;
      user = existing;
    } else {
      const speaker = new SimulatedSpeaker({
        userId,
        ssrc: this.#allocateSsrc(),
        link: () => guild.linkFor(userId),
        dave: () => this.#speakerDave(guild, userId),
        speakingLeadMs: this.#options.speakingLeadMs,
        log: this.#log.child({ guildId }),
      });
      user = { channelId, speaker, daveCapable: options.dave ?? true, dave: undefined };
      guild.users.set(userId, user);
    }
    const connection = guild.connection;
    if (connection?.ready && previousChannel !== channelId) {
      if (channelId === connection.channelId) connection.send(VoiceOp.ClientsConnect, { user_ids: [userId] });
      else if (previousChannel === connection.channelId) connection.send(VoiceOp.ClientDisconnect, { user_id: userId });
    }
    // After op 11 to the bot: the gateway must announce a user before proposing to add them.
    if (!user.dave) this.#attachDave(guild, user, userId);
  }

  userLeft(guildId: string, userId: string): void {
    const guild = this.guilds.get(guildId);
    const user = guild?.users.get(userId);
    if (!guild || !user) return;
    user.speaker.stop();
    this.#detachDave(guild, user);
    guild.users.delete(userId);
    this.#usedSsrcs.delete(user.speaker.ssrc);
    const connection = guild.connection;
    if (connection?.ready && connection.channelId === user.channelId) {
      connection.send(VoiceOp.ClientDisconnect, { user_id: userId });
    }
  }

  /** The DAVE call of a voice channel (undefined with DAVE off). */
  call(guildId: string, channelId: string): DaveCall | undefined {
    if (!this.#options.dave) return undefined;
    const guild = this.guild(guildId);
    let call = guild.calls.get(channelId);
    if (!call) {
      const faults = new DaveCallFaults(() => this.waiters.notify());
      call = new DaveCall({
        guildId,
        channelId,
        transitionTimeoutMs: this.#options.daveTransitionTimeoutMs,
        log: this.#log,
        changed: () => this.waiters.notify(),
        hooks: faults,
      });
      this.#faults.set(call, faults);
      guild.calls.set(channelId, call);
    }
    return call;
  }

  /** The faults a test can make in `call` (voiceServer.dave's damageNextCommit() and the like). */
  faultsOf(call: DaveCall): DaveCallFaults {
    const faults = this.#faults.get(call);
    if (!faults) throw new Error(`voice stand-in: the DAVE call of channel ${call.channelId} is not one of this server's`);
    return faults;
  }

  /** The call the bot's connection in the guild is a member of. */
  botCall(guildId: string): DaveCall | undefined {
    const connection = this.guilds.get(guildId)?.connection;
    return connection ? this.#botCalls.get(connection) : undefined;
  }

  #attachDave(guild: GuildVoice, user: SimulatedUser, userId: string): void {
    const call = this.call(guild.guildId, user.channelId);
    if (!call) return;
    if (!user.daveCapable) {
      const participant: DaveParticipant = {
        userId,
        kind: 'simulated',
        maxProtocolVersion: 0,
        start: () => undefined,
        sendBinary: () => undefined,
        sendJson: () => undefined,
      };
      user.dave = { participant, member: undefined };
      call.connect(participant);
      return;
    }
    const member = new SimulatedDaveMember({
      userId,
      channelId: user.channelId,
      send: (message: ClientDaveMessage) => call.receive(participant, message),
      changed: () => this.waiters.notify(),
      log: this.#log.child({ guildId: guild.guildId }),
    });
    const participant: DaveParticipant = {
      userId,
      kind: 'simulated',
      maxProtocolVersion: DAVE_PROTOCOL_VERSION,
      start: (protocolVersion) => member.start(protocolVersion),
      sendBinary: (op, payload) => member.deliverBinary(op, payload),
      sendJson: (op, d) => member.deliverJson(op, d),
    };
    user.dave = { participant, member };
    call.connect(participant);
  }

  #detachDave(guild: GuildVoice, user: SimulatedUser): void {
    const dave = user.dave;
    if (!dave) return;
    user.dave = undefined;
    dave.member?.close();
    guild.calls.get(user.channelId)?.disconnect(dave.participant);
  }

  #speakerDave(guild: GuildVoice, userId: string): SpeakerDave | undefined {
    const dave = guild.users.get(userId)?.dave;
    if (!dave) return undefined;
    const member = dave.member;
    // A client without DAVE sends in the clear; the call runs at protocol 0 while it is there.
    if (!member) return { protect: (opus) => opus, untilHeardBy: () => Promise.resolve() };
    return {
      protect: (opus) => member.protect(opus),
      untilHeardBy: async (botUserId) => {
        await this.waiters.waitFor(
          () => (member.heardBy(botUserId) ? true : undefined),
          `the bot (${botUserId}) to hold user ${userId}'s DAVE key`,
        );
      },
    };
  }

  #leaveCall(connection: BotConnection): void {
    this.#botCalls.get(connection)?.disconnect(connection);
    this.#botCalls.delete(connection);
  }

  // ---- The bot's side -------------------------------------------------------------------------------

  socketHost(): VoiceSocketHost {
    return {
      heartbeatIntervalMs: this.#options.heartbeatIntervalMs,
      udpAddress: this.#options.udpAddress,
      log: this.#log,
      identify: (socket, data) => this.#identify(socket, data),
      resume: (socket, data) => this.#resume(socket, data),
      daveProtocolVersion: (connection) => this.call(connection.guildId, connection.channelId)?.protocolVersion ?? 0,
      sessionDescribed: (connection) => {
        const users = this.guilds.get(connection.guildId)?.usersIn(connection.channelId) ?? [];
        if (users.length > 0) connection.send(VoiceOp.ClientsConnect, { user_ids: users });
        // After op 11: the bot must know who is in the call before it is asked to add them.
        const call = this.call(connection.guildId, connection.channelId);
        if (call && !this.#botCalls.has(connection)) {
          this.#botCalls.set(connection, call);
          call.connect(connection);
        }
        this.#log.info('voice stand-in: bot voice connection ready', { guildId: connection.guildId, ssrc: connection.ssrc });
        this.waiters.notify();
      },
      botMessage: (connection, op) => {
        if (!connection) return;
        this.guilds.get(connection.guildId)?.botMessages.push({ at: Date.now(), op });
        this.waiters.notify();
      },
      daveMessage: (connection, message) => {
        const call = this.#botCalls.get(connection);
        if (call) call.receive(connection, message);
        else
          this.#log.warn('voice stand-in: a DAVE message from the bot, which is in no DAVE call', {
            guildId: connection.guildId,
            op: message.op,
          });
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
        if (!guild) return;
        const endToEnd = this.#botCalls.has(connection)
          ? {
              botUserId: connection.userId,
              listener: () => guild.listenerFor(connection.channelId, connection.userId),
              everyone: () => guild.daveClientsIn(connection.channelId),
            }
          : undefined;
        if (guild.recorder.record(message, connection.secretKey, Date.now(), endToEnd)) this.waiters.notify();
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
      for (const user of guild.users.values()) {
        user.speaker.stop();
        user.dave?.member?.close();
      }
      for (const call of guild.calls.values()) call.close();
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
    this.#leaveCall(connection);
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
    // Since March 2026 Discord requires end-to-end encryption in voice: a client without DAVE is refused.
    if (this.#options.dave && data.maxDaveProtocolVersion < DAVE_PROTOCOL_VERSION) {
      return { closeCode: VoiceCloseCode.DaveProtocolRequired, reason: 'E2EE/DAVE protocol required' };
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
