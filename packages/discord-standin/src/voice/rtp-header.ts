// RTP headers as Discord uses them for voice: version 2, payload type 0x78 (Opus), no CSRCs, and
// optionally the one-byte header extension profile 0xBEDE that Discord clients attach.

export const RTP_VERSION = 2;
export const RTP_OPUS_PAYLOAD_TYPE = 0x78;
export const RTP_FIXED_HEADER_LENGTH = 12;
const EXTENSION_BIT = 0x10;
const PADDING_BIT = 0x20;
export const RTP_EXTENSION_PROFILE = 0xbede;

export interface RtpHeaderFields {
  /** u16, +1 per packet. */
  sequence: number;
  /** u32, +960 per 20 ms frame (48 kHz clock). */
  timestamp: number;
  ssrc: number;
}

export interface ParsedRtpHeader extends RtpHeaderFields {
  version: number;
  payloadType: number;
  hasPadding: boolean;
  /** Number of 32-bit words of extension body (0 without an extension). */
  extensionWords: number;
  /** The bytes that travel in clear and are authenticated: fixed header plus extension preamble. */
  headerLength: number;
}

/** The header bytes: 12, or 16 with the extension preamble (`0xBEDE`, length in words). */
export function buildRtpHeader(fields: RtpHeaderFields, extensionWords = 0): Buffer {
  const header = Buffer.alloc(RTP_FIXED_HEADER_LENGTH + (extensionWords > 0 ? 4 : 0));
  header[0] = (RTP_VERSION << 6) | (extensionWords > 0 ? EXTENSION_BIT : 0);
  header[1] = RTP_OPUS_PAYLOAD_TYPE;
  header.writeUInt16BE(fields.sequence & 0xffff, 2);
  header.writeUInt32BE(fields.timestamp >>> 0, 4);
  header.writeUInt32BE(fields.ssrc >>> 0, 8);
  if (extensionWords > 0) {
    header.writeUInt16BE(RTP_EXTENSION_PROFILE, 12);
    header.writeUInt16BE(extensionWords, 14);
  }
  return header;
}

/** Parses the clear-text part of an RTP packet; undefined when it is too short to be one. */
export function parseRtpHeader(packet: Buffer): ParsedRtpHeader | undefined {
  if (packet.length < RTP_FIXED_HEADER_LENGTH) return undefined;
  const first = packet[0] ?? 0;
  const hasExtension = (first & EXTENSION_BIT) !== 0;
  const csrcCount = first & 0x0f;
  const fixed = RTP_FIXED_HEADER_LENGTH + csrcCount * 4;
  if (hasExtension && packet.length < fixed + 4) return undefined;
  return {
    version: first >> 6,
    payloadType: (packet[1] ?? 0) & 0x7f,
    hasPadding: (first & PADDING_BIT) !== 0,
    sequence: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    extensionWords: hasExtension ? packet.readUInt16BE(fixed + 2) : 0,
    headerLength: fixed + (hasExtension ? 4 : 0),
  };
}
