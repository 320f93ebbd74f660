// One voice websocket from the bot's point of view: HELLO, then IDENTIFY (or RESUME), READY, UDP IP
// discovery (handled by the server's UDP side), SELECT_PROTOCOL, SESSION_DESCRIPTION with the call's
// DAVE protocol version, heartbeats and SPEAKING; with DAVE, the bot's binary frames (ops 26 and 28) and
// its JSON ops 23 and 31 go to the channel's DAVE call. Anything out of order closes the socket with
// the code Discord uses.

import type { RawData, WebSocket } from 'ws';
import type { Logger } from '../lib/log.ts';
import { AEAD_AES256_GCM_RTPSIZE } from './rtp-crypto.ts';
import type { ClientDaveMessage } from '../dave/sim-member.ts';
import { parseClientBinaryFrame } from '../dave/wire.ts';
import type { BotConnection } from './bot-connection.ts';
import { VoiceCloseCode, VoiceOp, isDaveOp, parseClientMessage } from './protocol.ts';
import type { IdentifyData, ResumeData } from './protocol.ts';

export interface Rejection {
  closeCode: number;
  reason: string;
}

/** What a socket needs from the server: session bookkeeping lives there, protocol order lives here. */
export interface VoiceSocketHost {
  readonly heartbeatIntervalMs: number;
  readonly udpAddress: { address: string; port: number };
  readonly log: Logger;
  identify(socket: WebSocket, data: IdentifyData): BotConnection | Rejection;
  resume(socket: WebSocket, data: ResumeData): BotConnection | Rejection;
  /** The DAVE protocol version SESSION_DESCRIPTION announces: the call's (0 without DAVE). */
  daveProtocolVersion(connection: BotConnection): number;
  /** SESSION_DESCRIPTION was sent: the connection can carry audio. */
  sessionDescribed(connection: BotConnection): void;
  /** A DAVE message from the bot: binary ops 26 and 28, JSON ops 23 and 31. */
  daveMessage(connection: BotConnection, message: ClientDaveMessage): void;
  /** Records an op the bot sent (messages before IDENTIFY belong to no guild and are not recorded). */
  botMessage(connection: BotConnection | undefined, op: number): void;
  botSpeaking(connection: BotConnection, speaking: number, ssrc: number | undefined): void;
  socketClosed(connection: BotConnection | undefined, socket: WebSocket, code: number): void;
}

function isRejection(value: BotConnection | Rejection): value is Rejection {
  return 'closeCode' in value;
}

function textOf(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data).toString('utf8');
}

function bytesOf(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? Buffer.from(data) : data;
}

export function attachVoiceSocket(socket: WebSocket, host: VoiceSocketHost): void {
  const log = host.log;
  let connection: BotConnection | undefined;

  const reject = (closeCode: number, reason: string) => {
    log.warn('voice stand-in: rejecting the bot voice websocket', { closeCode, reason, guildId: connection?.guildId });
    socket.close(closeCode, reason);
  };

  // The server speaks first; no seq on HELLO.
  socket.send(JSON.stringify({ op: VoiceOp.Hello, d: { v: 8, heartbeat_interval: host.heartbeatIntervalMs } }));

  socket.on('message', (data, isBinary) => {
    if (isBinary) {
      // Binary frames carry DAVE's MLS messages: [op u8][payload].
      const frame = parseClientBinaryFrame(bytesOf(data));
      host.botMessage(connection, frame?.op ?? -1);
      if (!connection) return reject(VoiceCloseCode.NotAuthenticated, 'a binary message before IDENTIFY');
      if (!frame) return reject(VoiceCloseCode.DecodeError, 'an empty binary message');
      if (host.daveProtocolVersion(connection) === 0) {
        log.warn('voice stand-in: the bot sent a binary (DAVE) message into a call without DAVE', { op: frame.op });
        return;
      }
      host.daveMessage(connection, { kind: 'binary', op: frame.op, payload: frame.payload });
      return;
    }
    const parsed = parseClientMessage(textOf(data));
    if (!parsed.ok) {
      reject(VoiceCloseCode.DecodeError, parsed.reason);
      return;
    }
    const message = parsed.message;
    log.debug('voice stand-in: bot message', { kind: message.kind, guildId: connection?.guildId });

    switch (message.kind) {
      case 'heartbeat':
        host.botMessage(connection, VoiceOp.Heartbeat);
        socket.send(JSON.stringify({ op: VoiceOp.HeartbeatAck, d: { t: message.nonce } }));
        return;
      case 'identify': {
        if (connection) return reject(VoiceCloseCode.AlreadyAuthenticated, 'already identified');
        const result = host.identify(socket, message.data);
        if (isRejection(result)) return reject(result.closeCode, result.reason);
        connection = result;
        host.botMessage(connection, VoiceOp.Identify);
        connection.send(VoiceOp.Ready, {
          ssrc: connection.ssrc,
          ip: host.udpAddress.address,
          port: host.udpAddress.port,
          modes: [AEAD_AES256_GCM_RTPSIZE],
          // Deprecated, but real READY still carries it.
          heartbeat_interval: host.heartbeatIntervalMs,
        });
        return;
      }
      case 'resume': {
        if (connection) return reject(VoiceCloseCode.AlreadyAuthenticated, 'already identified');
        const result = host.resume(socket, message.data);
        if (isRejection(result)) return reject(result.closeCode, result.reason);
        connection = result;
        host.botMessage(connection, VoiceOp.Resume);
        connection.send(VoiceOp.Resumed, null);
        return;
      }
      case 'selectProtocol': {
        host.botMessage(connection, VoiceOp.SelectProtocol);
        if (!connection) return reject(VoiceCloseCode.NotAuthenticated, 'SELECT_PROTOCOL before IDENTIFY');
        if (message.data.protocol !== 'udp') return reject(VoiceCloseCode.UnknownProtocol, 'only udp is offered');
        if (message.data.mode !== AEAD_AES256_GCM_RTPSIZE) {
          return reject(VoiceCloseCode.UnknownEncryptionMode, `only ${AEAD_AES256_GCM_RTPSIZE} is offered`);
        }
        connection.botAddress = { address: message.data.address, port: message.data.port };
        connection.send(VoiceOp.SessionDescription, {
          mode: AEAD_AES256_GCM_RTPSIZE,
          secret_key: [...connection.secretKey],
          // 0 declines DAVE end-to-end encryption: the client then sends and expects no ops 21-31.
          dave_protocol_version: host.daveProtocolVersion(connection),
          audio_codec: 'opus',
          video_codec: null,
          media_session_id: `standin-${connection.ssrc}`,
        });
        host.sessionDescribed(connection);
        return;
      }
      case 'speaking':
        host.botMessage(connection, VoiceOp.Speaking);
        if (!connection) return reject(VoiceCloseCode.NotAuthenticated, 'SPEAKING before IDENTIFY');
        host.botSpeaking(connection, message.speaking, message.ssrc);
        return;
      case 'dave':
        host.botMessage(connection, message.op);
        if (!connection) return reject(VoiceCloseCode.NotAuthenticated, `op ${message.op} before IDENTIFY`);
        host.daveMessage(connection, { kind: 'json', op: message.op, transitionId: message.transitionId });
        return;
      case 'other':
        host.botMessage(connection, message.op);
        if (!connection) return reject(VoiceCloseCode.NotAuthenticated, `op ${message.op} before IDENTIFY`);
        if (isDaveOp(message.op)) {
          log.warn('voice stand-in: the bot sent a DAVE op that only the server sends', { op: message.op });
          return;
        }
        if (message.op === VoiceOp.Video) return;
        return reject(VoiceCloseCode.UnknownOpcode, `unknown op ${message.op}`);
    }
  });

  socket.on('close', (code) => host.socketClosed(connection, socket, code));
  socket.on('error', (error) => log.warn('voice stand-in: bot voice websocket error', { error }));
}
