// Everything the bot sent in one guild: its RTP audio decrypted and decoded back to PCM (one Opus
// decoder per bot stream, as a real listener would), and its SPEAKING announcements. In a DAVE call a
// simulated member in the bot's channel listens: its DAVE client opens each frame, and a frame the bot
// sent in the clear into the encrypted call is counted and dropped, as Discord's clients drop it.

import type { Logger } from '../lib/log.ts';
import { concatPcm } from '../audio/format.ts';
import { parseProtocolFrame } from '../dave/frame.ts';
import type { OpenedFrame } from '../dave/sim-member.ts';
import { OPUS_SILENCE_FRAME, OpusFrameDecoder } from '../audio/opus.ts';
import { openRtpPacket } from './rtp-crypto.ts';
import { RTP_OPUS_PAYLOAD_TYPE, RTP_VERSION } from './rtp-header.ts';
import type { ParsedRtpHeader } from './rtp-header.ts';
import type { ReceivedBotAudio } from './contract.ts';

export interface BotAudioFrame extends ReceivedBotAudio {
  ssrc: number;
  /** The Opus packet as the bot sent it (after transport decryption, and end-to-end decryption under DAVE). */
  opus: Buffer;
}

export interface BotSpeakingEvent {
  /** ms since the epoch. */
  at: number;
  /** The bot's speaking flags: 0 when it stops, 1 (microphone) when it starts. */
  speaking: number;
  ssrc: number | undefined;
}

export interface BotPacketProblems {
  /** Packets that failed transport authentication or were malformed. */
  undecryptable: number;
  /** Packets that decrypted to something that is not valid Opus. */
  undecodable: number;
  /** Frames the bot sent in the clear into an end-to-end encrypted call: listeners drop them. */
  unencrypted: number;
  /** DAVE frames the listening member could not decrypt (no key for them, or they do not authenticate). */
  daveUndecryptable: number;
}

/** A member in the bot's channel that opens the bot's DAVE frames (a simulated member's client). */
export interface BotFrameListener {
  open(senderId: string, frame: Buffer, options?: { count?: boolean }): OpenedFrame;
  /** Still handling DAVE messages: a frame it cannot open yet may open once it is done. */
  readonly busy: boolean;
  idle(): Promise<void>;
}

/** How the bot's frames are opened end to end: who sent them and who listens (undefined: nobody). */
export interface EndToEnd {
  botUserId: string;
  /** The member whose opening of a frame is recorded (its audio, its problems). */
  listener: () => BotFrameListener | undefined;
  /** Every member in the channel: each opens each frame too, and counts in its own stats what it could not. */
  everyone: () => BotFrameListener[];
}

interface Received {
  header: ParsedRtpHeader;
  payload: Buffer;
  receivedAt: number;
  endToEnd: EndToEnd | undefined;
}

function emptyProblems(): BotPacketProblems {
  return { undecryptable: 0, undecodable: 0, unencrypted: 0, daveUndecryptable: 0 };
}

export class BotAudioRecorder {
  readonly frames: BotAudioFrame[] = [];
  readonly speaking: BotSpeakingEvent[] = [];
  readonly problems: BotPacketProblems = emptyProblems();
  /**
   * DAVE frames that arrived while the listener was still processing the commit that brings their key
   * (davey encrypts with a new epoch's key as soon as it has processed the commit): they are opened
   * once it is done, as a native client that handles a commit within a frame would have opened them.
   */
  framesHeldForKeys = 0;
  readonly #log: Logger;
  readonly #onFrame: () => void;
  readonly #backlog: Received[] = [];
  #draining = false;
  #decoder: OpusFrameDecoder | undefined;
  #decoderSsrc: number | undefined;

  constructor(log: Logger, onFrame: () => void = () => undefined) {
    this.#log = log;
    this.#onFrame = onFrame;
  }

  /** Decrypts and decodes one RTP packet from the bot; returns whether it became a frame now. */
  record(packet: Buffer, key: Buffer, receivedAt: number, endToEnd?: EndToEnd): boolean {
    let opened;
    try {
      opened = openRtpPacket(packet, key);
    } catch (error) {
      this.problems.undecryptable++;
      this.#log.warn('voice stand-in: undecryptable packet from the bot', { error, bytes: packet.length });
      return false;
    }
    const { header, payload } = opened;
    if (header.version !== RTP_VERSION || header.payloadType !== RTP_OPUS_PAYLOAD_TYPE) {
      this.problems.undecodable++;
      this.#log.warn('voice stand-in: bot packet is not RTP/Opus', { payloadType: header.payloadType });
      return false;
    }
    const received: Received = { header, payload, receivedAt, endToEnd };
    // Frames wait behind one that waits for its key, so they are recorded in the order they came.
    if (this.#backlog.length > 0) {
      this.#backlog.push(received);
      return false;
    }
    const outcome = this.#take(received);
    if (outcome === 'wait') {
      this.#backlog.push(received);
      this.#drain();
      return false;
    }
    return outcome;
  }

  /** True when it became a frame, 'wait' when the listener may open it once it has caught up. */
  #take(received: Received): boolean | 'wait' {
    let opus = received.payload;
    const endToEnd = received.endToEnd;
    if (endToEnd) {
      const listener = endToEnd.listener();
      if (listener) {
        const busy = listener.busy;
        const result = listener.open(endToEnd.botUserId, opus, { count: !busy });
        if (result.kind === 'undecryptable' && busy) return 'wait';
        if (result.kind === 'unencrypted') {
          this.problems.unencrypted++;
          this.#log.warn('voice stand-in: the bot sent a frame in the clear into an end-to-end encrypted call; listeners drop it', {
            bytes: opus.length,
          });
          return false;
        }
        if (result.kind === 'undecryptable') {
          this.problems.daveUndecryptable++;
          this.#log.warn('voice stand-in: a DAVE frame from the bot does not decrypt', { reason: result.reason });
          return false;
        }
        for (const other of endToEnd.everyone()) if (other !== listener) other.open(endToEnd.botUserId, opus, { count: !other.busy });
        opus = result.opus;
      } else if (parseProtocolFrame(opus)) {
        // Nobody in the channel holds keys for it.
        this.problems.daveUndecryptable++;
        return false;
      }
    }
    return this.#decode(received, opus);
  }

  #drain(): void {
    if (this.#draining) return;
    const first = this.#backlog[0];
    const listener = first?.endToEnd?.listener();
    if (!first || !listener) {
      this.#flush();
      return;
    }
    this.#draining = true;
    void listener.idle().then(() => {
      this.#draining = false;
      this.#flush();
    });
  }

  #flush(): void {
    let recorded = false;
    while (this.#backlog.length > 0) {
      const next = this.#backlog[0];
      if (!next) break;
      const outcome = this.#take(next);
      if (outcome === 'wait') {
        this.#drain();
        break;
      }
      this.#backlog.shift();
      this.framesHeldForKeys++;
      recorded ||= outcome;
    }
    if (recorded) this.#onFrame();
  }

  #decode(received: Received, opus: Buffer): boolean {
    const { header, receivedAt } = received;
    // A new SSRC is a new stream (the bot reconnected): a fresh decoder, as Opus state is per stream.
    if (!this.#decoder || this.#decoderSsrc !== header.ssrc) {
      this.#decoder?.close();
      this.#decoder = new OpusFrameDecoder();
      this.#decoderSsrc = header.ssrc;
    }
    let pcm: Int16Array;
    try {
      pcm = this.#decoder.decode(opus);
    } catch (error) {
      this.problems.undecodable++;
      this.#log.warn('voice stand-in: bot sent a packet that is not valid Opus', { error, bytes: opus.length });
      return false;
    }
    this.frames.push({
      receivedAt,
      rtpTimestamp: header.timestamp,
      sequence: header.sequence,
      ssrc: header.ssrc,
      opus: Buffer.from(opus),
      pcm,
    });
    return true;
  }

  recordSpeaking(event: BotSpeakingEvent): void {
    this.speaking.push(event);
  }

  clear(): void {
    this.frames.length = 0;
    this.speaking.length = 0;
    Object.assign(this.problems, emptyProblems());
    this.framesHeldForKeys = 0;
  }

  close(): void {
    this.#backlog.length = 0;
    this.#decoder?.close();
    this.#decoder = undefined;
  }
}

/** True for the F8 FF FE frames a player sends when it stops (decoded, they are silence). */
export function isSilenceFrame(frame: BotAudioFrame): boolean {
  return frame.opus.equals(OPUS_SILENCE_FRAME);
}

/** The decoded PCM of consecutive frames, joined. */
export function joinFramePcm(frames: readonly ReceivedBotAudio[]): Int16Array {
  return concatPcm(...frames.map((frame) => frame.pcm));
}
