import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { dayKey } from '../../src/lib/day-key.ts';
import { UsageLedger } from '../../src/settings/usage.ts';
import { openStore, type Store } from '../../src/store/index.ts';

const NO_LIMITS = { concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 };

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
      ledger.admitSubmission('g', 'alice', day1, NO_LIMITS),
      ledger.admitSubmission('g', 'alice', day1, NO_LIMITS),
      ledger.admitSubmission('g', 'bob', day2, NO_LIMITS),
    ]);
    await ledger.recordCost('g', 'alice', 't1', 100, day1);
    await ledger.recordCost('g', 'alice', 't1', 100, day1);
    await ledger.recordCost('g', 'bob', 't2', 50, day2);
    expect((await ledger.day('g', day1)).users).toEqual({ alice: { tasks: 2, costTicks: 100, costUnreported: 0 } });
    expect(await ledger.month('g', day2)).toEqual({
      alice: { tasks: 2, costTicks: 100, costUnreported: 0 },
      bob: { tasks: 1, costTicks: 50, costUnreported: 0 },
    });
    expect(await ledger.month('other', day2)).toEqual({});
  });

  it('counts a finished task without a reported cost apart from the costs, once per task', async () => {
    const ledger = new UsageLedger(store, silentLogger);
    const day = Date.UTC(2026, 10, 1, 10);
    await ledger.admitSubmission('g', 'alice', day, NO_LIMITS);
    await ledger.admitSubmission('g', 'alice', day, NO_LIMITS);
    await Promise.all([ledger.recordCost('g', 'alice', 't1', undefined, day), ledger.recordCost('g', 'alice', 't1', undefined, day)]);
    await ledger.recordCost('g', 'alice', 't2', 40, day);
    expect((await ledger.day('g', day)).users).toEqual({ alice: { tasks: 2, costTicks: 40, costUnreported: 1 } });
  });

  it('reads day records written before unreported costs were counted', async () => {
    const day = Date.UTC(2026, 10, 1, 10);
    await store.collection('usage_days', (raw) => raw).set(`g:${dayKey(day)}`, { users: { alice: { tasks: 3, costTicks: 70 } } });
    await store.close();
    store = await openStore(`sqlite://${join(directory, 'usage.sqlite')}`, silentLogger);
    expect((await new UsageLedger(store, silentLogger).day('g', day)).users).toEqual({
      alice: { tasks: 3, costTicks: 70, costUnreported: 0 },
    });
  });
});
