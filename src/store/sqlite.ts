import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import KeyvSqlite from '@keyv/sqlite';
import type { AtomicAccess, Backend } from './backend.ts';

// The store on an embedded SQLite file, for one process (the default).

const SQLITE_BUSY_TIMEOUT_MS = 5_000;
// The adapter pages with LIMIT/OFFSET; its default page of 10 makes a restart with many tasks quadratic.
const ITERATION_PAGE = 500;

/** The text of the first row a query answered, checked: undefined when it answered none. */
function storedText(rows: unknown): string | undefined {
  if (!Array.isArray(rows) || rows.length === 0) return undefined;
  const row: unknown = rows[0];
  const value: unknown = typeof row === 'object' && row !== null && 'value' in row ? row.value : undefined;
  if (typeof value !== 'string') throw new Error('a stored row has no text value');
  return value;
}

/**
 * A conditional insert or update of the adapter's row, answering whether it wrote; the adapter keeps no
 * ttl of its own (expiry is the record's `expires`, as Keyv reads it).
 */
function sqliteAtomic(adapter: KeyvSqlite): AtomicAccess {
  const table = adapter.opts.table;
  if (table === undefined) throw new Error('the SQLite adapter has no table');
  return {
    async read(key) {
      return storedText(await adapter.query(`SELECT value FROM ${table} WHERE key = ?`, key));
    },
    async replace(key, expected, text) {
      const rows: unknown =
        expected === undefined
          ? await adapter.query(`INSERT INTO ${table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING RETURNING key`, key, text)
          : await adapter.query(`UPDATE ${table} SET value = ? WHERE key = ? AND value = ? RETURNING key`, text, key, expected);
      return Array.isArray(rows) && rows.length > 0;
    },
  };
}

/** `file` is the database's path, or `:memory:`. */
export async function openSqlite(file: string): Promise<Backend> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  // Each collection gets its own adapter (Keyv binds its namespace to the adapter) and its own table, but
  // they all send their queries through the first adapter's connection: connections of one process that
  // write the same file fight over its lock, and SQLite settles that by sleeping (1, 2, 5, 10… ms), which
  // made a write cost tens of milliseconds under load. An adapter's own connection only creates its table.
  // (An in-memory database is one per connection, so there each adapter keeps its own.)
  const adapters: KeyvSqlite[] = [];
  let sharedQuery: KeyvSqlite['query'] | undefined;
  const adapterFor = (collection: string): { adapter: KeyvSqlite; atomic: AtomicAccess } => {
    const adapter = new KeyvSqlite({
      uri: `sqlite://${file}`,
      table: collection,
      busyTimeout: SQLITE_BUSY_TIMEOUT_MS,
      iterationLimit: ITERATION_PAGE,
    });
    adapters.push(adapter);
    const ownQuery = adapter.query;
    const shared = file === ':memory:' ? ownQuery : (sharedQuery ??= ownQuery);
    if (shared !== ownQuery) {
      const tableReady = ownQuery('SELECT 1');
      tableReady.catch(() => undefined); // awaited by every query below, which fails with it
      adapter.query = async (sql, ...parameters): Promise<unknown> => {
        await tableReady;
        const rows: unknown = await shared(sql, ...parameters);
        return rows;
      };
    }
    return { adapter, atomic: sqliteAtomic(adapter) };
  };
  // WAL lets the poller read while a command writes; NORMAL sync is durable across process crashes.
  const { adapter: probe } = adapterFor('meta');
  await probe.query('PRAGMA journal_mode=WAL');
  await probe.query('PRAGMA synchronous=NORMAL');
  return {
    kind: 'sqlite',
    adapterFor,
    async close() {
      await Promise.all(adapters.map((adapter) => adapter.disconnect()));
    },
  };
}
