import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KeyvRedis from '@keyv/redis';
import KeyvSqlite from '@keyv/sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, StoredRecordError, type Store } from '../../src/store/index.ts';
import {
  deserializeForKeyv,
  parseStoredText,
  RecordFormatError,
  serializeStored,
  UnreadableText,
  UnstorableNumberError,
} from '../../src/store/record-format.ts';

// The store reads back text that anything may have written: what is not a record in Keyv's format is
// refused, saying what is wrong, and never taken for a record or for "no record".

describe('parsing stored text', () => {
  it('reads a record with and without an expiry, and one that holds nothing', () => {
    expect(parseStoredText('{"value":{"count":1},"expires":1700000000000}')).toEqual({ value: { count: 1 }, expires: 1700000000000 });
    expect(parseStoredText('{"value":"v"}')).toEqual({ value: 'v' });
    expect(parseStoredText('{"value":true,"expires":null}')).toEqual({ value: true });
    expect(parseStoredText('{}')).toEqual({ value: undefined });
  });

  it('reads back what it wrote, strings starting with a colon and Buffers included', () => {
    const value = { text: ':base64:not really', list: [':a', 'b:', '::'], bytes: Buffer.from('salt'), plain: 'plain' };
    expect(parseStoredText(serializeStored({ value, expires: 5 }))).toEqual({ value, expires: 5 });
  });

  it.each([
    ['text that is not JSON', '{"value":', 'the stored text is not JSON'],
    ['JSON that is not an object', '[1,2]', 'the stored text is [1,2], not a { value, expires } object'],
    ['null', 'null', 'the stored text is null, not a { value, expires } object'],
    ['a bare value', '"just text"', 'the stored text is "just text", not a { value, expires } object'],
    [
      'an expiry that is not a time',
      '{"value":1,"expires":"tomorrow"}',
      'the stored field expires is "tomorrow", not a time in milliseconds',
    ],
  ])('refuses %s, saying what is wrong', (_case, text, message) => {
    expect(() => parseStoredText(text)).toThrow(new RecordFormatError(message));
  });

  it('quotes only the start of a long wrong value', () => {
    expect(() => parseStoredText(JSON.stringify('x'.repeat(1000)))).toThrow(/^the stored text is "x{39}…, not a/);
  });

  it.each([
    [
      'Infinity in a nested field',
      { value: { reservation: { estimateUsdTicks: Infinity } } },
      'value.reservation.estimateUsdTicks',
      Infinity,
    ],
    ['NaN in a list', { value: { turns: [{ ms: 1 }, { ms: Number.NaN }] } }, 'value.turns.1.ms', Number.NaN],
    ['-Infinity as the whole value', { value: -Infinity }, 'value', -Infinity],
    ['an expiry of Infinity', { value: 1, expires: Infinity }, 'expires', Infinity],
  ])('refuses to write %s, naming where it is, instead of writing null', (_case, data, path, number) => {
    const refusal = (() => {
      try {
        serializeStored<unknown>(data);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(UnstorableNumberError);
    expect(refusal).toMatchObject({ path: path.split('.'), number, message: `${path} is ${number}, a number JSON cannot store` });
  });

  it('writes nulls, and numbers in keys and strings, as they are', () => {
    const value = { nothing: null, list: [null, 1], Infinity: 'NaN', at: new Date(0) };
    expect(parseStoredText(serializeStored({ value }))).toEqual({ value: { ...value, at: '1970-01-01T00:00:00.000Z' } });
  });

  it('hands Keyv an unreadable text as a value the collection refuses, instead of throwing in its scan', () => {
    const data = deserializeForKeyv<unknown>('[1,2]');
    expect(data.value).toBeInstanceOf(UnreadableText);
    expect(data.value instanceof UnreadableText && data.value.error.message).toBe(
      'the stored text is [1,2], not a { value, expires } object',
    );
  });
});

const opened: Store[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function sqliteLocation(): { url: string; writeText: (collection: string, id: string, text: string) => Promise<void> } {
  const directory = mkdtempSync(join(tmpdir(), 'store-format-'));
  cleanups.push(() => {
    rmSync(directory, { recursive: true, force: true });
    return Promise.resolve();
  });
  const file = join(directory, 'bot.sqlite');
  return {
    url: `sqlite://${file}`,
    async writeText(collection, id, text) {
      const adapter = new KeyvSqlite({ uri: `sqlite://${file}`, table: collection });
      await adapter.set(`${collection}:${id}`, text);
      await adapter.disconnect();
    },
  };
}

function redisLocation(): { url: string; writeText: (collection: string, id: string, text: string) => Promise<void> } {
  const url = 'redis://127.0.0.1:6379';
  return {
    url,
    async writeText(collection, id, text) {
      const adapter = new KeyvRedis(url, { namespace: collection, keyPrefixSeparator: ':' });
      await adapter.set(`${collection}:${id}`, text);
      cleanups.push(async () => {
        await adapter.delete(`${collection}:${id}`);
        await adapter.disconnect();
      });
    },
  };
}

describe.each([
  ['sqlite', sqliteLocation],
  ['redis', redisLocation],
])('the %s store, on stored text that is not a record', (_kind, location) => {
  it('refuses it on every read, naming the record and what is wrong, and skips it in a scan', async () => {
    const { url, writeText } = location();
    const store = await openStore(url, silentLogger);
    opened.push(store);
    const name = `format_${randomUUID().slice(0, 8)}`;
    const counts = store.collection(name, (raw) => raw);
    await counts.set('good', 1);
    await writeText(name, 'bad', '{"value":2,"expires":"soon"}');

    const refusal = counts.get('bad');
    await expect(refusal).rejects.toBeInstanceOf(StoredRecordError);
    await expect(refusal).rejects.toThrow(`stored ${name} record bad is unreadable`);
    await expect(refusal).rejects.toHaveProperty('cause.message', 'the stored field expires is "soon", not a time in milliseconds');
    await expect(counts.update('bad', () => 3)).rejects.toBeInstanceOf(StoredRecordError);
    const listed: [string, unknown][] = [];
    for await (const entry of counts.entries()) listed.push(entry);
    expect(listed).toEqual([['good', 1]]);
    await counts.delete('good');
    await counts.delete('bad');
  });
});
