// The bot's identified voice session in one guild: its SSRC, the transport key, the websocket it
// currently talks on (a new one after RESUME) and, after SELECT_PROTOCOL, its UDP address. It is the
// bot's side of the channel's DAVE call too: DAVE messages go out on its websocket with the same
// sequence numbers as JSON ones.

import type { WebSocket } from 'ws';
import type { Logger } from '../lib/log.ts';
import { sealRtpPacket } from './rtp-crypto.ts';
import type { SealRtpOptions } from './rtp-crypto.ts';
import type { DaveParticipant } from '../dave/call.ts';
import { serverBinaryFrame } from '../dave/wire.ts';
import type { SpeakerLink } from './speaker.ts';
import { VoiceOp } from './protocol.ts';

export interface BotConnectionOptions {
  guildId: string;
  channelId: string;
  userId: string;
  sessionId: string;
  token: string;
  ssrc: number;
  secretKey: Buffer;
  maxDaveProtocolVersion: number;
  socket: WebSocket;
  sendDatagram: (packet: Buffer, port: number, address: string) => void;
  log: Logger;
}

const OPEN = 1;

export class BotConnection implements SpeakerLink, DaveParticipant {
  readonly kind = 'bot' as const;
  readonly guildId: string;
  readonly userId: string;
  readonly sessionId: string;
  readonly token: string;
  readonly ssrc: number;
  readonly secretKey: Buffer;
  readonly maxDaveProtocolVersion: number;
  channelId: string;
  socket: WebSocket | undefined;
  /** Where the bot receives audio, from SELECT_PROTOCOL; set once the session is described. */
  botAddress: { address: string; port: number } | undefined;
  readonly #sendDatagram: BotConnectionOptions['sendDatagram'];
  readonly #log: Logger;
  // The client keeps its SSRC map across RESUME, so this belongs to the session, not the socket.
  readonly #announcedSsrcs = new Set<number>();
  #sequence = 0;
  #nonce = 0;

  constructor(options: BotConnectionOptions) {
    this.guildId = options.guildId;
    this.channelId = options.channelId;
    this.userId = options.userId;
    this.sessionId = options.sessionId;
    this.token = options.token;
    this.ssrc = options.ssrc;
    this.secretKey = options.secretKey;
    this.maxDaveProtocolVersion = options.maxDaveProtocolVersion;
    this.socket = options.socket;
    this.#sendDatagram = options.sendDatagram;
    this.#log = options.log;
  }

  /** Ready to carry audio both ways: session described and the websocket open (not mid-resume). */
  get ready(): boolean {
    return this.botAddress !== undefined && this.socket?.readyState === OPEN;
  }

  /** Sends a JSON message with the next server sequence number (v8 clients ack it in heartbeats). */
  send(op: number, d: unknown): boolean {
    const socket = this.socket;
    if (socket?.readyState !== OPEN) return false;
    this.#sequence++;
    socket.send(JSON.stringify({ op, d, seq: this.#sequence }));
    return true;
  }

  /** Sends a binary (DAVE) message: u16 sequence number, op, payload. */
  sendBinary(op: number, payload: Buffer): void {
    const socket = this.socket;
    if (socket?.readyState !== OPEN) {
      this.#log.warn('voice stand-in: a DAVE message to the bot is lost: its websocket is not open', { guildId: this.guildId, op });
      return;
    }
    this.#sequence++;
    socket.send(serverBinaryFrame(this.#sequence, op, payload));
  }

  sendJson(op: number, d: Record<string, unknown>): void {
    if (!this.send(op, d))
      this.#log.warn('voice stand-in: a DAVE message to the bot is lost: its websocket is not open', { guildId: this.guildId, op });
  }

  /** The bot learnt the call's protocol version from SESSION_DESCRIPTION; its key package follows by itself. */
  start(): void {}

  get maxProtocolVersion(): number {
    return this.maxDaveProtocolVersion;
  }

  get lastSequence(): number {
    return this.#sequence;
  }

  announceSpeaking(userId: string, ssrc: number): boolean {
    const first = !this.#announcedSsrcs.has(ssrc);
    if (this.send(VoiceOp.Speaking, { user_id: userId, ssrc, speaking: 1 })) this.#announcedSsrcs.add(ssrc);
    return first;
  }

  sendRtp(packet: Omit<SealRtpOptions, 'key' | 'nonce'>, options: { breakSeal?: boolean } = {}): void {
    const address = this.botAddress;
    if (!address) return;
    // One nonce counter per key and direction: AES-GCM must never see an IV twice under one key.
    this.#nonce = (this.#nonce + 1) % 2 ** 32;
    const sealed = sealRtpPacket({ ...packet, key: this.secretKey, nonce: this.#nonce });
    // The tag sits just before the 4-byte nonce counter at the end.
    if (options.breakSeal) sealed[sealed.length - 5]! ^= 0xff;
    this.#sendDatagram(sealed, address.port, address.address);
  }

  /** Closes the current websocket with `code` (the client reacts to the code: resume, rejoin or stop). */
  closeSocket(code: number, reason: string): void {
    const socket = this.socket;
    if (!socket) return;
    this.#log.info('voice stand-in: closing the bot voice websocket', { guildId: this.guildId, code, reason });
    if (socket.readyState === OPEN || socket.readyState === 0) socket.close(code, reason);
  }
}
