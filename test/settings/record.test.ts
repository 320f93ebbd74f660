import { describe, expect, it } from 'vitest';
import { defaultGuildSettings, GUILD_SETTINGS_VERSION, noRules, parseGuildSettings } from '../../src/settings/guild-settings.ts';
import { KeyCipher } from '../../src/settings/key-cipher.ts';

describe('stored server settings', () => {
  it('reads an empty record as the defaults: no key, no roles, no limits', () => {
    expect(parseGuildSettings({})).toEqual(defaultGuildSettings());
    expect(() => parseGuildSettings('not an object')).toThrow();
  });

  it('round-trips a full record through JSON; one of the version before versions were counted reads the same, version 1', () => {
    const settings = {
      key: { sealed: new KeyCipher('a-long-encryption-secret').seal('sk-some-gateway-key', 'g'), lastFour: '-key', setBy: 'u1', setAt: 1 },
      layer: 'native' as const,
      defaults: { model: 'svc-imagine-video', resolution: '720p', duration: 6, aspectRatio: '16:9', buttons: 'owner' as const },
      storage: { keepDays: 7, publicLink: true },
      roles: { video: ['r1'], voice: [] },
      limits: { concurrentPerUser: 2, dailyPerUser: 10, dailyPerServer: 50, keyConcurrency: 3 },
      spending: {
        budgets: { member_daily_usd: 1.5, server_daily_usd: 20, server_monthly_usd: 300 },
        alertChannelId: 'c1',
        confirmOverUsd: 2.1,
      },
      history: [{ at: 5, by: 'u1', change: 'set limits' }],
    };
    // A record from before the moderators' rules has none.
    expect(parseGuildSettings(JSON.parse(JSON.stringify(settings)))).toEqual({ ...settings, v: GUILD_SETTINGS_VERSION, rules: noRules() });
    const rules = { blockedWords: ['dragon*', 'red sky'], videoChannels: ['c2'], denied: ['u9'], logChannelId: 'c3' };
    const current = {
      ...settings,
      rules,
      v: GUILD_SETTINGS_VERSION,
      voice: { voice: 'leo', idleMinutes: 7, updatedBy: 'u1', updatedAt: 2 },
    };
    expect(parseGuildSettings(JSON.parse(JSON.stringify(current)))).toEqual(current);
  });

  it('keeps roles and limits when the sealed key is damaged, and marks the key unreadable', () => {
    const parsed = parseGuildSettings({
      key: { sealed: { v: 1, kid: 'x' }, lastFour: 'abcd', setBy: 'u1', setAt: 1 },
      roles: { video: ['r1'] },
      limits: { dailyPerUser: 3 },
    });
    expect(parsed.key).toEqual({ sealed: null, lastFour: 'abcd', setBy: 'u1', setAt: 1 });
    expect(parsed.roles.video).toEqual(['r1']);
    expect(parsed.limits.dailyPerUser).toBe(3);
  });

  it('turns nonsense limits, storage and budgets into "no limit", "no budget" and the allowed range', () => {
    const parsed = parseGuildSettings({
      layer: 'warp',
      defaults: { buttons: 'admins', ping: 'loud' },
      limits: { concurrentPerUser: -1, dailyPerUser: 2.5, dailyPerServer: '9' },
      storage: { keepDays: 365, publicLink: 'yes' },
      spending: { budgets: { member_daily_usd: -1, server_daily_usd: '5' }, alertChannelId: 7, confirmOverUsd: null },
    });
    expect(parsed.layer).toBeUndefined();
    // Who may press the buttons under a video: anyone unless the record says owner.
    expect(parsed.defaults.buttons).toBeUndefined();
    // Whether a member is pinged when their video is ready: on unless the record says off.
    expect(parsed.defaults.ping).toBeUndefined();
    expect(parsed.limits).toEqual({ concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 });
    expect(parsed.limits.keyConcurrency).toBeUndefined();
    expect(parsed.storage).toEqual({ keepDays: 30, publicLink: false });
    expect(parsed.spending).toEqual({ budgets: { member_daily_usd: 0, server_daily_usd: 0, server_monthly_usd: 0 }, confirmOverUsd: 0 });
  });

  it('reads a key concurrency out of 1-100 as none stated, so the line learns it rather than stopping or flooding the key', () => {
    for (const keyConcurrency of [0, -2, 101, 2.5, '4', null]) {
      const parsed = parseGuildSettings({ v: GUILD_SETTINGS_VERSION, limits: { dailyPerUser: 3, keyConcurrency } });
      expect(parsed.limits.keyConcurrency).toBeUndefined();
      expect(parsed.limits.dailyPerUser).toBe(3);
    }
    expect(parseGuildSettings({ v: GUILD_SETTINGS_VERSION, limits: { keyConcurrency: 100 } }).limits.keyConcurrency).toBe(100);
  });

  it('keeps a record whose voice settings are out of their bounds, each one out of them left to its default, and says so once', () => {
    const warnings: unknown[] = [];
    const parsed = parseGuildSettings({ roles: { video: ['r1'] }, voice: { voice: 'leo', silenceMs: 50 } }, (message, fields) =>
      warnings.push({ message, fields }),
    );
    expect(parsed.roles.video).toEqual(['r1']);
    expect(parsed.voice).toEqual({ voice: 'leo' });
    expect(warnings).toHaveLength(1);
  });
});
