import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@keyv/redis';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, StoredRecordError, StoreUnavailableError, type Collection, type Store } from '../../src/store/index.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';

// The store's atomic steps (setIfAbsent, update) on real SQLite and the real Redis, with two stores opened
// as two workers open theirs. On the shared Redis every test uses collections of its own and deletes its
// records after.

const SHARED_REDIS = 'redis://127.0.0.1:6379';
const RACERS = 200;

interface Counter {
  count: number;
}

function parseCounter(raw: unknown): Counter {
  if (typeof raw !== 'object' || raw === null || !('count' in raw) || typeof raw.count !== 'number') throw new Error('not a counter');
  return { count: raw.count };
}

const opened: Store[] = [];
const directories: string[] = [];
/** Records a test wrote, deleted after it whether it passed or not (the shared Redis keeps them otherwise). */
const written: (() => Promise<boolean>)[] = [];
afterEach(async () => {
  for (const forget of written.splice(0)) await forget();
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function open(url: string, deadlineMs?: number): Promise<Store> {
  const store = await openStore(url, silentLogger, deadlineMs === undefined ? {} : { deadlineMs });
  opened.push(store);
  return store;
}

function sqliteUrl(): string {
  const directory = mkdtempSync(join(tmpdir(), 'store-atomic-'));
  directories.push(directory);
  return `sqlite://${join(directory, 'bot.sqlite')}`;
}

function deleteAfter<T>(collection: Collection<T>, ...ids: string[]): void {
  for (const id of ids) written.push(() => collection.delete(id));
}

function unique(name: string): string {
  return `${name}_${randomUUID().slice(0, 8)}`;
}

/** Two workers' views of one collection: two stores opened on the same url. */
async function twoWorkers<T>(url: string, name: string, parse: (raw: unknown) => T): Promise<[Collection<T>, Collection<T>]> {
  // One after the other: two processes opening a fresh SQLite file at the same moment can meet its lock.
  const first = await open(url);
  const second = await open(url);
  return [first.collection(name, parse), second.collection(name, parse)];
}

function increment(counters: Collection<Counter>, id: string): Promise<Counter | undefined> {
  return counters.update(id, (current) => ({ count: (current?.count ?? 0) + 1 }));
}

describe.each([
  ['sqlite', sqliteUrl],
  ['redis', () => SHARED_REDIS],
])('atomic steps on the %s store', (_kind, url) => {
  it('counts every increment when two workers change one record at once (2 x 200)', async () => {
    const [first, second] = await twoWorkers(url(), unique('counters'), parseCounter);
    deleteAfter(first, 'c');
    await Promise.all(Array.from({ length: RACERS }, () => [increment(first, 'c'), increment(second, 'c')]).flat());
    expect(await first.get('c')).toEqual({ count: 2 * RACERS });
    expect(await second.get('c')).toEqual({ count: 2 * RACERS });
  });

  it('writes a record only if there is none: of two first writers at once, one wins and both see its value', async () => {
    const [first, second] = await twoWorkers(url(), unique('firsts'), parseCounter);
    deleteAfter(first, 'once');
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? first : second).setIfAbsent('once', { count: index })),
    );
    expect(outcomes.filter((outcome) => outcome.created)).toHaveLength(1);
    const held = await first.get('once');
    expect(outcomes.map((outcome) => outcome.value)).toEqual(outcomes.map(() => held));
    expect(await second.setIfAbsent('once', { count: 99 })).toEqual({ created: false, value: held });
  });

  it('agrees with Keyv: a change reads what set wrote, and get and entries read what it wrote', async () => {
    const store = await open(url());
    const name = unique('layout');
    const loose = store.collection(name, (raw) => raw);
    deleteAfter(loose, 'r');
    // Strings that start with a colon are escaped in Keyv's format: they must survive a change.
    await loose.set('r', { label: ':colon', count: 1 });
    const changed = await loose.update('r', (current) => ({ ...(current as object), count: 2 }), 60_000);
    expect(changed).toEqual({ label: ':colon', count: 2 });
    expect(await loose.get('r')).toEqual({ label: ':colon', count: 2 });
    const listed: [string, unknown][] = [];
    for await (const entry of loose.entries()) listed.push(entry);
    expect(listed).toEqual([['r', { label: ':colon', count: 2 }]]);
  });

  it('writes nothing when the change returns nothing, and answers what the store holds', async () => {
    const store = await open(url());
    const counters = store.collection(unique('unchanged'), parseCounter);
    deleteAfter(counters, 'some');
    expect(await counters.update('none', () => undefined)).toBeUndefined();
    expect(await counters.get('none')).toBeUndefined();
    await counters.set('some', { count: 5 });
    expect(await counters.update('some', () => undefined)).toEqual({ count: 5 });
  });

  it('takes an expired record for none, as Keyv does', async () => {
    const store = await open(url());
    const counters = store.collection(unique('expiring'), parseCounter);
    deleteAfter(counters, 'short');
    const expiresAt = Date.now() + 20;
    await counters.set('short', { count: 1 }, 20);
    await expect.poll(() => Date.now() > expiresAt).toBe(true);
    expect(await counters.setIfAbsent('short', { count: 2 })).toEqual({ created: true, value: { count: 2 } });
    expect(await increment(counters, 'short')).toEqual({ count: 3 });
  });

  it('refuses to change a record that no longer parses, without calling the change', async () => {
    const location = url();
    const name = unique('broken');
    const loose = (await open(location)).collection(name, (raw) => raw);
    deleteAfter(loose, 'bad');
    await loose.set('bad', { count: 'many' });
    const counters = (await open(location)).collection(name, parseCounter);
    let called = false;
    const change = (current: Counter | undefined): Counter => {
      called = true;
      return { count: (current?.count ?? 0) + 1 };
    };
    await expect(counters.update('bad', change)).rejects.toBeInstanceOf(StoredRecordError);
    await expect(counters.setIfAbsent('bad', { count: 1 })).rejects.toBeInstanceOf(StoredRecordError);
    expect(called).toBe(false);
    expect(await loose.get('bad')).toEqual({ count: 'many' });
  });
});

describe('atomic steps on the redis store', () => {
  it("keep @keyv/redis's key names (namespace, separator, Keyv's key) and its ttl", async () => {
    const store = await open(SHARED_REDIS);
    const name = unique('names');
    const counters = store.collection(name, parseCounter);
    deleteAfter(counters, 'a:b', 'kept');
    await counters.setIfAbsent('a:b', { count: 1 }, 60_000);
    await increment(counters, 'kept');
    const client = createClient({ url: SHARED_REDIS });
    await client.connect();
    try {
      const keys: string[] = [];
      for await (const page of client.scanIterator({ MATCH: `${name}*` })) keys.push(...page);
      expect(keys.sort()).toEqual([`${name}:${name}:a:b`, `${name}:${name}:kept`]);
      expect(await client.get(`${name}:${name}:kept`)).toBe('{"value":{"count":1}}');
      const ttl = await client.pTTL(`${name}:${name}:a:b`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      // A change without a ttl keeps the record for good, as Keyv's set does.
      await increment(counters, 'a:b');
      expect(await client.pTTL(`${name}:${name}:a:b`)).toBe(-1);
    } finally {
      await client.close();
    }
  });
});

describe('atomic steps on a redis store that fails', () => {
  let redis: OwnRedis | undefined;
  afterEach(async () => {
    await redis?.close();
    redis = undefined;
  });

  it('fail within the deadline while the server stalls, those waiting behind one included, and work once it is back', async () => {
    redis = await startOwnRedis();
    const store = await open(redis.url, 300);
    const counters = store.collection('counters', parseCounter);
    await counters.set('c', { count: 1 });
    redis.stall();
    const stalled = await Promise.allSettled([
      increment(counters, 'c'),
      increment(counters, 'c'),
      counters.setIfAbsent('other', { count: 1 }),
    ]);
    for (const outcome of stalled) {
      expect(outcome.status).toBe('rejected');
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(StoreUnavailableError);
    }
    redis.resume();
    await expect
      .poll(
        () =>
          increment(counters, 'c').then(
            () => 'answered',
            () => 'failed',
          ),
        { timeout: 5_000 },
      )
      .toBe('answered');
  });
});
