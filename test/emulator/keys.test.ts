import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/emulator/config.ts';
import { KeyRegistry } from '../../src/emulator/keys.ts';

// The emulator's key registry as pure logic, with the clock passed in.

describe('realtime client secrets', () => {
  it('are dropped once expired, when the next one is issued (a long run stays small)', () => {
    const keys = new KeyRegistry(resolveConfig());
    const account = keys.account('emulator-key')!;
    const early = keys.issueClientSecret(account, 1, 0);
    expect(keys.authorizeRealtimeSecret(early.value, 'svc-voice-latest', 500)).toMatchObject({ ok: true });
    const late = keys.issueClientSecret(account, 60, 5000);
    // Asked about a moment it was still valid, the dropped secret is simply unknown now.
    expect(keys.authorizeRealtimeSecret(early.value, 'svc-voice-latest', 500)).toMatchObject({ ok: false, status: 401 });
    expect(keys.authorizeRealtimeSecret(late.value, 'svc-voice-latest', 5000)).toMatchObject({ ok: true });
  });
});
