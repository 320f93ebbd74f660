import { worded } from '../support/worded.ts';
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { isRecord } from '../../src/lib/json.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { createLogger, type Logger } from '../../src/lib/log.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';
import { keyNotice, SettingsService, type SettingsOptions } from '../../src/settings/service.ts';
import type { GuildSettings } from '../../src/settings/guild-settings.ts';
import { formatUsage } from '../../src/settings/usage-report.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { costOf, type TaskRecord } from '../../src/video/record.ts';
import { shownInCard, taskRecord } from '../support/task-result.ts';
import { ENGLISH, resolveLocale, t } from '../../src/i18n/index.ts';
import { LimitReachedError } from '../../src/ports/guild-policy.ts';
import { userInstallScope } from '../../src/ports/user-install.ts';
import { formatCostIn, formatEstimateIn } from '../../src/wording/cost.ts';
import { notice, word } from '../../src/wording/notice.ts';

// The settings service on a real SQLite file and the real gateway emulator.

const GUILD = '100000000000000001';
const ADMIN = '200000000000000002';
const SERVER_KEY = 'server-own-key-5b9d7e0c43';
const OPERATOR_KEY = 'operator-key-0f1e2d3c4b';
const SECRET = 'first-encryption-secret-0123456789';
/** What an admin reads when the gateway refuses the key they offered. */
const REFUSED_KEY =
  /^The gateway refused this key \(401 invalid_api_key\): check that it was copied whole and is still active\..* Nothing was stored\.$/;
const NEW_SECRET = 'second-encryption-secret-9876543210';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({
    config: {
      keys: { [SERVER_KEY]: { group: 'two-models', quota_usd: 5 }, [OPERATOR_KEY]: { group: 'two-models', quota_usd: 5 } },
      groups: { 'two-models': { models: ['svc-imagine-video', 'svc-imagine-video-1.5'] } },
    },
  });
});
afterAll(() => emulator?.close());

let directory: string;
let storeFile: string;
let logLines: string[];
let log: Logger;
const opened: { store: Store; clients: GatewayClientPool }[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'settings-'));
  storeFile = join(directory, 'bot.sqlite');
  logLines = [];
  log = createLogger({ level: 'debug', write: (line) => logLines.push(line) });
});
afterEach(async () => {
  for (const { store, clients } of opened.splice(0)) {
    await clients.close();
    await store.close();
  }
  rmSync(directory, { recursive: true, force: true });
});

/** A settings service as the bot builds one; a second call is the bot after a restart on the same file. */
async function service(options: Partial<SettingsOptions> = {}, baseUrl = emulator.baseUrl): Promise<SettingsService> {
  const store = await openStore(`sqlite://${storeFile}`, log);
  const clients = new GatewayClientPool({ baseUrl, log, retry: { maxRetries: 0 } });
  opened.push({ store, clients });
  return new SettingsService({
    store,
    clients,
    log,
    operatorKey: undefined,
    defaultLayer: 'compat',
    gatewayVendor: 'svc',
    encryptionSecret: SECRET,
    prices: DEFAULT_PRICES,
    ...options,
  });
}

async function restart(options: Partial<SettingsOptions> = {}): Promise<SettingsService> {
  const last = opened.pop();
  if (last) {
    await last.clients.close();
    await last.store.close();
  }
  return service(options);
}

function storeBytes(): Buffer {
  return Buffer.concat(readdirSync(directory).map((file) => readFileSync(join(directory, file))));
}

function task(id: string, userId: string, createdAt: number, costUsdTicks?: number): TaskRecord {
  return taskRecord({
    id,
    guildId: GUILD,
    userId,
    createdAt,
    state: 'succeeded',
    outcome: costUsdTicks === undefined ? {} : { costUsdTicks },
    delivery: shownInCard({ as: 'file', fileName: `video-${id}.mp4` }),
  });
}

describe("a server's own gateway key", () => {
  it('is checked with /v1/models, stored sealed, and then used for the server', async () => {
    const settings = await service({ operatorKey: OPERATOR_KEY });
    const result = await settings.setKey(GUILD, `  ${SERVER_KEY}\n`, ADMIN);
    expect(result).toEqual({ ok: true, lastFour: '0c43', models: 2 });
    const check = emulator.requests.findLast((entry) => entry.path === '/v1/models');
    expect(check?.keyId).toBe(emulator.keyIdOf(SERVER_KEY));

    const stored = await settings.get(GUILD);
    expect(stored.key).toMatchObject({ lastFour: '0c43', setBy: ADMIN, setAt: expect.any(Number) });
    expect(stored.history[0]).toMatchObject({ by: ADMIN, change: 'set the gateway key (…0c43)' });
    expect(await settings.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, apiKey: SERVER_KEY, source: 'server', layer: 'compat' });
    expect(await settings.resolveGatewayAccess('another-server')).toMatchObject({ ok: true, apiKey: OPERATOR_KEY, source: 'operator' });
    expect(word(ENGLISH, await settings.keyInUse(GUILD))).toMatch(
      new RegExp(`^this server's own key \\(…0c43, set by <@${ADMIN}> <t:\\d+:R>\\)$`),
    );
    expect(word(ENGLISH, await settings.keyInUse('another-server'))).toBe(
      "the operator's default key (this server has none of its own; `/config key` sets one)",
    );

    const reopened = await restart({ operatorKey: OPERATOR_KEY });
    const access = await reopened.resolveGatewayAccess(GUILD);
    expect(access).toMatchObject({ ok: true, apiKey: SERVER_KEY, source: 'server' });
    expect(access.ok && access.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(access)).not.toContain(SECRET);
  });

  it('never reaches the SQLite file or the logs', async () => {
    const settings = await service();
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    await settings.resolveGatewayAccess(GUILD);
    await settings.update(GUILD, ADMIN, 'set limits', (current) => ({ ...current, limits: { ...current.limits, dailyPerUser: 3 } }));
    const bytes = storeBytes();
    expect(bytes.length).toBeGreaterThan(0);
    expect(bytes.includes(SERVER_KEY)).toBe(false);
    expect(bytes.includes(SECRET)).toBe(false);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(SERVER_KEY);
  });

  it('is refused with the reason when the gateway answers 401, and nothing is stored', async () => {
    const settings = await service();
    const result = await settings.setKey(GUILD, 'not-a-real-key-00000', ADMIN);
    expect(result.ok || word(ENGLISH, result.notice)).toMatch(REFUSED_KEY);
    expect((await settings.get(GUILD)).key).toBeUndefined();
    expect(await settings.resolveGatewayAccess(GUILD)).toEqual({ ok: false, reason: 'no-key', notice: keyNotice('noKey') });
    expect(word(ENGLISH, await settings.keyInUse(GUILD))).toBe(
      'none: `/video` and `/voice` cannot work until a server admin sets a key with `/config key`',
    );
    expect(await settings.setKey(GUILD, 'has spaces in it', ADMIN)).toEqual({ ok: false, notice: keyNotice('notAKey') });
  });

  it('names the request id when the gateway fails otherwise, and the key stays out of the message', async () => {
    const failing: Server = createServer((_request, response) => {
      response.writeHead(503, { 'content-type': 'application/json', 'x-request-id': 'req_settings_503' });
      response.end(JSON.stringify({ error: { code: 'service_unavailable', message: 'down for maintenance' } }));
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const address = failing.address();
      if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
      const settings = await service({}, `http://127.0.0.1:${address.port}`);
      const result = await settings.setKey(GUILD, SERVER_KEY, ADMIN);
      expect(result.ok).toBe(false);
      const message = result.ok ? '' : word(ENGLISH, result.notice);
      expect(message).toContain('503');
      expect(message).toContain('req_settings_503');
      expect(message).not.toContain(SERVER_KEY);
      expect((await settings.get(GUILD)).key).toBeUndefined();
    } finally {
      await new Promise((resolve) => failing.close(resolve));
    }
  });

  it('is stored when the gateway takes it but answers a model list the client cannot read (its shape is not in the spec)', async () => {
    const gateway: Server = createServer((request, response) => {
      const ok = request.headers.authorization === `Bearer ${SERVER_KEY}`;
      response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json; charset=utf-8' });
      response.end(JSON.stringify(ok ? { available: 'svc-imagine-video' } : { error: { code: 'invalid_api_key', message: 'no' } }));
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    try {
      const address = gateway.address();
      if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
      const settings = await service({}, `http://127.0.0.1:${address.port}`);
      expect(await settings.setKey(GUILD, SERVER_KEY, ADMIN)).toEqual({ ok: true, lastFour: '0c43', models: undefined });
      expect((await settings.get(GUILD)).key).toMatchObject({ lastFour: '0c43' });
      expect(worded(await settings.setKey(GUILD, 'not-a-real-key-00000', ADMIN))).toEqual({
        ok: false,
        message: expect.stringMatching(REFUSED_KEY),
      });
    } finally {
      gateway.closeAllConnections();
      await new Promise((resolve) => gateway.close(resolve));
    }
  });

  it('cannot be stored without KEY_ENCRYPTION_SECRET, which the admin and the log are told', async () => {
    const settings = await service({ encryptionSecret: undefined, operatorKey: OPERATOR_KEY });
    expect(settings.canStoreKeys).toBe(false);
    const requestsBefore = emulator.requests.length;
    expect(await settings.setKey(GUILD, SERVER_KEY, ADMIN)).toEqual({ ok: false, notice: keyNotice('noSecret') });
    // The admin can pass on exactly what the operator must do.
    expect(word(ENGLISH, keyNotice('noSecret'))).toContain(
      'must set the environment variable KEY_ENCRYPTION_SECRET (a random string of at least 16 characters',
    );
    expect(word(ENGLISH, keyNotice('noSecret'))).toContain('restart the bot');
    expect(emulator.requests).toHaveLength(requestsBefore);
    expect(logLines.some((line) => line.includes('"level":"warn"') && line.includes('KEY_ENCRYPTION_SECRET is not set'))).toBe(true);
    // The operator's key still serves the server.
    expect(await settings.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, source: 'operator' });
  });

  it('asks to be set again when the secret changed or the record was altered, without throwing', async () => {
    const first = await service({ operatorKey: OPERATOR_KEY });
    await first.setKey(GUILD, SERVER_KEY, ADMIN);

    const changed = await restart({ encryptionSecret: NEW_SECRET, operatorKey: OPERATOR_KEY });
    // Never silently falls back to the operator's key: the admins chose their own.
    expect(await changed.resolveGatewayAccess(GUILD)).toEqual({
      ok: false,
      reason: 'undecryptable',
      notice: keyNotice('unreadable'),
    });
    expect(word(ENGLISH, await changed.keyInUse(GUILD))).toMatch(
      /^none: this server's own key \(…0c43, set by .*\) cannot be used\. .*set it again with `\/config key`/,
    );
    expect(word(ENGLISH, keyNotice('unreadable'))).toContain('set it again with `/config key`');
    expect(logLines.some((line) => line.includes('a stored server key cannot be read') && line.includes('other-secret'))).toBe(true);

    const withoutSecret = await restart({ encryptionSecret: undefined, operatorKey: OPERATOR_KEY });
    expect(await withoutSecret.resolveGatewayAccess(GUILD)).toEqual({
      ok: false,
      reason: 'no-secret',
      notice: keyNotice('secretRemoved'),
    });
    expect(word(ENGLISH, keyNotice('secretRemoved'))).toContain('set it back to the same secret');
    expect(word(resolveLocale('de', undefined, 'member'), keyNotice('secretRemoved'))).toContain('KEY_ENCRYPTION_SECRET');

    await restart();
    const raw = await openStore(`sqlite://${storeFile}`, log);
    const records = raw.collection('guild_settings', (value) => value);
    const record = await records.get(GUILD);
    if (!isRecord(record) || !isRecord(record.key) || !isRecord(record.key.sealed)) throw new Error('expected a stored key');
    await records.set(GUILD, {
      ...record,
      key: { ...record.key, sealed: { ...record.key.sealed, tag: Buffer.alloc(16).toString('base64') } },
    });
    await raw.close();
    const tampered = await restart();
    expect(await tampered.resolveGatewayAccess(GUILD)).toMatchObject({ ok: false, reason: 'undecryptable' });

    // Setting it again works.
    expect(await tampered.setKey(GUILD, SERVER_KEY, ADMIN)).toMatchObject({ ok: true });
    expect(await tampered.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, apiKey: SERVER_KEY });
  });

  it('survives a rotation: read under KEY_ENCRYPTION_SECRET_PREVIOUS and sealed again under the new secret', async () => {
    const first = await service();
    await first.setKey(GUILD, SERVER_KEY, ADMIN);
    const sealedBefore = (await first.get(GUILD)).key?.sealed;

    const rotating = await restart({ encryptionSecret: NEW_SECRET, previousEncryptionSecret: SECRET });
    expect(await rotating.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, apiKey: SERVER_KEY });
    const sealedAfter = (await rotating.get(GUILD)).key?.sealed;
    expect(sealedAfter?.kid).not.toBe(sealedBefore?.kid);

    const rotated = await restart({ encryptionSecret: NEW_SECRET });
    expect(await rotated.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, apiKey: SERVER_KEY });
    expect(storeBytes().includes(SERVER_KEY)).toBe(false);
  });

  it('is cleared, after which the operator key serves the server again', async () => {
    const settings = await service({ operatorKey: OPERATOR_KEY });
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    expect(await settings.resolveGatewayAccess(GUILD)).toMatchObject({ source: 'server' });
    expect(await settings.clearKey(GUILD, ADMIN)).toBe(true);
    expect(await settings.clearKey(GUILD, ADMIN)).toBe(false);
    expect(await settings.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, apiKey: OPERATOR_KEY, source: 'operator' });
    expect((await settings.get(GUILD)).history[0]).toMatchObject({ by: ADMIN, change: 'cleared the gateway key (…0c43)' });
  });
});

describe("a key's stated concurrency", () => {
  const stateTwo = (current: GuildSettings) => ({ ...current, limits: { ...current.limits, keyConcurrency: 2 } });

  it("is the server's own key's, and no one server's for the operator's key or a member's own install", async () => {
    const settings = await service({ operatorKey: OPERATOR_KEY });
    await settings.update(GUILD, ADMIN, 'set limits: key concurrency 2 at once', stateTwo);
    // On the operator's key, shared by every server without one: the line learns it.
    expect(await settings.keyConcurrency(GUILD)).toBeUndefined();
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    expect(await settings.keyConcurrency(GUILD)).toBe(2);
    expect(await settings.keyConcurrency(userInstallScope(ADMIN))).toBeUndefined();
    expect(await settings.keyConcurrency('another-server')).toBeUndefined();
    expect(await (await restart({ operatorKey: OPERATOR_KEY })).keyConcurrency(GUILD)).toBe(2);
  });

  it('is learned again once the server goes back to the operator key, and kept for a key set later', async () => {
    const settings = await service({ operatorKey: OPERATOR_KEY });
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    await settings.update(GUILD, ADMIN, 'set limits: key concurrency 2 at once', stateTwo);
    await settings.clearKey(GUILD, ADMIN);
    expect(await settings.keyConcurrency(GUILD)).toBeUndefined();
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    expect(await settings.keyConcurrency(GUILD)).toBe(2);
  });
});

describe('settings changes', () => {
  it('keeps changes made at the same time, each recorded with who and when, the last 50', async () => {
    const settings = await service();
    const before = Date.now();
    await Promise.all([
      settings.update(GUILD, 'a', 'set the layer', (current) => ({ ...current, layer: 'native' })),
      settings.update(GUILD, 'b', 'set limits', (current) => ({ ...current, limits: { ...current.limits, dailyPerServer: 50 } })),
      settings.update(GUILD, 'c', 'allowed a role', (current) => ({ ...current, roles: { ...current.roles, video: ['r1'] } })),
    ]);
    const stored = await (await restart()).get(GUILD);
    expect(stored).toMatchObject({ layer: 'native', limits: { dailyPerServer: 50 }, roles: { video: ['r1'] } });
    expect(stored.history.map((entry) => entry.by).sort()).toEqual(['a', 'b', 'c']);
    expect(stored.history.every((entry) => entry.at >= before && entry.at <= Date.now())).toBe(true);

    const busy = await restart();
    // Each a real change: one that changes nothing is not recorded.
    for (let index = 0; index < 55; index++) {
      await busy.update(GUILD, 'a', `change ${index}`, (current) => ({
        ...current,
        limits: { ...current.limits, concurrentPerUser: index + 1 },
      }));
    }
    const history = (await busy.get(GUILD)).history;
    expect(history).toHaveLength(50);
    expect(history[0]?.change).toBe('change 54');
  });

  it('lets only the allowed roles use a feature', async () => {
    const settings = await service();
    await settings.update(GUILD, ADMIN, 'allowed r1 on /voice', (current) => ({ ...current, roles: { ...current.roles, voice: ['r1'] } }));
    expect(worded(await settings.mayUse(GUILD, 'voice', ['r2'], false))).toMatchObject({
      ok: false,
      message: expect.stringContaining('<@&r1>'),
    });
    expect(await settings.mayUse(GUILD, 'voice', ['r1'], false)).toEqual({ ok: true });
    expect(await settings.mayUse(GUILD, 'voice', [], true)).toEqual({ ok: true });
    expect(await settings.mayUse(GUILD, 'video', [], false)).toEqual({ ok: true });
  });
});

describe("a server's moderation log", () => {
  const LOG_CHANNEL = '300000000000000003';

  it('gets a line for each change of the settings that changed something, and none without a log channel', async () => {
    const posted: { channelId: string; content: string }[] = [];
    const settings = await service({
      postLog: (channelId, content) => {
        posted.push({ channelId, content });
        return Promise.resolve();
      },
    });
    const dailyLimit = (current: GuildSettings) => ({ ...current, limits: { ...current.limits, dailyPerUser: 3 } });
    await settings.update(GUILD, ADMIN, 'set limits before the log', dailyLimit);
    await settings.update(GUILD, ADMIN, 'set the log channel', (current) => ({
      ...current,
      rules: { ...current.rules, logChannelId: LOG_CHANNEL },
    }));
    // The same again changes nothing, and is neither recorded nor logged.
    await settings.update(GUILD, ADMIN, 'set limits again', dailyLimit);
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    await settings.clearKey(GUILD, ADMIN);
    await settings.moderationLog.flush();
    expect(posted).toEqual([
      {
        channelId: LOG_CHANNEL,
        content: [
          `⚙️ <@${ADMIN}> changed the settings: set the log channel`,
          `⚙️ <@${ADMIN}> changed the settings: set the gateway key (…0c43)`,
          `⚙️ <@${ADMIN}> changed the settings: cleared the gateway key (…0c43)`,
        ].join('\n'),
      },
    ]);
  });
});

describe('voice settings', () => {
  it('are changed with the rest of the settings, and the change is recorded in the same history', async () => {
    const settings = await service();
    expect(await settings.voiceSettings(GUILD)).toMatchObject({ voice: 'eve', idleMinutes: 10, model: 'svc-voice-latest' });
    const changed = await settings.changeVoiceSettings(GUILD, { voice: 'Ara', idleMinutes: 7 }, ADMIN);
    expect(changed).toMatchObject({ voice: 'ara', idleMinutes: 7, updatedBy: ADMIN });

    const stored = await (await restart()).get(GUILD);
    expect(stored.voice).toMatchObject({ voice: 'ara', idleMinutes: 7 });
    expect(stored.history).toEqual([{ at: expect.any(Number), by: ADMIN, change: 'changed voice settings: voice ara, idle_minutes 7' }]);
  });

  it('write nothing when set to what they already are, and neither do the other settings', async () => {
    const settings = await service();
    await settings.changeVoiceSettings(GUILD, { voice: 'ara', transcripts: true }, ADMIN);
    await settings.update(GUILD, ADMIN, 'set the layer to native', (current) => ({ ...current, layer: 'native' }));
    const raw = await openStore(`sqlite://${storeFile}`, log);
    const records = raw.collection('guild_settings', (value) => value);
    const before = await records.get(GUILD);

    const again = await settings.changeVoiceSettings(GUILD, { voice: 'Ara', transcripts: true }, 'someone-else');
    expect(again).toMatchObject({ voice: 'ara', transcripts: true, updatedBy: ADMIN });
    await settings.update(GUILD, 'someone-else', 'set the layer to native', (current) => ({ ...current, layer: 'native' }));

    expect(await records.get(GUILD)).toEqual(before);
    expect((await settings.get(GUILD)).history.map((entry) => entry.change)).toEqual([
      'set the layer to native',
      'changed voice settings: voice ara, transcripts on',
    ]);
    await raw.close();
  });

  it('kept by an older version in their own record are read, and carried over at the first change', async () => {
    const raw = await openStore(`sqlite://${storeFile}`, log);
    await raw
      .collection('voice_settings', (value) => value)
      .set(GUILD, { voice: 'leo', silenceMs: 800, model: 'svc-voice-1', wakeWords: ['computer'], updatedBy: ADMIN, updatedAt: 1 });
    await raw.close();
    const settings = await service();
    expect(await settings.voiceSettings(GUILD)).toMatchObject({
      voice: 'leo',
      silenceMs: 800,
      model: 'svc-voice-1',
      wakeWords: ['computer'],
      idleMinutes: 10,
    });

    await settings.changeVoiceSettings(GUILD, { idleMinutes: 3 }, ADMIN);
    expect(await (await restart()).voiceSettings(GUILD)).toMatchObject({
      voice: 'leo',
      silenceMs: 800,
      model: 'svc-voice-1',
      wakeWords: ['computer'],
      idleMinutes: 3,
    });
  });
});

describe('limits and usage', () => {
  const LATE = Date.UTC(2026, 10, 30, 23, 0);
  const NEXT_DAY = Date.UTC(2026, 11, 1, 0, 0);
  /** Every video here is estimated at $0.30, reserved when it is submitted. */
  const ESTIMATE = 3_000_000_000;

  it('counts videos per UTC day, refuses over the limits until midnight, and gives refused ones back', async () => {
    const settings = await service();
    await settings.update(GUILD, ADMIN, 'set limits', (current) => ({
      ...current,
      limits: { concurrentPerUser: 0, dailyPerUser: 2, dailyPerServer: 3 },
    }));
    const ask = (userId: string, now = LATE) =>
      settings.checkLimits({ guildId: GUILD, userId, activeTasksOfUser: 0, now, estimateUsdTicks: ESTIMATE });

    const [, secondReservation] = await Promise.all([
      settings.recordSubmission(task('t1', 'alice', LATE), ESTIMATE),
      settings.recordSubmission(task('t2', 'alice', LATE), ESTIMATE),
    ]);
    expect(worded(await ask('alice'))).toMatchObject({
      ok: false,
      retryAt: NEXT_DAY,
      message: expect.stringContaining(`<t:${NEXT_DAY / 1000}:R>`),
    });
    expect(await ask('bob')).toEqual({ ok: true });
    await settings.recordSubmission(task('t3', 'bob', LATE), ESTIMATE);
    expect(worded(await ask('bob'))).toMatchObject({
      ok: false,
      message: expect.stringContaining('This server reached its 3 videos for today'),
    });
    expect(await ask('alice', NEXT_DAY)).toEqual({ ok: true });

    await settings.releaseSubmission(task('t2', 'alice', LATE), secondReservation);
    expect(
      await (await restart()).checkLimits({ guildId: GUILD, userId: 'carol', activeTasksOfUser: 0, now: LATE, estimateUsdTicks: ESTIMATE }),
    ).toEqual({ ok: true });
  });

  it("counts each task's cost once, and reports today and this month per member", async () => {
    const settings = await service();
    const previousMonth = Date.UTC(2026, 9, 31, 12);
    const earlier = Date.UTC(2026, 10, 2, 12);
    for (const [record, usdTicks] of [
      [task('m1', 'alice', previousMonth), 90_000_000_000],
      [task('e1', 'bob', earlier), 30_000_000_000],
      [task('l1', 'alice', LATE), 5_000_000_000],
    ] as const) {
      const reservation = await settings.recordSubmission(record, ESTIMATE);
      const finished = { ...record, reservation, outcome: { costUsdTicks: usdTicks } };
      await Promise.all([settings.recordCost(costOf(finished)), settings.recordCost(costOf(finished))]);
    }
    // A restart that sees the task finish again does not count it twice.
    const reopened = await restart();
    await reopened.recordCost(costOf(task('l1', 'alice', LATE, 5_000_000_000)));
    await reopened.recordCost(costOf(task('free', 'alice', LATE, 0)));

    expect(formatUsage(ENGLISH, await reopened.spending.usage(GUILD, 'alice', true, LATE))).toBe(
      [
        '**Your usage today** (Nov 30, 2026 UTC): 1 video, $0.50; no voice',
        '**Your usage this month** (November 2026): 1 video, $0.50; no voice',
        '**Budgets:** none set on this server.',
        '',
        '**Server today (Nov 30, 2026 UTC)**: 1 video, $0.50; no voice',
        '<@alice>: 1 video, $0.50; no voice',
        '',
        '**Server this month (November 2026)**: 2 videos, $3.50; no voice',
        '<@bob>: 1 video, $3.00; no voice',
        '<@alice>: 1 video, $0.50; no voice',
      ].join('\n'),
    );
    expect(formatUsage(ENGLISH, await reopened.spending.usage(GUILD, 'alice', true, NEXT_DAY))).toContain(
      '**Server this month (December 2026)**: 0 videos, $0.00; no voice\nnothing yet',
    );
  });

  it('counts a video made without a reported cost at its estimate, marked, and a refunded failure as nothing', async () => {
    const settings = await service();
    const finished = (id: string, state: TaskRecord['state'], costUsdTicks?: number) => ({
      ...task(id, 'alice', LATE, costUsdTicks),
      state,
    });
    const tasks = [
      finished('priced', 'succeeded', 4_000_000_000),
      finished('silent', 'succeeded'),
      finished('expired', 'expired'),
      finished('failed', 'failed'),
      finished('gave-up', 'timed_out'),
    ];
    for (const record of tasks) {
      const reservation = await settings.recordSubmission(record, ESTIMATE);
      await settings.recordCost(costOf({ ...record, reservation }));
    }
    // Seen finishing again after a restart: still counted once.
    await (await restart()).recordCost(costOf(finished('silent', 'succeeded')));
    // Nothing stays reserved: the failures gave their estimates back.
    expect(formatUsage(ENGLISH, await (await restart()).spending.usage(GUILD, 'alice', true, LATE))).toContain(
      '<@alice>: 5 videos, $0.40 + about $0.60 estimated (2 without a reported cost); no voice',
    );
  });
});

describe("a member's own install of the app", () => {
  const MEMBER = '300000000000000003';
  const SCOPE = userInstallScope(MEMBER);
  const NOON = Date.UTC(2026, 10, 17, 12);
  const MIDNIGHT = Date.UTC(2026, 10, 18);
  /** $0.40 a video: five of them are the $2.00 a day the operator allows by default. */
  const ESTIMATE = 4_000_000_000;
  const ownTask = (id: string, createdAt = NOON) => ({ ...task(id, MEMBER, createdAt), guildId: SCOPE });
  const GERMAN = resolveLocale('de', undefined, 'member');
  const FRENCH = resolveLocale('fr', undefined, 'member');

  it("spends the operator's key even in a server with its own key, and is refused without one, naming GATEWAY_API_KEY", async () => {
    const settings = await service({ operatorKey: OPERATOR_KEY });
    await settings.setKey(GUILD, SERVER_KEY, ADMIN);
    expect(await settings.resolveGatewayAccess(GUILD)).toMatchObject({ ok: true, apiKey: SERVER_KEY });
    expect(await settings.resolveGatewayAccess(SCOPE)).toMatchObject({ ok: true, apiKey: OPERATOR_KEY, source: 'operator' });

    const withoutOperator = await restart();
    expect(await withoutOperator.resolveGatewayAccess(SCOPE)).toEqual({
      ok: false,
      reason: 'no-key',
      notice: notice('user-install.no-key'),
    });
    expect(t(GERMAN, 'user-install.no-key')).toContain('`GATEWAY_API_KEY`');
  });

  it('holds a member to the videos and dollars a day the operator allows, in their language, whatever a server set', async () => {
    const settings = await service({ operatorKey: OPERATOR_KEY, userInstallLimits: { dailyVideos: 3, dailyUsd: 1 } });
    // A server's own limits (none here) and budgets do not reach a member's own install.
    const ask = (estimateUsdTicks = ESTIMATE, now = NOON) =>
      settings.checkLimits({ guildId: SCOPE, userId: MEMBER, activeTasksOfUser: 0, now, estimateUsdTicks });

    await settings.recordSubmission(ownTask('u1'), ESTIMATE);
    await settings.recordSubmission(ownTask('u2'), ESTIMATE);
    // $0.80 spent of $1.00: a third video of $0.40 would pass it.
    const overBudget = await ask();
    expect(overBudget).toMatchObject({ ok: false, retryAt: MIDNIGHT });
    expect(overBudget.ok || word(FRENCH, overBudget.notice)).toBe(
      t(FRENCH, 'user-install.limit.usd', {
        estimate: formatEstimateIn(FRENCH, ESTIMATE),
        amount: formatCostIn(FRENCH, 10_000_000_000),
        left: formatCostIn(FRENCH, 2_000_000_000),
        resets: `<t:${MIDNIGHT / 1000}:R>`,
      }),
    );
    await expect(settings.recordSubmission(ownTask('u3'), ESTIMATE)).rejects.toThrow(LimitReachedError);
    expect(await ask(2_000_000_000)).toEqual({ ok: true });
    await settings.recordSubmission(ownTask('u3'), 2_000_000_000);
    // Three videos are as many as a day allows, whatever they cost.
    expect(worded(await ask(0), FRENCH)).toMatchObject({
      ok: false,
      message: t(FRENCH, 'user-install.limit.videos', { count: 3, retry: `<t:${MIDNIGHT / 1000}:R>` }),
    });
    expect(await ask(0, MIDNIGHT)).toEqual({ ok: true });

    // The member's report: their own use of the operator's key, and what is left of the operator's limits.
    expect(formatUsage(ENGLISH, await settings.spending.usage(SCOPE, MEMBER, false, NOON))).toBe(
      [
        "**Through your own install of the app**, on the bot operator's key:",
        '**Your usage today** (Nov 17, 2026 UTC): 3 videos, $0.00, $1.00 reserved for videos in progress; no voice',
        '**Your usage this month** (November 2026): 3 videos, $0.00, $1.00 reserved for videos in progress; no voice',
        `Videos left today: 0 of 3; it starts over <t:${MIDNIGHT / 1000}:R>.`,
        `Left to spend today: $0.00 of $1.00; it starts over <t:${MIDNIGHT / 1000}:R>.`,
      ].join('\n'),
    );
    // Nothing of it reached the server's record.
    expect((await settings.spending.usage(GUILD, MEMBER, false, NOON)).member.today.tasks).toBe(0);
  });
});
