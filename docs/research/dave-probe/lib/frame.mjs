// DAVE media frame encryption (protocol.md "Sender Key Derivation", "Payload Format"), written from the
// whitepaper with node:crypto only, so it shares no code with @snazzah/davey or libdave.
//
//   sender_base_secret = MLS-Exporter("Discord Secure Frames v0", u64 LE sender user id, 16)
//   key(generation)    = MLS hash ratchet over the base secret (RFC 9420 9.1 DeriveTreeSecret:
//                        "key" 16 bytes, "nonce" 12 bytes (unused), "secret" 32 bytes for the next step)
//   generation         = truncated nonce >> 24 (most significant byte of the 32-bit nonce)
//   AES-128-GCM, 96-bit IV = 8 zero bytes || u32 LE truncated nonce, tag truncated to 8 bytes
//   frame = interleaved media || tag(8) || ULEB128 nonce || ULEB128 (offset,len) pairs || u8 suppl. size || FA FA
// Opus frames are fully encrypted: no unencrypted ranges, empty AAD.

import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import { vec } from './wire.mjs';

export const USER_MEDIA_KEY_BASE_LABEL = 'Discord Secure Frames v0';
export const MAGIC_MARKER = Buffer.from([0xfa, 0xfa]);
export const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
const TAG_BYTES = 8;
const GENERATION_SHIFT = 24;

/** Context for the exporter: the sender's snowflake as u64 little-endian. */
export function userIdLE(userId) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(userId));
  return b;
}

/** Basic credential identity: the snowflake as u64 big-endian. */
export function userIdBE(userId) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(userId));
  return b;
}

function hkdfExpandSha256(prk, info, length) {
  // RFC 5869 HKDF-Expand; the PRK here is only 16 bytes, which HMAC accepts.
  const out = [];
  let t = Buffer.alloc(0);
  let total = 0;
  for (let i = 1; total < length; i++) {
    t = createHmac('sha256', prk).update(Buffer.concat([t, info, Buffer.from([i])])).digest();
    out.push(t);
    total += t.length;
  }
  return Buffer.concat(out).subarray(0, length);
}

/** RFC 9420 ExpandWithLabel with SHA-256. */
export function expandWithLabel(secret, label, context, length) {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(length);
  const info = Buffer.concat([len, vec(Buffer.from(`MLS 1.0 ${label}`)), vec(context)]);
  return hkdfExpandSha256(secret, info, length);
}

/** RFC 9420 DeriveTreeSecret: ExpandWithLabel(secret, label, u32 BE generation, length). */
export function deriveTreeSecret(secret, label, generation, length) {
  const gen = Buffer.alloc(4);
  gen.writeUInt32BE(generation >>> 0);
  return expandWithLabel(secret, label, gen, length);
}

export class HashRatchet {
  #next;
  #nextGeneration = 0;
  #cache = new Map();
  constructor(baseSecret) {
    this.#next = Buffer.from(baseSecret);
  }
  get(generation) {
    const cached = this.#cache.get(generation);
    if (cached) return cached;
    if (generation < this.#nextGeneration) throw new Error(`key for generation ${generation} was erased`);
    while (this.#nextGeneration <= generation) {
      const g = this.#nextGeneration;
      const key = deriveTreeSecret(this.#next, 'key', g, 16);
      const nonce = deriveTreeSecret(this.#next, 'nonce', g, 12);
      this.#next = deriveTreeSecret(this.#next, 'secret', g, 32);
      this.#cache.set(g, { key, nonce });
      this.#nextGeneration++;
    }
    return this.#cache.get(generation);
  }
}

export function writeUleb128(value) {
  const out = [];
  let v = BigInt(value);
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

export function readUleb128(buf, offset, end) {
  let value = 0n;
  let shift = 0n;
  for (let i = offset; i < end; i++) {
    const byte = buf[i];
    value |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
    if ((byte & 0x80) === 0) return [value, i + 1];
    if (shift > 63n) break;
  }
  throw new Error('bad ULEB128');
}

function ivFor(truncatedNonce) {
  const iv = Buffer.alloc(12);
  iv.writeUInt32LE(truncatedNonce >>> 0, 8);
  return iv;
}

/** One sender's encryptor for one epoch (a fresh one per epoch: the nonce restarts). */
export class FrameEncryptor {
  #ratchet;
  #nonce = 0;
  constructor(baseSecret) {
    this.#ratchet = new HashRatchet(baseSecret);
  }
  encryptOpus(frame) {
    if (frame.equals(OPUS_SILENCE)) return frame;
    const nonce = ++this.#nonce;
    const { key } = this.#ratchet.get(nonce >>> GENERATION_SHIFT);
    const cipher = createCipheriv('aes-128-gcm', key, ivFor(nonce), { authTagLength: TAG_BYTES });
    const ciphertext = Buffer.concat([cipher.update(frame), cipher.final()]);
    const tag = cipher.getAuthTag();
    const nonceBytes = writeUleb128(nonce);
    const supplementalSize = TAG_BYTES + nonceBytes.length + 1 + MAGIC_MARKER.length;
    return Buffer.concat([ciphertext, tag, nonceBytes, Buffer.from([supplementalSize]), MAGIC_MARKER]);
  }
}

/** Parse the DAVE footer (the whitepaper's "protocol frame check"). */
export function parseFrame(frame) {
  if (frame.length < TAG_BYTES + 1 + 1 + 2) throw new Error('too short for a DAVE frame');
  if (!frame.subarray(frame.length - 2).equals(MAGIC_MARKER)) throw new Error('no 0xFAFA marker');
  const supplementalSize = frame[frame.length - 3];
  if (supplementalSize < TAG_BYTES + 1 + 1 + 2 || supplementalSize > frame.length) throw new Error('bad supplemental size');
  const suppStart = frame.length - supplementalSize;
  const tag = frame.subarray(suppStart, suppStart + TAG_BYTES);
  const end = frame.length - 3;
  const [nonce, afterNonce] = readUleb128(frame, suppStart + TAG_BYTES, end);
  const ranges = [];
  let p = afterNonce;
  while (p < end) {
    const [offset, q] = readUleb128(frame, p, end);
    const [size, r] = readUleb128(frame, q, end);
    ranges.push({ offset: Number(offset), size: Number(size) });
    p = r;
  }
  return { media: frame.subarray(0, suppStart), tag, nonce: Number(nonce), ranges, supplementalSize };
}

/** Decrypt one frame from a sender, given that sender's ratchet for the epoch. */
export function decryptFrame(ratchet, frame) {
  const { media, tag, nonce, ranges } = parseFrame(frame);
  // Split interleaved media into AAD (unencrypted ranges, in order) and ciphertext (the rest).
  const aadParts = [];
  const ctParts = [];
  let pos = 0;
  for (const { offset, size } of ranges) {
    if (offset < pos || offset + size > media.length) throw new Error('bad unencrypted ranges');
    ctParts.push(media.subarray(pos, offset));
    aadParts.push(media.subarray(offset, offset + size));
    pos = offset + size;
  }
  ctParts.push(media.subarray(pos));
  const { key } = ratchet.get(nonce >>> GENERATION_SHIFT);
  const decipher = createDecipheriv('aes-128-gcm', key, ivFor(nonce), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.concat(aadParts));
  decipher.setAuthTag(tag);
  const plaintext = Buffer.concat([decipher.update(Buffer.concat(ctParts)), decipher.final()]);
  // Re-interleave (for Opus there are no ranges, so this is the plaintext itself).
  if (ranges.length === 0) return plaintext;
  const out = Buffer.alloc(media.length);
  let ptPos = 0;
  pos = 0;
  for (const { offset, size } of ranges) {
    const n = offset - pos;
    plaintext.copy(out, pos, ptPos, ptPos + n);
    ptPos += n;
    media.copy(out, offset, offset, offset + size);
    pos = offset + size;
  }
  plaintext.copy(out, pos, ptPos);
  return out;
}
