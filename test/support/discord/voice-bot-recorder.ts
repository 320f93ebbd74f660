// Everything the bot sent in one guild: its RTP audio decrypted and decoded back to PCM (one Opus
// decoder per bot stream, as a real listener would), and its SPEAKING announcements.

import type { Logger } from '../../../src/lib/log.ts';
import { concatPcm } from './audio-format.ts';
import { OPUS_SILENCE_FRAME, OpusFrameDecoder } from './opus-codec.ts';
import { openRtpPacket } from './rtp-crypto.ts';
import { RTP_OPUS_PAYLOAD_TYPE, RTP_VERSION } from './rtp-header.ts';
import type { ReceivedBotAudio } from './voice-contract.ts';

export interface BotAudioFrame extends ReceivedBotAudio {
  ssrc: number;
  /** The Opus packet as the bot sent it (after transport decryption). */
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
  /** Packets that failed authentication or were malformed. */
  undecryptable: number;
  /** Packets that decrypted to something that is not valid Opus. */
  undecodable: number;
}

export class BotAudioRecorder {
  readonly frames: BotAudioFrame[] = [];
  readonly speaking: BotSpeakingEvent[] = [];
  readonly problems: BotPacketProblems = { undecryptable: 0, undecodable: 0 };
  readonly #log: Logger;
  #decoder: OpusFrameDecoder | undefined;
  #decoderSsrc: number | undefined;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Decrypts and decodes one RTP packet from the bot; returns whether it became a frame. */
  record(packet: Buffer, key: Buffer, receivedAt: number): boolean {
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
    // A new SSRC is a new stream (the bot reconnected): a fresh decoder, as Opus state is per stream.
    if (!this.#decoder || this.#decoderSsrc !== header.ssrc) {
      this.#decoder?.close();
      this.#decoder = new OpusFrameDecoder();
      this.#decoderSsrc = header.ssrc;
    }
    let pcm: Int16Array;
    try {
      pcm = this.#decoder.decode(payload);
    } catch (error) {
      this.problems.undecodable++;
      this.#log.warn('voice stand-in: bot sent a packet that is not valid Opus', { error, bytes: payload.length });
      return false;
    }
    this.frames.push({
      receivedAt,
      rtpTimestamp: header.timestamp,
      sequence: header.sequence,
      ssrc: header.ssrc,
      opus: Buffer.from(payload),
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
    this.problems.undecryptable = 0;
    this.problems.undecodable = 0;
  }

  close(): void {
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
