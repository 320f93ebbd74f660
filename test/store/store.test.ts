import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readNumber, readString } from '../../src/lib/json.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, StoredRecordError, StoreUnavailableError, UnstorableRecordError, type Store } from '../../src/store/index.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';

interface Note {
  text: string;
  count: number;
}

function parseNote(raw: unknown): Note {
  const text = readString(raw, 'text');
  const count = readNumber(raw, 'count');
  if (text === undefined || count === undefined) throw new Error('bad note');
  return { text, count };
}

const opened: Store[] = [];
const directories: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function open(url: string): Promise<Store> {
  const store = await openStore(url, silentLogger);
  opened.push(store);
  return store;
}

function sqliteUrl(): string {
  const directory = mkdtempSync(join(tmpdir(), 'store-'));
  directories.push(directory);
  return `sqlite://${join(directory, 'nested', 'bot.sqlite')}`;
}

describe.each([
  ['sqlite', sqliteUrl],
  ['redis', () => 'redis://127.0.0.1:6379'],
])('the %s store', (_kind, url) => {
  it('keeps, lists and deletes records per collection', async () => {
    const store = await open(url());
    const name = `notes_${randomUUID().slice(0, 8)}`;
    const notes = store.collection(name, parseNote);
    const others = store.collection(`${name}_other`, parseNote);
    await notes.set('a', { text: 'first', count: 1 });
    await notes.set('b', { text: 'second', count: 2 });
    await others.set('a', { text: 'elsewhere', count: 9 });

    expect(await notes.get('a')).toEqual({ text: 'first', count: 1 });
    const listed: [string, Note][] = [];
    for await (const entry of notes.entries()) listed.push(entry);
    expect(listed.sort(([a], [b]) => a.localeCompare(b))).toEqual([
      ['a', { text: 'first', count: 1 }],
      ['b', { text: 'second', count: 2 }],
    ]);
    expect(await notes.delete('a')).toBe(true);
    expect(await notes.get('a')).toBeUndefined();
    expect(await others.get('a')).toEqual({ text: 'elsewhere', count: 9 });
    await notes.delete('b');
    await others.delete('a');
  });

  it('gives back strings that start with a colon, and Buffers, as they were written', async () => {
    const store = await open(url());
    const name = `odd_${randomUUID().slice(0, 8)}`;
    const loose = store.collection(name, (raw) => raw);
    const written = {
      text: ':base64:not really',
      list: [':a', 'b:', '::'],
      nested: { at: ':00' },
      bytes: Buffer.from('salt'),
      plain: 'plain',
    };
    await loose.set('odd', written);
    expect(await loose.get('odd')).toEqual(written);
    await loose.delete('odd');
  });

  // Before, Infinity was written as null and the record's next read failed ("Record unreadable").
  it('refuses to write a record holding NaN or Infinity, naming the field, and keeps the record it had', async () => {
    const store = await open(url());
    const name = `ledger_${randomUUID().slice(0, 8)}`;
    const ledger = store.collection(name, (raw) => raw);
    const kept = { users: { u1: { tasks: 1, reservedUsdTicks: 800 } } };
    await ledger.set('day', kept);
    const withInfinity = { users: { u1: { tasks: 2, reservedUsdTicks: Infinity } } };
    const message = `refused to write ${name} record day: ${name}.users.u1.reservedUsdTicks is Infinity, a number JSON cannot store`;

    await expect(ledger.set('day', withInfinity)).rejects.toBeInstanceOf(UnstorableRecordError);
    await expect(ledger.set('day', withInfinity)).rejects.toThrow(message);
    await expect(ledger.update('day', () => withInfinity)).rejects.toThrow(message);
    await expect(ledger.update('day', () => ({ share: Number.NaN }))).rejects.toHaveProperty('field', `${name}.share`);
    await expect(ledger.setIfAbsent('other', [1, -Infinity])).rejects.toHaveProperty('field', `${name}.1`);
    expect(await ledger.get('day')).toEqual(kept);
    expect(await ledger.get('other')).toBeUndefined();
    const listed: [string, unknown][] = [];
    for await (const entry of ledger.entries()) listed.push(entry);
    expect(listed).toEqual([['day', kept]]);
    await ledger.delete('day');
  });

  it('refuses to hand out a record that no longer parses', async () => {
    const location = url();
    const store = await open(location);
    const name = `notes_${randomUUID().slice(0, 8)}`;
    const loose = store.collection(name, (raw) => raw);
    await loose.set('broken', { text: 42 });
    const strict = (await open(location)).collection(name, parseNote);
    await expect(strict.get('broken')).rejects.toBeInstanceOf(StoredRecordError);
    const listed: string[] = [];
    for await (const [id] of strict.entries()) listed.push(id);
    expect(listed).toEqual([]);
    await loose.delete('broken');
  });
});

describe('the sqlite store', () => {
  it('keeps records across a restart', async () => {
    const url = sqliteUrl();
    const first = await openStore(url, silentLogger);
    await first.collection('tasks', parseNote).set('t1', { text: 'pending', count: 0 });
    await first.close();
    const second = await open(url);
    expect(await second.collection('tasks', parseNote).get('t1')).toEqual({ text: 'pending', count: 0 });
  });
});

describe('the redis store', () => {
  it('is shared between processes', async () => {
    const name = `shared_${randomUUID().slice(0, 8)}`;
    const writer = (await open('redis://127.0.0.1:6379')).collection(name, parseNote);
    const reader = (await open('redis://127.0.0.1:6379')).collection(name, parseNote);
    await writer.set('x', { text: 'hello', count: 3 });
    expect(await reader.get('x')).toEqual({ text: 'hello', count: 3 });
    await writer.delete('x');
  });

  // Before, each collection's adapter put four listeners on the one Redis client, and the bot's start (14
  // collections) printed four MaxListenersExceededWarning lines.
  it('opens as many collections as the bot has and uses each, without an EventEmitter leak warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const store = await open('redis://127.0.0.1:6379');
      const prefix = `listeners_${randomUUID().slice(0, 8)}`;
      // Node emits its warning on the next tick; the calls below take many.
      const collections = Array.from({ length: 30 }, (_, index) => store.collection(`${prefix}_${index}`, parseNote));
      for (const notes of collections) {
        await notes.set('n', { text: 'one', count: 1 }, 60_000);
        await notes.update('n', (note) => note && { ...note, count: note.count + 1 }, 60_000);
        expect(await notes.get('n')).toEqual({ text: 'one', count: 2 });
        for await (const entry of notes.entries()) void entry;
        await notes.delete('n');
      }
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning').map((warning) => warning.message)).toEqual([]);
  });
});

describe('a redis store that fails', () => {
  let redis: OwnRedis;
  afterEach(async () => {
    await redis?.close();
  });

  // Before, Keyv swallowed the failure and a stalled or dropped Redis read as "no record": the poller
  // then dropped the task without a word.
  it('fails a read while the server stalls, instead of answering "no record", and reads it once the server is back', async () => {
    redis = await startOwnRedis();
    const store = await openStore(redis.url, silentLogger, { deadlineMs: 300 });
    opened.push(store);
    const notes = store.collection('notes', parseNote);
    await notes.set('kept', { text: 'still here', count: 1 });
    redis.stall();
    await expect(notes.get('kept')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(notes.set('other', { text: 'later', count: 2 })).rejects.toBeInstanceOf(StoreUnavailableError);
    redis.resume();
    expect(await notes.get('kept')).toEqual({ text: 'still here', count: 1 });
  });

  it('fails reads, writes and scans while the server is gone, and works again when it is back', async () => {
    redis = await startOwnRedis();
    const store = await openStore(redis.url, silentLogger, { deadlineMs: 300 });
    opened.push(store);
    const notes = store.collection('notes', parseNote);
    await redis.kill();
    await expect(notes.get('any')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(notes.delete('any')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(
      (async () => {
        for await (const entry of notes.entries()) void entry;
      })(),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    await redis.restart();
    await expect
      .poll(
        () =>
          notes.get('any').then(
            () => 'answered',
            () => 'failed',
          ),
        { timeout: 5_000 },
      )
      .toBe('answered');
  });

  it('refuses to start when the server cannot be reached, naming STORE_URL', async () => {
    redis = await startOwnRedis();
    await redis.kill();
    await expect(openStore(redis.url, silentLogger, { deadlineMs: 300 })).rejects.toThrow(/STORE_URL/);
  }, 30_000);
});
