import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { UsageLedger } from '../../src/settings/usage.ts';
import { openStore, type Store } from '../../src/store.ts';

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
    const ledger = new UsageLedger(store);
    const day1 = Date.UTC(2026, 10, 1, 10);
    const day2 = Date.UTC(2026, 10, 2, 10);
    await Promise.all([ledger.recordSubmission('g', 'alice', day1), ledger.recordSubmission('g', 'alice', day1), ledger.recordSubmission('g', 'bob', day2)]);
    await ledger.recordCost('g', 'alice', 't1', 100, day1);
    await ledger.recordCost('g', 'alice', 't1', 100, day1);
    await ledger.recordCost('g', 'bob', 't2', 50, day2);
    expect((await ledger.day('g', day1)).users).toEqual({ alice: { tasks: 2, costTicks: 100 } });
    expect(await ledger.month('g', day2)).toEqual({ alice: { tasks: 2, costTicks: 100 }, bob: { tasks: 1, costTicks: 50 } });
    expect(await ledger.month('other', day2)).toEqual({});
  });
});
