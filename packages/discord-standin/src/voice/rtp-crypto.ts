// Transport encryption `aead_aes256_gcm_rtpsize`, the mode the stand-in offers (both directions):
//   [clear header (12 bytes, or 16 with the extension preamble)] [ciphertext] [16-byte GCM tag] [u32BE nonce counter]
// IV = the 4-byte counter followed by 8 zero bytes; AAD = the clear header; the extension body, if any,
// is encrypted and opens the plaintext.

import { createCipheriv, createDecipheriv } from 'node:crypto';
import { buildRtpHeader, parseRtpHeader } from './rtp-header.ts';
import type { ParsedRtpHeader, RtpHeaderFields } from './rtp-header.ts';

export const AEAD_AES256_GCM_RTPSIZE = 'aead_aes256_gcm_rtpsize';
export const SECRET_KEY_LENGTH = 32;
const TAG_LENGTH = 16;
const NONCE_LENGTH = 4;
const IV_LENGTH = 12;

function ivFor(counter: Buffer): Buffer {
  const iv = Buffer.alloc(IV_LENGTH);
  counter.copy(iv, 0, 0, NONCE_LENGTH);
  return iv;
}

export interface SealRtpOptions extends RtpHeaderFields {
  /** The Opus packet. */
  payload: Buffer;
  key: Buffer;
  /** u32 counter, unique per packet for this key and sender. */
  nonce: number;
  /** Header extension body (a multiple of 4 bytes), sent encrypted ahead of the payload. */
  extensionBody?: Buffer;
}

export function sealRtpPacket(options: SealRtpOptions): Buffer {
  const extensionBody = options.extensionBody ?? Buffer.alloc(0);
  if (extensionBody.length % 4 !== 0) throw new RangeError('RTP extension body must be a multiple of 4 bytes');
  const header = buildRtpHeader(options, extensionBody.length / 4);
  const counter = Buffer.alloc(NONCE_LENGTH);
  counter.writeUInt32BE(options.nonce >>> 0, 0);
  const cipher = createCipheriv('aes-256-gcm', options.key, ivFor(counter));
  cipher.setAAD(header);
  const ciphertext = Buffer.concat([cipher.update(extensionBody), cipher.update(options.payload), cipher.final()]);
  return Buffer.concat([header, ciphertext, cipher.getAuthTag(), counter]);
}

export interface OpenedRtpPacket {
  header: ParsedRtpHeader;
  nonce: number;
  /** The Opus packet, with any extension body and padding removed. */
  payload: Buffer;
}

/** Decrypts and authenticates one packet; throws when it is malformed or was not sealed with `key`. */
export function openRtpPacket(packet: Buffer, key: Buffer): OpenedRtpPacket {
  const header = parseRtpHeader(packet);
  if (!header) throw new Error(`RTP packet too short (${packet.length} bytes)`);
  const end = packet.length - NONCE_LENGTH - TAG_LENGTH;
  if (end < header.headerLength) throw new Error(`RTP packet too short (${packet.length} bytes)`);
  const counter = packet.subarray(packet.length - NONCE_LENGTH);
  const decipher = createDecipheriv('aes-256-gcm', key, ivFor(counter));
  decipher.setAAD(packet.subarray(0, header.headerLength));
  decipher.setAuthTag(packet.subarray(end, end + TAG_LENGTH));
  let plaintext = Buffer.concat([decipher.update(packet.subarray(header.headerLength, end)), decipher.final()]);
  if (header.hasPadding && plaintext.length > 0) {
    const padding = plaintext[plaintext.length - 1] ?? 0;
    if (padding <= plaintext.length) plaintext = plaintext.subarray(0, plaintext.length - padding);
  }
  const extensionLength = header.extensionWords * 4;
  if (extensionLength > plaintext.length) throw new Error('RTP extension longer than the packet');
  return { header, nonce: counter.readUInt32BE(0), payload: plaintext.subarray(extensionLength) };
}
