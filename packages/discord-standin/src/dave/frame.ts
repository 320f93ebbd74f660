// DAVE media frames (whitepaper "Sender Key Derivation", "Payload Format", "Protocol Frame Check"),
// written from the whitepaper on node:crypto, so the simulated members share no code with davey:
//
//   sender base secret = MLS-Exporter("Discord Secure Frames v0", u64 LE sender id, 16)  (dave-mls-member.ts)
//   key(generation)    = the MLS hash ratchet over it: ExpandWithLabel(secret, "key", u32 BE g, 16),
//                        next secret ExpandWithLabel(secret, "secret", u32 BE g, 32)
//   generation         = the truncated nonce's most significant byte; the nonce starts at 1 per key
//   AES-128-GCM, IV = 8 zero bytes then the nonce as u32 LE, the tag cut to 8 bytes
//   frame = ciphertext | tag(8) | ULEB128 nonce | ULEB128 (offset, length) pairs | u8 supplemental size | FA FA
// Opus is encrypted whole (no unencrypted ranges, empty AAD). The silence frame F8 FF FE never is.

import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import { OPUS_SILENCE_FRAME } from '../audio/opus.ts';
import { vector } from './wire.ts';

export const MEDIA_KEY_LABEL = 'Discord Secure Frames v0';
export const MEDIA_BASE_SECRET_BYTES = 16;
const MAGIC_MARKER = Buffer.from([0xfa, 0xfa]);
const TAG_BYTES = 8;
const GENERATION_SHIFT = 24;
/** Tag, a one-byte nonce, the size byte and the marker: the least supplemental data a frame can carry. */
const MIN_SUPPLEMENTAL_BYTES = TAG_BYTES + 1 + 1 + MAGIC_MARKER.length;

function hkdfExpandSha256(prk: Buffer, info: Buffer, length: number): Buffer {
  // RFC 5869 HKDF-Expand by hand: the ratchet's first secret is a 16-byte PRK, which HMAC accepts.
  const blocks: Buffer[] = [];
  let previous = Buffer.alloc(0);
  for (let counter = 1, total = 0; total < length; counter++) {
    previous = createHmac('sha256', prk)
      .update(Buffer.concat([previous, info, Buffer.from([counter])]))
      .digest();
    blocks.push(previous);
    total += previous.length;
  }
  return Buffer.concat(blocks).subarray(0, length);
}

/** RFC 9420 ExpandWithLabel with SHA-256. */
function expandWithLabel(secret: Buffer, label: string, context: Buffer, length: number): Buffer {
  const size = Buffer.alloc(2);
  size.writeUInt16BE(length);
  return hkdfExpandSha256(secret, Buffer.concat([size, vector(Buffer.from(`MLS 1.0 ${label}`)), vector(context)]), length);
}

function deriveTreeSecret(secret: Buffer, label: string, generation: number, length: number): Buffer {
  const context = Buffer.alloc(4);
  context.writeUInt32BE(generation >>> 0);
  return expandWithLabel(secret, label, context, length);
}

/** One sender's key ratchet for one epoch: the key of any generation, derived forwards as needed. */
export class HashRatchet {
  #next: Buffer;
  #nextGeneration = 0;
  readonly #keys = new Map<number, Buffer>();

  constructor(baseSecret: Uint8Array) {
    this.#next = Buffer.from(baseSecret);
  }

  key(generation: number): Buffer {
    const cached = this.#keys.get(generation);
    if (cached) return cached;
    if (generation < this.#nextGeneration) throw new Error(`the key of generation ${generation} was erased`);
    while (this.#nextGeneration <= generation) {
      const current = this.#nextGeneration;
      this.#keys.set(current, deriveTreeSecret(this.#next, 'key', current, 16));
      this.#next = deriveTreeSecret(this.#next, 'secret', current, 32);
      this.#nextGeneration++;
    }
    const key = this.#keys.get(generation);
    if (!key) throw new Error(`no key for generation ${generation}`);
    return key;
  }
}

function writeUleb128(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

function readUleb128(bytes: Buffer, offset: number, end: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (let index = offset; index < end && index < offset + 5; index++) {
    const byte = bytes[index] ?? 0;
    value += (byte & 0x7f) * scale;
    scale *= 0x80;
    if ((byte & 0x80) === 0) return { value, next: index + 1 };
  }
  throw new Error('bad ULEB128');
}

function ivFor(nonce: number): Buffer {
  const iv = Buffer.alloc(12);
  iv.writeUInt32LE(nonce >>> 0, 8);
  return iv;
}

export function isSilence(frame: Buffer): boolean {
  return frame.equals(OPUS_SILENCE_FRAME);
}

/** One sender's encryptor for one epoch: a new one per epoch, so the nonce starts again at 1. */
export class FrameEncryptor {
  readonly #ratchet: HashRatchet;
  #nonce = 0;

  constructor(baseSecret: Uint8Array) {
    this.#ratchet = new HashRatchet(baseSecret);
  }

  encryptOpus(frame: Buffer): Buffer {
    if (isSilence(frame)) return frame;
    this.#nonce = (this.#nonce + 1) >>> 0;
    const nonce = this.#nonce;
    const cipher = createCipheriv('aes-128-gcm', this.#ratchet.key(nonce >>> GENERATION_SHIFT), ivFor(nonce), { authTagLength: TAG_BYTES });
    const ciphertext = Buffer.concat([cipher.update(frame), cipher.final()]);
    const nonceBytes = writeUleb128(nonce);
    const supplementalSize = TAG_BYTES + nonceBytes.length + 1 + MAGIC_MARKER.length;
    return Buffer.concat([ciphertext, cipher.getAuthTag(), nonceBytes, Buffer.from([supplementalSize]), MAGIC_MARKER]);
  }
}

export interface ProtocolFrame {
  media: Buffer;
  tag: Buffer;
  nonce: number;
  ranges: { offset: number; size: number }[];
}

/**
 * The whitepaper's protocol frame check: the marker, a sensible supplemental size, a ULEB128 nonce and
 * ordered, non-overlapping unencrypted ranges inside the media. Undefined for anything else (a frame
 * sent in the clear).
 */
export function parseProtocolFrame(frame: Buffer): ProtocolFrame | undefined {
  if (frame.length < MIN_SUPPLEMENTAL_BYTES) return undefined;
  if (!frame.subarray(frame.length - MAGIC_MARKER.length).equals(MAGIC_MARKER)) return undefined;
  const supplementalSize = frame[frame.length - 3] ?? 0;
  if (supplementalSize < MIN_SUPPLEMENTAL_BYTES || supplementalSize > frame.length) return undefined;
  const supplementalStart = frame.length - supplementalSize;
  const end = frame.length - 3;
  try {
    const nonce = readUleb128(frame, supplementalStart + TAG_BYTES, end);
    const ranges: { offset: number; size: number }[] = [];
    let position = nonce.next;
    let mediaPosition = 0;
    while (position < end) {
      const offset = readUleb128(frame, position, end);
      const size = readUleb128(frame, offset.next, end);
      if (offset.value < mediaPosition || offset.value + size.value > supplementalStart) return undefined;
      ranges.push({ offset: offset.value, size: size.value });
      mediaPosition = offset.value + size.value;
      position = size.next;
    }
    return {
      media: frame.subarray(0, supplementalStart),
      tag: frame.subarray(supplementalStart, supplementalStart + TAG_BYTES),
      nonce: nonce.value,
      ranges,
    };
  } catch {
    return undefined;
  }
}

/** Decrypts one protocol frame with the sender's ratchet of one epoch; throws when it does not authenticate. */
export function decryptFrame(ratchet: HashRatchet, frame: ProtocolFrame): Buffer {
  const { media, tag, nonce, ranges } = frame;
  // Unencrypted ranges are the AAD, the rest the ciphertext; Opus has none, so this is the plain case.
  const additional: Buffer[] = [];
  const encrypted: Buffer[] = [];
  let position = 0;
  for (const { offset, size } of ranges) {
    encrypted.push(media.subarray(position, offset));
    additional.push(media.subarray(offset, offset + size));
    position = offset + size;
  }
  encrypted.push(media.subarray(position));
  const decipher = createDecipheriv('aes-128-gcm', ratchet.key(nonce >>> GENERATION_SHIFT), ivFor(nonce), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.concat(additional));
  decipher.setAuthTag(tag);
  const plaintext = Buffer.concat([decipher.update(Buffer.concat(encrypted)), decipher.final()]);
  if (ranges.length === 0) return plaintext;
  const out = Buffer.alloc(media.length);
  let plainPosition = 0;
  position = 0;
  for (const { offset, size } of ranges) {
    plaintext.copy(out, position, plainPosition, plainPosition + offset - position);
    plainPosition += offset - position;
    media.copy(out, offset, offset, offset + size);
    position = offset + size;
  }
  plaintext.copy(out, position, plainPosition);
  return out;
}
