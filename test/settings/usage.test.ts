import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { dayKey } from '../../src/lib/day-key.ts';
import { NO_BUDGETS } from '../../src/settings/guild-settings.ts';
import { noUsage, UsageLedger, type UsageCount } from '../../src/settings/usage.ts';
import { openStore, StoredRecordError, UnstorableRecordError, type Store } from '../../src/store/index.ts';

const NO_LIMITS = { concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 };
/** A video estimated at $0.40 (reserved at submission, given back when it is settled). */
const ESTIMATE = 4_000_000_000;
const RESERVED = { estimateUsdTicks: ESTIMATE, month: false };

function counted(count: Partial<UsageCount>): UsageCount {
  return { ...noUsage(), ...count };
}

let directory: string;
let store: Store;
beforeEach(async () => {
  directory = mkdtempSync(join(tmpdir(), 'usage-'));
  store = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
});
afterEach(async () => {
  await store.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('the usage ledger on SQLite', () => {
  it('counts tasks and costs per member per day, once per task, and sums the month', async () => {
    const ledger = new UsageLedger(store, silentLogger);
    const day1 = Date.UTC(2026, 10, 1, 10);
    const day2 = Date.UTC(2026, 10, 2, 10);
    await Promise.all([
      ledger.admitSubmission('g', 'alice', day1, NO_LIMITS, NO_BUDGETS, ESTIMATE),
      ledger.admitSubmission('g', 'alice', day1, NO_LIMITS, NO_BUDGETS, ESTIMATE),
      ledger.admitSubmission('g', 'bob', day2, NO_LIMITS, NO_BUDGETS, ESTIMATE),
    ]);
    await ledger.settle('g', 'alice', 't1', day1, RESERVED, { kind: 'reported', usdTicks: 100 });
    await ledger.settle('g', 'alice', 't1', day1, RESERVED, { kind: 'reported', usdTicks: 100 });
    await ledger.settle('g', 'bob', 't2', day2, RESERVED, { kind: 'reported', usdTicks: 50 });
    // Alice's second video is still being made: its estimate stays reserved.
    expect((await ledger.day('g', day1)).users).toEqual({ alice: counted({ tasks: 2, costUsdTicks: 100, reservedUsdTicks: ESTIMATE }) });
    expect(await ledger.month('g', day2)).toEqual({
      alice: counted({ tasks: 2, costUsdTicks: 100, reservedUsdTicks: ESTIMATE }),
      bob: counted({ tasks: 1, costUsdTicks: 50 }),
    });
    expect(await ledger.month('other', day2)).toEqual({});
  });

  it('counts a finished task without a reported cost apart from the costs, once per task', async () => {
    const ledger = new UsageLedger(store, silentLogger);
    const day = Date.UTC(2026, 10, 1, 10);
    await ledger.admitSubmission('g', 'alice', day, NO_LIMITS, NO_BUDGETS, ESTIMATE);
    await ledger.admitSubmission('g', 'alice', day, NO_LIMITS, NO_BUDGETS, ESTIMATE);
    const estimated = { kind: 'estimated', usdTicks: ESTIMATE } as const;
    await Promise.all([
      ledger.settle('g', 'alice', 't1', day, RESERVED, estimated),
      ledger.settle('g', 'alice', 't1', day, RESERVED, estimated),
    ]);
    await ledger.settle('g', 'alice', 't2', day, RESERVED, { kind: 'reported', usdTicks: 40 });
    expect((await ledger.day('g', day)).users).toEqual({
      alice: counted({ tasks: 2, costUsdTicks: 40, costUnreported: 1, estimatedUsdTicks: ESTIMATE }),
    });
  });

  it('reads month records written before versions were counted: a spend they have none of is none', async () => {
    const day = Date.UTC(2026, 10, 2, 10);
    await store.collection('usage_months', (raw) => raw).set('g:2026-11', { days: { '01': { videoTicks: 5 }, '02': { voiceTicks: 7 } } });
    await store.close();
    store = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
    expect(await new UsageLedger(store, silentLogger).spendByDay('g', day, 2)).toEqual([
      { day: '2026-11-01', spend: { videoUsdTicks: 5, voiceUsdTicks: 0 } },
      { day: '2026-11-02', spend: { videoUsdTicks: 0, voiceUsdTicks: 7 } },
    ]);
  });

  it('refuses a cost that would make a sum it cannot store, leaving the day as it was and the task to count again', async () => {
    const ledger = new UsageLedger(store, silentLogger);
    const day = Date.UTC(2026, 10, 1, 10);
    await ledger.admitSubmission('g', 'alice', day, NO_LIMITS, NO_BUDGETS, ESTIMATE);
    await ledger.admitSubmission('g', 'alice', day, NO_LIMITS, NO_BUDGETS, ESTIMATE);
    // A gateway's report of 1e308 ticks is a number; two of them add up to Infinity.
    await ledger.settle('g', 'alice', 't1', day, RESERVED, { kind: 'reported', usdTicks: 1e308 });
    const second = ledger.settle('g', 'alice', 't2', day, RESERVED, { kind: 'reported', usdTicks: 1e308 });
    await expect(second).rejects.toBeInstanceOf(UnstorableRecordError);
    await expect(second).rejects.toHaveProperty('field', 'usage_days.users.alice.costUsdTicks');
    expect((await ledger.day('g', day)).users).toEqual({ alice: counted({ tasks: 2, costUsdTicks: 1e308, reservedUsdTicks: ESTIMATE }) });
    // Not claimed: a later report of the task is counted (here, a sane one).
    expect(await ledger.settle('g', 'alice', 't2', day, RESERVED, { kind: 'reported', usdTicks: 100 })).toBeDefined();
  });

  it("takes back the day's count of a task whose month it cannot write", async () => {
    const day = Date.UTC(2026, 10, 1, 10);
    await store.close();
    const other = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
    await other.collection('usage_months', (raw) => raw).set('g:2026-11', { v: 1, days: 'spoiled' });
    await other.close();
    store = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
    const ledger = new UsageLedger(store, silentLogger);
    const monthly = { ...NO_BUDGETS, server_monthly_usd: 100 };
    await expect(ledger.admitSubmission('g', 'alice', day, NO_LIMITS, monthly, ESTIMATE)).rejects.toBeInstanceOf(StoredRecordError);
    expect((await ledger.day('g', day)).users).toEqual({ alice: counted({}) });
  });

  it('reads version 1 records, whose amounts were named …Ticks, as USD ticks', async () => {
    const day = Date.UTC(2026, 10, 1, 10);
    const raw = (name: string) => store.collection(name, (value) => value);
    await raw('usage_days').set(`g:${dayKey(day)}`, {
      v: 1,
      users: {
        alice: { tasks: 2, costTicks: 70, costUnreported: 1, estimatedTicks: 30, reservedTicks: 20, voiceMs: 60_000, voiceTicks: 5 },
      },
    });
    await raw('usage_months').set('g:2026-11', { v: 1, days: { '01': { videoTicks: 100, voiceTicks: 5 } }, reservedTicks: 20 });
    await store.close();
    store = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
    const ledger = new UsageLedger(store, silentLogger);
    expect((await ledger.day('g', day)).users).toEqual({
      alice: {
        tasks: 2,
        costUsdTicks: 70,
        costUnreported: 1,
        estimatedUsdTicks: 30,
        reservedUsdTicks: 20,
        voiceMs: 60_000,
        voiceUsdTicks: 5,
      },
    });
    expect(await ledger.spendByDay('g', day, 1)).toEqual([{ day: '2026-11-01', spend: { videoUsdTicks: 100, voiceUsdTicks: 5 } }]);
  });

  it('reads day records written before unreported costs were counted', async () => {
    const day = Date.UTC(2026, 10, 1, 10);
    await store.collection('usage_days', (raw) => raw).set(`g:${dayKey(day)}`, { users: { alice: { tasks: 3, costTicks: 70 } } });
    await store.close();
    store = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
    expect((await new UsageLedger(store, silentLogger).day('g', day)).users).toEqual({
      alice: counted({ tasks: 3, costUsdTicks: 70 }),
    });
  });
});
