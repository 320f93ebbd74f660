// The Discord stand-in's voice server: a TLS websocket (self-signed certificate made at start) and a
// UDP socket, speaking Discord's voice protocol v8 with `aead_aes256_gcm_rtpsize` and DAVE v1 end-to-end
// encryption (on by default; `dave: false` declines it), so that the real @discordjs/voice connects to it
// unchanged. Simulated users speak PCM to the bot; everything the bot plays is decrypted, decoded and
// recorded per guild.
//
// The stand-in's gateway drives it through VoiceStandIn (expectBot on the bot's op 4, userJoined...);
// tests use the rest (speak, botAudio, waitFor...).

import { createSocket } from 'node:dgram';
import type { Socket as UdpSocket } from 'node:dgram';
import { createServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import { WebSocketServer } from 'ws';
import { silentLogger } from '../lib/log.ts';
import type { Logger } from '../lib/log.ts';
import { generateTone } from '../audio/tone.ts';
import type { ToneOptions } from '../audio/tone.ts';
import { createSelfSignedCertificate } from './tls-certificate.ts';
import type { SelfSignedCertificate } from './tls-certificate.ts';
import type { BotConnection } from './bot-connection.ts';
import type { BotAudioFrame, BotPacketProblems, BotSpeakingEvent } from './bot-recorder.ts';
import { DEFAULT_TRANSITION_TIMEOUT_MS } from '../dave/call.ts';
import type { DaveCallState } from '../dave/call.ts';
import type { BotVoiceSession, VoiceStandIn, VoiceUserOptions } from './contract.ts';
import { VoiceDave } from './dave-controls.ts';
import type { BotMessageRecord, BotSocketClose } from './guild.ts';
import { VoiceSessions } from './sessions.ts';
import { attachVoiceSocket } from './socket.ts';
import type { SimulatedSpeaker, SpeakOptions, SpeakResult } from './speaker.ts';

export type { BotAudioFrame, BotPacketProblems, BotSpeakingEvent } from './bot-recorder.ts';
export type { BotMessageRecord, BotSocketClose } from './guild.ts';
export type { DaveCallState, DaveEvent, HeldWelcome, SimulatedDaveState } from './dave-controls.ts';
export type { VoiceUserOptions } from './contract.ts';
export type { SpeakOptions, SpeakResult } from './speaker.ts';

const HOST = '127.0.0.1';

export interface VoiceServerOptions {
  log?: Logger;
  /** Sent in HELLO; Discord's voice gateway uses 13750 ms. Shorter values make heartbeats testable. */
  heartbeatIntervalMs?: number;
  /**
   * After a user's first SPEAKING on a connection, wait this long before the first audio packet: the
   * bot drops packets from SSRCs it cannot map to a user, and the websocket is slower than UDP.
   */
  speakingLeadMs?: number;
  /**
   * DAVE end-to-end encryption in every voice channel (default true, as on Discord since March 2026).
   * false answers dave_protocol_version 0 and leaves ops 21-31 unanswered, as the stand-in did before.
   */
  dave?: boolean;
  /** How long a DAVE transition waits for every member's op 23 before it executes anyway (2 s). */
  daveTransitionTimeoutMs?: number;
}

export interface BotVoiceConnectionInfo {
  guildId: string;
  channelId: string;
  userId: string;
  ssrc: number;
  /** What the bot offered in IDENTIFY. */
  maxDaveProtocolVersion: number;
  /** The bot's DAVE call (undefined with DAVE off). */
  dave: { protocolVersion: number; epoch: bigint | undefined; groupMembers: string[]; lastTransitionId: number | undefined } | undefined;
}

function infoOf(connection: BotConnection, dave: DaveCallState | undefined): BotVoiceConnectionInfo {
  return {
    guildId: connection.guildId,
    channelId: connection.channelId,
    userId: connection.userId,
    ssrc: connection.ssrc,
    maxDaveProtocolVersion: connection.maxDaveProtocolVersion,
    dave: dave && {
      protocolVersion: dave.protocolVersion,
      epoch: dave.epoch,
      groupMembers: dave.groupMembers,
      lastTransitionId: dave.lastTransitionId,
    },
  };
}

export function startVoiceServer(options: VoiceServerOptions = {}): Promise<VoiceServer> {
  return VoiceServer.start(options);
}

interface VoiceServerParts {
  certificate: SelfSignedCertificate;
  https: HttpsServer;
  udp: UdpSocket;
  log: Logger;
  options: VoiceServerOptions;
}

export class VoiceServer implements VoiceStandIn {
  /** `host:port` of the voice websocket, for VOICE_SERVER_UPDATE (no scheme). */
  readonly endpoint: string;
  /** PEM file of the self-signed certificate: start the bot with NODE_EXTRA_CA_CERTS=<this>. */
  readonly caCertPath: string;
  /** The same certificate as text, for trustCertificateInThisProcess() in in-process tests. */
  readonly certPem: string;
  /** The UDP port audio flows through. */
  readonly udpPort: number;
  /** Voice websocket upgrades refused so far (see refuseConnections). */
  refusedConnections = 0;
  /** Whether voice channels run DAVE. */
  readonly daveEnabled: boolean;
  /** The DAVE side: calls, simulated members' clients, faults. */
  readonly dave: VoiceDave;

  readonly #parts: VoiceServerParts;
  readonly #log: Logger;
  readonly #sessions: VoiceSessions;
  readonly #wss: WebSocketServer;
  /** Voice websocket upgrades still to be refused (see refuseConnections). */
  #refusals = 0;
  #closing: Promise<void> | undefined;

  /** Use startVoiceServer(). */
  static async start(options: VoiceServerOptions): Promise<VoiceServer> {
    const log = options.log ?? silentLogger;
    const certificate = await createSelfSignedCertificate();
    const https = createServer({ cert: certificate.certPem, key: certificate.keyPem });
    const udp = createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        https.once('error', reject);
        https.listen(0, HOST, () => {
          https.off('error', reject);
          resolve();
        });
      });
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(0, HOST, () => {
          udp.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      https.close();
      try {
        udp.close();
      } catch {
        // never bound
      }
      await certificate.remove();
      throw error;
    }
    return new VoiceServer({ certificate, https, udp, log, options });
  }

  private constructor(parts: VoiceServerParts) {
    this.#parts = parts;
    this.#log = parts.log;
    const address = parts.https.address();
    if (address === null || typeof address === 'string') throw new Error('voice stand-in: the TLS server is not listening');
    this.endpoint = `${HOST}:${address.port}`;
    this.udpPort = parts.udp.address().port;
    this.caCertPath = parts.certificate.certPath;
    this.certPem = parts.certificate.certPem;
    this.#sessions = new VoiceSessions({
      log: parts.log,
      udpAddress: { address: HOST, port: this.udpPort },
      heartbeatIntervalMs: parts.options.heartbeatIntervalMs ?? 13_750,
      speakingLeadMs: parts.options.speakingLeadMs ?? 40,
      dave: parts.options.dave ?? true,
      daveTransitionTimeoutMs: parts.options.daveTransitionTimeoutMs ?? DEFAULT_TRANSITION_TIMEOUT_MS,
      sendDatagram: (packet, port, host) => this.#sendDatagram(packet, port, host),
    });

    this.daveEnabled = parts.options.dave ?? true;
    this.dave = new VoiceDave(this.#sessions);
    this.#wss = new WebSocketServer({ server: parts.https, verifyClient: (_info, admit) => this.#admit(admit) });
    const socketHost = this.#sessions.socketHost();
    this.#wss.on('connection', (socket) => attachVoiceSocket(socket, socketHost));
    parts.https.on('tlsClientError', (error) =>
      this.#log.warn('voice stand-in: TLS handshake failed (does the bot trust caCertPath?)', { error }),
    );
    parts.udp.on('message', (message, remote) => this.#sessions.onDatagram(message, remote.address, remote.port));
    parts.udp.on('error', (error) => this.#log.warn('voice stand-in: UDP socket error', { error }));
  }

  // ---- VoiceStandIn: called by the stand-in's gateway -------------------------------------------

  expectBot(session: BotVoiceSession): { token: string } {
    return this.#sessions.expectBot(session);
  }

  botLeft(guildId: string): void {
    this.#sessions.botLeft(guildId);
  }

  /** A simulated user joins a voice channel; `{ dave: false }` for a client without DAVE (the call downgrades). */
  userJoined(guildId: string, channelId: string, userId: string, options?: VoiceUserOptions): void {
    this.#sessions.userJoined(guildId, channelId, userId, options);
  }

  userLeft(guildId: string, userId: string): void {
    this.#sessions.userLeft(guildId, userId);
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  // ---- Simulated users ----------------------------------------------------------------------------

  /**
   * The user speaks `pcm` (48 kHz stereo interleaved) to the bot: SPEAKING first, then Opus frames in
   * real time; silent frames are not sent. Resolves after the last packet. Rejects when the user is
   * not in the bot's voice channel or the bot has no ready connection.
   */
  async speak(guildId: string, userId: string, pcm: Int16Array, options?: SpeakOptions): Promise<SpeakResult> {
    return this.#speakerOf(guildId, userId).speak(pcm, options);
  }

  async speakTone(guildId: string, userId: string, tone: ToneOptions, options?: SpeakOptions): Promise<SpeakResult> {
    return this.speak(guildId, userId, generateTone(tone), options);
  }

  /**
   * Sends one RTP packet carrying `opusPayload` as is (encrypted properly, end to end too in a DAVE call,
   * as a client encrypts whatever its encoder made): for corrupt-packet tests.
   */
  async sendRawPacket(
    guildId: string,
    userId: string,
    opusPayload: Buffer,
    options?: Pick<SpeakOptions, 'headerExtension'>,
  ): Promise<void> {
    return this.#speakerOf(guildId, userId).sendRawPacket(opusPayload, options);
  }

  // ---- What the bot did -----------------------------------------------------------------------------

  /** Every frame the bot sent in the guild, decoded, in arrival order (kept after the bot leaves). */
  botAudio(guildId: string): readonly BotAudioFrame[] {
    return this.#sessions.guilds.get(guildId)?.recorder.frames ?? [];
  }

  /** Resolves with the bot's frames once `predicate` holds for them. */
  waitForBotAudio(
    guildId: string,
    predicate: (frames: readonly BotAudioFrame[]) => boolean,
    timeoutMs?: number,
  ): Promise<readonly BotAudioFrame[]> {
    return this.#sessions.waiters.waitFor(
      () => {
        const frames = this.botAudio(guildId);
        return predicate(frames) ? frames : undefined;
      },
      `bot audio in guild ${guildId}`,
      timeoutMs,
    );
  }

  /** The bot's SPEAKING (op 5) messages, with their arrival times. */
  botSpeaking(guildId: string): readonly BotSpeakingEvent[] {
    return this.#sessions.guilds.get(guildId)?.recorder.speaking ?? [];
  }

  waitForBotSpeaking(
    guildId: string,
    predicate: (events: readonly BotSpeakingEvent[]) => boolean,
    timeoutMs?: number,
  ): Promise<readonly BotSpeakingEvent[]> {
    return this.#sessions.waiters.waitFor(
      () => {
        const events = this.botSpeaking(guildId);
        return predicate(events) ? events : undefined;
      },
      `bot SPEAKING in guild ${guildId}`,
      timeoutMs,
    );
  }

  /** Forgets the guild's recorded frames and SPEAKING events (between steps of a longer test). */
  clearBotAudio(guildId: string): void {
    this.#sessions.guilds.get(guildId)?.recorder.clear();
  }

  /**
   * Packets from the bot that failed transport decryption, were not valid Opus, came in the clear into
   * an end-to-end encrypted call (dropped, as Discord's clients drop them), or were DAVE frames no member
   * in the channel could decrypt.
   */
  botPacketProblems(guildId: string): BotPacketProblems {
    return {
      ...(this.#sessions.guilds.get(guildId)?.recorder.problems ?? {
        undecryptable: 0,
        undecodable: 0,
        unencrypted: 0,
        daveUndecryptable: 0,
      }),
    };
  }

  /** Every op the bot sent on its voice websockets in the guild (DAVE's show as 23, 26, 28 and 31). */
  botMessages(guildId: string): readonly BotMessageRecord[] {
    return this.#sessions.guilds.get(guildId)?.botMessages ?? [];
  }

  /** Close codes of the bot's voice websockets in the guild, in order. */
  botSocketCloses(guildId: string): readonly BotSocketClose[] {
    return this.#sessions.guilds.get(guildId)?.socketCloses ?? [];
  }

  /** UDP keepalives received (8-byte datagrams), over all guilds. */
  get keepalivesReceived(): number {
    return this.#sessions.keepalives;
  }

  /** The bot's connection in the guild if it is connected (its session described, its websocket open). */
  botConnection(guildId: string): BotVoiceConnectionInfo | undefined {
    const connection = this.#connectionOf(guildId);
    return connection?.ready ? infoOf(connection, this.#sessions.botCall(guildId)?.state()) : undefined;
  }

  /**
   * Resolves once the bot's voice connection in the guild is ready for audio both ways: connected, and
   * in a DAVE call settled with everyone in the channel (see dave.settled()).
   */
  waitForBotConnection(guildId: string, timeoutMs?: number): Promise<BotVoiceConnectionInfo> {
    return this.#sessions.waiters.waitFor(
      () => {
        const info = this.botConnection(guildId);
        if (!info || !this.daveEnabled) return info;
        return this.#sessions.botCall(guildId)?.settled() ? info : undefined;
      },
      `the bot's voice connection in guild ${guildId}${this.daveEnabled ? ' (and its DAVE call to settle)' : ''}`,
      timeoutMs,
    );
  }

  /** Resolves once the bot has no open voice websocket in the guild. */
  waitForBotDisconnect(guildId: string, timeoutMs?: number): Promise<true> {
    return this.#sessions.waiters.waitFor(
      () => (this.#connectionOf(guildId)?.socket ? undefined : true),
      `the bot to disconnect from voice in guild ${guildId}`,
      timeoutMs,
    );
  }

  /**
   * Closes the bot's voice websocket with `closeCode`, as Discord does: 4015 (or < 4000) makes the bot
   * RESUME, 4014 leaves it disconnected, other 4xxx make it rejoin through the gateway (op 4).
   */
  disconnectBot(guildId: string, closeCode: number, reason = 'closed by the stand-in'): void {
    const connection = this.#connectionOf(guildId);
    if (!connection) throw new Error(`voice stand-in: the bot has no voice connection in guild ${guildId}`);
    connection.closeSocket(closeCode, reason);
  }

  /**
   * The next `count` voice websocket upgrades are answered with HTTP 503, as a voice server that went
   * away answers: the client sees a websocket error. Combine with disconnectBot (a 4xxx code that makes
   * the bot rejoin) to have the bot's reconnection refused.
   */
  refuseConnections(count: number): void {
    this.#refusals = count;
  }

  // ---- Internals ----------------------------------------------------------------------------------

  #admit(admit: (accept: boolean, status?: number, reason?: string) => void): void {
    if (this.#refusals === 0) return admit(true);
    this.#refusals--;
    this.refusedConnections++;
    this.#log.info('voice stand-in: refusing a voice websocket', { left: this.#refusals });
    admit(false, 503, 'Service Unavailable');
    this.#sessions.waiters.notify();
  }

  #speakerOf(guildId: string, userId: string): SimulatedSpeaker {
    const user = this.#sessions.guilds.get(guildId)?.users.get(userId);
    if (!user) throw new Error(`voice stand-in: user ${userId} is not in a voice channel of guild ${guildId} (call userJoined first)`);
    return user.speaker;
  }

  #connectionOf(guildId: string): BotConnection | undefined {
    return this.#sessions.guilds.get(guildId)?.connection;
  }

  #sendDatagram(packet: Buffer, port: number, address: string): void {
    if (this.#closing) return;
    this.#parts.udp.send(packet, port, address, (error) => {
      if (error) this.#log.warn('voice stand-in: UDP send failed', { error });
    });
  }

  async #shutdown(): Promise<void> {
    const { https, udp, certificate } = this.#parts;
    const wss = this.#wss;
    this.#sessions.shutdown();
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    https.closeAllConnections();
    await new Promise<void>((resolve) => https.close(() => resolve()));
    await new Promise<void>((resolve) => udp.close(() => resolve()));
    await certificate.remove();
  }
}
