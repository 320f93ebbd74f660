import { worded } from '../support/worded.ts';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { LimitReachedError } from '../../src/ports/guild-policy.ts';
import { HISTORY_KEPT, NO_BUDGETS } from '../../src/settings/guild-settings.ts';
import { SettingsService } from '../../src/settings/service.ts';
import { dayKey } from '../../src/lib/day-key.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';
import { monthKey, noUsage, UsageLedger } from '../../src/settings/usage.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { EndUserIds } from '../../src/video/end-users.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';

// The records every worker may write, written by two workers at once: two stores opened on one url, as
// two worker processes open theirs (on SQLite, in one process: several processes are refused there).
// On the shared Redis each test uses guilds and tasks of its own and deletes their records after; the
// user salt is one key for the whole installation, so its test runs on a Redis server of its own.

const SHARED_REDIS = 'redis://127.0.0.1:6379';
const RACERS = 200;
const SALT_ROUNDS = 10;
const DAY = Date.UTC(2026, 0, 15, 12);
const NO_LIMITS = { concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 };
/** What each video here is estimated at, reserved when it is admitted. */
const ESTIMATE = 7;

const opened: Store[] = [];
const pools: GatewayClientPool[] = [];
const directories: string[] = [];
/** Records of the shared collections a test wrote: [collection, id], deleted after it. */
const written: [collection: string, id: string][] = [];
let ownRedis: OwnRedis | undefined;
/** The url of the test's stores, where its records are deleted. */
let location: string | undefined;

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  await Promise.all(opened.splice(0).map((store) => store.close()));
  const leftovers = written.splice(0);
  if (location !== undefined && leftovers.length > 0) {
    const janitor = await openStore(location, silentLogger);
    const collections = new Map<string, ReturnType<Store['collection']>>();
    for (const [name, id] of leftovers) {
      let collection = collections.get(name);
      if (!collection) collections.set(name, (collection = janitor.collection(name, (raw) => raw)));
      await collection.delete(id);
    }
    await janitor.close();
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  await ownRedis?.close();
  ownRedis = undefined;
  location = undefined;
});

async function open(url: string): Promise<Store> {
  const store = await openStore(url, silentLogger);
  opened.push(store);
  location = url;
  return store;
}

/**
 * Two stores on one url, opened one after the other (two processes opening a fresh SQLite file at the very
 * same moment can meet its lock while it switches to WAL: a start-up race, not what these tests are about).
 */
async function twoWorkers<T>(url: string, make: (store: Store) => T): Promise<[T, T]> {
  const first = make(await open(url));
  return [first, make(await open(url))];
}

function sqliteUrl(): string {
  const directory = mkdtempSync(join(tmpdir(), 'many-workers-'));
  directories.push(directory);
  return `sqlite://${join(directory, 'bot.sqlite')}`;
}

/** A guild id no other test (or earlier run) uses. */
function newGuild(): string {
  const guild = `9${BigInt(`0x${randomUUID().replaceAll('-', '').slice(0, 14)}`).toString()}`;
  written.push(['guild_settings', guild], ['usage_days', `${guild}:${dayKey(DAY)}`], ['usage_months', `${guild}:${monthKey(DAY)}`]);
  return guild;
}

/** A worker's settings service, as the bot builds it (no request reaches a gateway in these tests). */
function settingsOf(store: Store): SettingsService {
  const clients = new GatewayClientPool({ baseUrl: 'http://127.0.0.1:9', log: silentLogger });
  pools.push(clients);
  return new SettingsService({
    store,
    clients,
    log: silentLogger,
    operatorKey: undefined,
    defaultLayer: 'compat',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: DEFAULT_PRICES,
  });
}

function member(index: number): string {
  return `30000000000000${String(index).padStart(4, '0')}`;
}

describe.each([
  ['sqlite', sqliteUrl],
  ['redis', () => SHARED_REDIS],
])('two workers on one %s store', (_kind, url) => {
  it("count every one of a member's videos when both count at once (2 x 200)", async () => {
    const here = url();
    const [first, second] = await twoWorkers(here, (store) => new UsageLedger(store, silentLogger));
    const guild = newGuild();
    const admitted = await Promise.all(
      Array.from({ length: RACERS }, () => [
        first.admitSubmission(guild, member(1), DAY, NO_LIMITS, NO_BUDGETS, ESTIMATE),
        second.admitSubmission(guild, member(1), DAY, NO_LIMITS, NO_BUDGETS, ESTIMATE),
      ]).flat(),
    );
    expect(admitted.every((verdict) => verdict.ok)).toBe(true);
    expect((await first.day(guild, DAY)).users).toEqual({
      [member(1)]: { ...noUsage(), tasks: 2 * RACERS, reservedUsdTicks: 2 * RACERS * ESTIMATE },
    });
  });

  it('count a finished task once when both see it finish at once', async () => {
    const here = url();
    const [first, second] = await twoWorkers(here, (store) => new UsageLedger(store, silentLogger));
    const guild = newGuild();
    const tasks = Array.from({ length: 50 }, (_, index) => `v${guild}t${index}`);
    for (const task of tasks) written.push(['usage_costed_tasks', task]);
    const cost = { kind: 'reported', usdTicks: 10 } as const;
    const settleOnBoth = (task: string) => [
      first.settle(guild, member(1), task, DAY, undefined, cost),
      second.settle(guild, member(1), task, DAY, undefined, cost),
    ];
    await Promise.all(tasks.flatMap(settleOnBoth));
    await Promise.all(tasks.slice(0, 5).flatMap(settleOnBoth));
    expect((await second.day(guild, DAY)).users).toEqual({ [member(1)]: { ...noUsage(), costUsdTicks: 500 } });
  });

  it("admit exactly the server's daily limit, and a member's, when both admit at once", async () => {
    const here = url();
    const [first, second] = await twoWorkers(here, settingsOf);
    const guild = newGuild();
    await first.update(guild, member(0), 'set limits', (settings) => ({
      ...settings,
      limits: { concurrentPerUser: 0, dailyPerUser: 3, dailyPerServer: 7 },
    }));

    const oneMember = await Promise.allSettled(
      Array.from({ length: 20 }, (_, index) =>
        (index % 2 === 0 ? first : second).recordSubmission({ guildId: guild, userId: member(1), createdAt: DAY }, ESTIMATE),
      ),
    );
    expect(oneMember.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(3);
    const manyMembers = await Promise.allSettled(
      Array.from({ length: 40 }, (_, index) =>
        (index % 2 === 0 ? first : second).recordSubmission({ guildId: guild, userId: member(2 + (index % 10)), createdAt: DAY }, ESTIMATE),
      ),
    );
    expect(manyMembers.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(7 - 3);
    for (const outcome of [...oneMember, ...manyMembers]) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(LimitReachedError);
    }
    // What a member is told next, on either worker: the server's limit, reached.
    const refused = await second.checkLimits({
      guildId: guild,
      userId: member(20),
      activeTasksOfUser: 0,
      now: DAY,
      estimateUsdTicks: ESTIMATE,
    });
    expect(worded(refused)).toMatchObject({ ok: false, message: expect.stringMatching(/^This server reached its 7 videos for today/) });
  });

  it('keep every settings change and its history when two admins change them on both at once', async () => {
    const here = url();
    const [first, second] = await twoWorkers(here, settingsOf);
    const guild = newGuild();
    const changes = HISTORY_KEPT / 2;
    await Promise.all(
      Array.from({ length: changes }, (_, index) =>
        [first, second].map((settings, worker) => {
          const role = `role-${worker}-${index}`;
          return settings.update(guild, member(worker), `allowed ${role}`, (current) => ({
            ...current,
            roles: { ...current.roles, video: [...current.roles.video, role] },
          }));
        }),
      ).flat(),
    );
    const settings = await first.get(guild);
    expect(settings.roles.video).toHaveLength(2 * changes);
    expect(new Set(settings.roles.video).size).toBe(2 * changes);
    expect(settings.history.map((entry) => entry.change).sort()).toEqual(settings.roles.video.map((role) => `allowed ${role}`).sort());
  });

  it("keep both admins' voice settings when they change different ones on both at once", async () => {
    const here = url();
    const [first, second] = await twoWorkers(here, settingsOf);
    const guild = newGuild();
    await Promise.all([
      first.changeVoiceSettings(guild, { silenceMs: 900 }, member(1)),
      second.changeVoiceSettings(guild, { transcripts: true }, member(2)),
      first.changeVoiceSettings(guild, { idleMinutes: 20 }, member(1)),
    ]);
    expect(await second.voiceSettings(guild)).toMatchObject({ silenceMs: 900, transcripts: true, idleMinutes: 20 });
  });
});

describe.each([
  ['sqlite', () => Promise.resolve(sqliteUrl())],
  [
    'redis',
    async () => {
      // A server of the test's own, emptied for each round.
      if (ownRedis) await ownRedis.restart();
      else ownRedis = await startOwnRedis();
      return ownRedis.url;
    },
  ],
])('two workers on a fresh %s store', (_kind, freshUrl) => {
  it('make one user salt at their first uses at once, and both use it', async () => {
    // Whether two first uses meet depends on how their store calls interleave: a few rounds give the race
    // its chances (reading the salt back after writing it, as before, hashed with two salts in about one
    // round in five on SQLite).
    for (let round = 0; round < SALT_ROUNDS; round++) {
      const fresh = await freshUrl();
      const workers = await twoWorkers(fresh, (store) => new EndUserIds(store));
      const ids = await Promise.all(workers.flatMap((endUsers) => [endUsers.of(member(1)), endUsers.of(member(2))]));
      expect(ids).toEqual([ids[0], ids[1], ids[0], ids[1]]);
      expect(ids[0]).not.toBe(ids[1]);
      // A worker started later hashes the same members the same way.
      const later = new EndUserIds(await open(fresh));
      expect(await later.of(member(1))).toBe(ids[0]);
      await Promise.all(opened.splice(0).map((store) => store.close()));
    }
  });
});
