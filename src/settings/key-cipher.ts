import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';

// Servers' gateway keys at rest: AES-256-GCM under a key derived (HKDF-SHA256) from
// KEY_ENCRYPTION_SECRET, bound to the server's id so a record cannot be moved to another server. A
// record names its format version and which secret sealed it (a non-reversible id), so a changed secret
// is recognised rather than producing garbage, and a rotation can read records sealed under the
// previous secret (KEY_ENCRYPTION_SECRET_PREVIOUS) and seal them again under the current one.

const CIPHER_VERSION = 1;
/** KEY_ENCRYPTION_SECRET's shortest length: the cipher's key is derived from it, so it must be hard to guess. */
export const MIN_ENCRYPTION_SECRET_LENGTH = 16;
const CONTEXT = 'video-voice-bot/guild-gateway-key/v1';
const IV_BYTES = 12;

export interface SealedKey {
  v: number;
  /** Which secret sealed it. */
  kid: string;
  iv: string;
  tag: string;
  data: string;
}

/** The stored key cannot be read: sealed under another secret, or altered. */
export class UnreadableKeyError extends Error {
  readonly reason: 'other-secret' | 'tampered' | 'unknown-version';
  constructor(reason: UnreadableKeyError['reason']) {
    super(`the stored gateway key cannot be read (${reason})`);
    this.name = 'UnreadableKeyError';
    this.reason = reason;
  }
}

interface DerivedSecret {
  kid: string;
  key: Buffer;
}

function derive(secret: string): DerivedSecret {
  return {
    kid: createHmac('sha256', secret).update(`${CONTEXT}/key-id`).digest('hex').slice(0, 16),
    key: Buffer.from(hkdfSync('sha256', secret, CONTEXT, 'aes-256-gcm', 32)),
  };
}

/** A sealed key as a server's settings store it (`v`: the sealing's version, not the record's). */
export const sealedKeySchema: z.ZodType<SealedKey> = z.object({
  v: z.number(),
  kid: z.string(),
  iv: z.string(),
  tag: z.string(),
  data: z.string(),
});

export class KeyCipher {
  readonly #current: DerivedSecret;
  readonly #previous: DerivedSecret | undefined;

  constructor(secret: string, previousSecret?: string) {
    this.#current = derive(secret);
    this.#previous = previousSecret ? derive(previousSecret) : undefined;
  }

  seal(plaintext: string, guildId: string): SealedKey {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv);
    cipher.setAAD(Buffer.from(guildId));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return {
      v: CIPHER_VERSION,
      kid: this.#current.kid,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
  }

  /** The key, and whether the record should be sealed again (it was under the previous secret). */
  open(sealed: SealedKey, guildId: string): { plaintext: string; reseal: boolean } {
    if (sealed.v !== CIPHER_VERSION) throw new UnreadableKeyError('unknown-version');
    const secret = sealed.kid === this.#current.kid ? this.#current : sealed.kid === this.#previous?.kid ? this.#previous : undefined;
    if (!secret) throw new UnreadableKeyError('other-secret');
    try {
      const decipher = createDecipheriv('aes-256-gcm', secret.key, Buffer.from(sealed.iv, 'base64'));
      decipher.setAAD(Buffer.from(guildId));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      const plaintext = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
      return { plaintext, reseal: secret !== this.#current };
    } catch {
      throw new UnreadableKeyError('tampered');
    }
  }
}
