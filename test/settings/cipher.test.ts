import { describe, expect, it } from 'vitest';
import { KeyCipher, UnreadableKeyError } from '../../src/settings/key-cipher.ts';

const GUILD = '123456789012345678';
const KEY = 'sk-gateway-0123456789abcdef';

describe('sealing server keys', () => {
  it('opens what it sealed, and the sealed record does not contain the key', () => {
    const cipher = new KeyCipher('a-long-encryption-secret');
    const sealed = cipher.seal(KEY, GUILD);
    expect(JSON.stringify(sealed)).not.toContain(KEY);
    expect(JSON.stringify(sealed)).not.toContain('a-long-encryption-secret');
    expect(cipher.open(sealed, GUILD)).toEqual({ plaintext: KEY, reseal: false });
    expect(cipher.seal(KEY, GUILD).iv).not.toBe(sealed.iv);
  });

  it('recognises a record sealed under another secret', () => {
    const sealed = new KeyCipher('the-old-secret-value').seal(KEY, GUILD);
    const error = (() => {
      try {
        new KeyCipher('the-new-secret-value').open(sealed, GUILD);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(UnreadableKeyError);
    expect(error).toMatchObject({ reason: 'other-secret' });
  });

  it('detects tampering and a record moved to another server', () => {
    const cipher = new KeyCipher('a-long-encryption-secret');
    const sealed = cipher.seal(KEY, GUILD);
    const flipped = Buffer.from(sealed.data, 'base64');
    flipped[0]! ^= 1;
    expect(() => cipher.open({ ...sealed, data: flipped.toString('base64') }, GUILD)).toThrow(UnreadableKeyError);
    expect(() => cipher.open(sealed, '876543210987654321')).toThrow(/tampered/);
    expect(() => cipher.open({ ...sealed, v: 99 }, GUILD)).toThrow(/unknown-version/);
  });

  it('reads records of the previous secret during a rotation, and asks for them to be sealed again', () => {
    const sealed = new KeyCipher('the-old-secret-value').seal(KEY, GUILD);
    const rotating = new KeyCipher('the-new-secret-value', 'the-old-secret-value');
    expect(rotating.open(sealed, GUILD)).toEqual({ plaintext: KEY, reseal: true });
    const resealed = rotating.seal(KEY, GUILD);
    expect(new KeyCipher('the-new-secret-value').open(resealed, GUILD).plaintext).toBe(KEY);
  });
});
