import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Keyv, { type DeserializedData } from 'keyv';
import KeyvSqlite from '@keyv/sqlite';
import KeyvRedis, { createClient, type RedisClientType } from '@keyv/redis';
import { KeyedLock } from './lib/keyed-lock.ts';
import type { Logger } from './lib/log.ts';

// The bot's persistence: named collections of records in Keyv, on an embedded SQLite file by default
// or on Redis for a store shared between processes. Records are parsed on every read: the store is a
// boundary like any other (an older version, a hand edit or a bug may have written it).

/** Turns a stored value into a typed record, throwing when it does not fit. */
export type Parse<T> = (raw: unknown) => T;

/** The parser of a record that only marks that something is so (its value is `true`). */
export function parseMarker(raw: unknown): true {
  if (raw !== true) throw new Error('expected true');
  return true;
}

export interface Collection<T> {
  get(id: string): Promise<T | undefined>;
  set(id: string, value: T, ttlMs?: number): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Every record, in no particular order. Records that no longer parse are logged and skipped. */
  entries(): AsyncIterable<[id: string, value: T]>;
  /**
   * Writes `value` unless there is a record, as one step for every process sharing the store: `created`
   * says whether this call wrote it, `value` is what the store holds (this value, or the one already there).
   */
  setIfAbsent(id: string, value: T, ttlMs?: number): Promise<{ created: boolean; value: T }>;
  /**
   * Reads, changes and writes one record as one step for every process sharing the store: `change` gets the
   * record (undefined when there is none), its own to modify, and returns the record to write, or undefined
   * to write nothing. When another writer changed the record between the read and the write, `change` runs
   * again on what that writer left, so it must do nothing else. Returns what the store holds afterwards.
   */
  update(id: string, change: (current: T | undefined) => T | undefined, ttlMs?: number): Promise<T | undefined>;
}

export interface Store {
  readonly kind: 'sqlite' | 'redis';
  collection<T>(name: string, parse: Parse<T>): Collection<T>;
  close(): Promise<void>;
}

export class StoredRecordError extends Error {
  constructor(collection: string, id: string, cause: unknown) {
    super(`stored ${collection} record ${id} is unreadable`, { cause });
    this.name = 'StoredRecordError';
  }
}

/**
 * The store did not answer (a connection lost or refused, a server stalled past the deadline): nothing can
 * be said about the record, so this is never taken as "no record". Whoever asked tries again later.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'StoreUnavailableError';
  }
}

/** Every store call answers within this, or fails with StoreUnavailableError (a stalled Redis queues commands). */
export const STORE_DEADLINE_MS = 5_000;
/** How long the start waits for the store to accept a connection, in calls' deadlines. */
const CONNECT_DEADLINES = 3;
/** Commands node-redis keeps for a lost connection; beyond it new ones fail at once instead of piling up. */
const REDIS_QUEUE_MAX = 10_000;
const SQLITE_BUSY_TIMEOUT_MS = 5_000;
// The adapter pages with LIMIT/OFFSET; its default page of 10 makes a restart with many tasks quadratic.
const ITERATION_PAGE = 500;

/**
 * What Keyv does not do, written natively for each backend over the records Keyv writes (its keys, its
 * serialized `{ value, expires }` text), so a record written either way reads the same.
 */
interface AtomicAccess {
  /** The stored text under Keyv's `key`, expired or not; undefined when there is none. */
  read(key: string): Promise<string | undefined>;
  /**
   * Writes `text` under Keyv's `key` if the record still holds exactly `expected` (undefined: none), as one
   * step for every process on the store; whether it wrote.
   */
  replace(key: string, expected: string | undefined, text: string, ttlMs: number | undefined): Promise<boolean>;
}

type AdapterFactory = (collection: string) => { adapter: KeyvSqlite | KeyvRedis<unknown>; atomic: AtomicAccess };

function deadlineMessage(deadlineMs: number, what: string): string {
  return `the store did not answer within ${deadlineMs} ms (${what})`;
}

/** `work`, or StoreUnavailableError when it fails or takes longer than `deadlineMs` (it may still land later). */
async function withinDeadline<T>(work: Promise<T>, deadlineMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(deadlineMessage(deadlineMs, what))), deadlineMs);
  });
  try {
    return await Promise.race([work, late]);
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    throw new StoreUnavailableError(`the store failed (${what})`, error);
  } finally {
    clearTimeout(timer);
  }
}

class KeyvCollection<T> implements Collection<T> {
  readonly #name: string;
  readonly #keyv: Keyv;
  readonly #parse: Parse<T>;
  readonly #atomic: AtomicAccess;
  readonly #log: Logger;
  readonly #deadlineMs: number;
  /** Atomic changes of one record in this process wait for each other instead of racing to their writes. */
  readonly #lock = new KeyedLock();

  constructor(name: string, keyv: Keyv, atomic: AtomicAccess, parse: Parse<T>, log: Logger, deadlineMs: number) {
    this.#name = name;
    this.#keyv = keyv;
    this.#atomic = atomic;
    this.#parse = parse;
    this.#log = log;
    this.#deadlineMs = deadlineMs;
  }

  #call<R>(what: string, id: string, work: () => Promise<R>): Promise<R> {
    return withinDeadline(work(), this.#deadlineMs, `${what} ${this.#name} ${id}`);
  }

  async get(id: string): Promise<T | undefined> {
    const raw: unknown = await this.#call('read', id, () => this.#keyv.get(id));
    if (raw === undefined) return undefined;
    try {
      return this.#parse(raw);
    } catch (error) {
      throw new StoredRecordError(this.#name, id, error);
    }
  }

  async set(id: string, value: T, ttlMs?: number): Promise<void> {
    const written = await this.#call('write', id, () => this.#keyv.set(id, value, ttlMs));
    if (!written) throw new StoreUnavailableError(`could not write ${this.#name} record ${id}`);
  }

  async delete(id: string): Promise<boolean> {
    return this.#call('delete', id, () => this.#keyv.delete(id));
  }

  async setIfAbsent(id: string, value: T, ttlMs?: number): Promise<{ created: boolean; value: T }> {
    const outcome = await this.#atomically(id, (current) => (current === undefined ? value : undefined), ttlMs);
    // Not written: there was a record, and that is what the store holds.
    return { created: outcome.written, value: outcome.value ?? value };
  }

  async update(id: string, change: (current: T | undefined) => T | undefined, ttlMs?: number): Promise<T | undefined> {
    return (await this.#atomically(id, change, ttlMs)).value;
  }

  /**
   * Compare-and-set, tried again on what another process wrote until it holds. The whole step, waiting for
   * this process's earlier changes of the record included, answers within one deadline.
   */
  #atomically(id: string, change: (current: T | undefined) => T | undefined, ttlMs: number | undefined): Promise<{ value: T | undefined; written: boolean }> {
    const giveUpAt = Date.now() + this.#deadlineMs;
    const key = this.#keyv._getKeyPrefix(id);
    // As Keyv's own set: no ttl (or 0) keeps the record for good.
    const ttl = ttlMs ? ttlMs : undefined;
    return this.#lock.run(id, async () => {
      for (let attempt = 0; ; attempt++) {
        const raw = await this.#callUntil(giveUpAt, attempt === 0 ? 'read' : 'read again', id, () => this.#atomic.read(key));
        const current = raw === undefined ? undefined : this.#decode(id, raw);
        const next = change(current);
        if (next === undefined) return { value: current, written: false };
        const text = serializeStored<T>({ value: next, expires: ttl === undefined ? undefined : Date.now() + ttl });
        if (await this.#callUntil(giveUpAt, 'write', id, () => this.#atomic.replace(key, raw, text, ttl))) return { value: next, written: true };
        // Another process wrote between this read and this write: decide again on what it left.
      }
    });
  }

  /** #call with what is left of a deadline that runs out at `giveUpAt`. */
  #callUntil<R>(giveUpAt: number, what: string, id: string, work: () => Promise<R>): Promise<R> {
    const left = giveUpAt - Date.now();
    const label = `${what} ${this.#name} ${id}`;
    if (left <= 0) return Promise.reject(new StoreUnavailableError(deadlineMessage(this.#deadlineMs, label)));
    return withinDeadline(work(), left, label);
  }

  /** A record from its stored text as Keyv reads it: undefined when it has expired. */
  #decode(id: string, raw: string): T | undefined {
    let data: DeserializedData<unknown> | undefined;
    try {
      data = deserializeStored<unknown>(raw);
    } catch (error) {
      throw new StoredRecordError(this.#name, id, error);
    }
    if (data === undefined || data === null || data.value === undefined) return undefined;
    if (typeof data.expires === 'number' && Date.now() > data.expires) return undefined;
    try {
      return this.#parse(data.value);
    } catch (error) {
      throw new StoredRecordError(this.#name, id, error);
    }
  }

  async *entries(): AsyncIterable<[string, T]> {
    if (!this.#keyv.iterator) throw new Error(`the ${this.#name} store cannot be iterated`);
    const records = this.#keyv.iterator(undefined) as AsyncGenerator<[string, unknown]>;
    try {
      for (;;) {
        // Each page has the deadline of one call: a whole scan may take as long as it needs.
        const step = await this.#call('scan', '', () => records.next());
        if (step.done) return;
        const [key, raw] = step.value;
        if (raw === undefined) continue;
        try {
          yield [key, this.#parse(raw)];
        } catch (error) {
          this.#log.warn('skipping an unreadable stored record', { collection: this.#name, id: key, error });
        }
      }
    } finally {
      // Not awaited: after a deadline the scan is still waiting for its page, and would hold this up.
      records.return(undefined).catch(() => undefined);
    }
  }
}

/**
 * A JSON string value or key that starts with `:`, in compact JSON: `":` right after `{`, `[`, `,` or `:`.
 * Keyv's format escapes exactly such strings (Buffers are `:base64:…`); text without one is plain JSON.
 */
const COLON_STRING = /[{[,:]":/;

/**
 * Keyv's own deserializer runs JSON.parse with a reviver, several times slower than without, for what its
 * serializer escapes; text without COLON_STRING parses plainly, with the same result.
 */
function deserializeStored<Value>(text: string): DeserializedData<Value> | undefined {
  if (!COLON_STRING.test(text)) return JSON.parse(text) as DeserializedData<Value>;
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value !== 'string' || !value.startsWith(':')) return value;
    return value.startsWith(':base64:') ? Buffer.from(value.slice(8), 'base64') : value.slice(1);
  }) as DeserializedData<Value>;
}

/**
 * Keyv's format, written natively: its own serializer walks every value in JavaScript to mark what its
 * deserializer (and deserializeStored) must read back specially, strings that start with `:` (written
 * with one more) and Buffers (`:base64:…`). Plain JSON.stringify is right for any value without them,
 * which COLON_STRING (and the Buffer mark) tells; only the others pay for a replacer.
 */
function serializeStored<Value>(data: DeserializedData<Value>): string {
  const plain = JSON.stringify(data);
  if (!COLON_STRING.test(plain) && !plain.includes('"type":"Buffer"')) return plain;
  return JSON.stringify(data, function (this: Record<string, unknown>, key: string, value: unknown) {
    const original = this[key];
    if (Buffer.isBuffer(original)) return `:base64:${original.toString('base64')}`;
    return typeof value === 'string' && value.startsWith(':') ? `:${value}` : value;
  });
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

function storedText(rows: unknown): string | undefined {
  if (!Array.isArray(rows) || rows.length === 0) return undefined;
  const row: unknown = rows[0];
  const value: unknown = typeof row === 'object' && row !== null && 'value' in row ? row.value : undefined;
  if (typeof value !== 'string') throw new Error('a stored row has no text value');
  return value;
}

/**
 * On SQLite (one process): a conditional insert or update of the adapter's row, answering whether it
 * wrote; the adapter keeps no ttl of its own (expiry is the record's `expires`, as Keyv reads it).
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

/** Sets KEYS[1] to ARGV[2] (with ARGV[3] ms to live, if given) only while it holds ARGV[1]; 1 if it did. */
const REDIS_COMPARE_AND_SET = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1`;

/**
 * On Redis, shared by every worker: SET NX for a record that is not there, a script (atomic on the server)
 * for one that is, on the adapter's own key names (namespace, separator, Keyv's key) and with its ttl.
 */
function redisAtomic(client: RedisClientType, adapter: KeyvRedis<unknown>): AtomicAccess {
  const nativeKey = (key: string): string => adapter.createKeyPrefix(key, adapter.namespace);
  return {
    async read(key) {
      return (await client.get(nativeKey(key))) ?? undefined;
    },
    async replace(key, expected, text, ttlMs) {
      if (expected === undefined) {
        const expiration = ttlMs === undefined ? {} : { expiration: { type: 'PX', value: ttlMs } as const };
        return (await client.set(nativeKey(key), text, { condition: 'NX', ...expiration })) !== null;
      }
      const ttl = ttlMs === undefined ? [] : [String(ttlMs)];
      return (await client.eval(REDIS_COMPARE_AND_SET, { keys: [nativeKey(key)], arguments: [expected, text, ...ttl] })) === 1;
    },
  };
}

export interface StoreOptions {
  /** Each call's deadline; default STORE_DEADLINE_MS (tests of a stalled store shorten it). */
  deadlineMs?: number;
}

export async function openStore(url: string, log: Logger, options: StoreOptions = {}): Promise<Store> {
  const deadlineMs = options.deadlineMs ?? STORE_DEADLINE_MS;
  let kind: Store['kind'];
  let createAdapter: AdapterFactory;
  let closeConnection: () => Promise<void>;

  if (url.startsWith('sqlite://')) {
    kind = 'sqlite';
    const file = url.slice('sqlite://'.length);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    // Each collection gets its own adapter (Keyv binds its namespace to the adapter) and its own table, but
    // they all send their queries through the first adapter's connection: connections of one process that
    // write the same file fight over its lock, and SQLite settles that by sleeping (1, 2, 5, 10… ms), which
    // made a write cost tens of milliseconds under load. An adapter's own connection only creates its table.
    // (An in-memory database is one per connection, so there each adapter keeps its own.)
    const adapters: KeyvSqlite[] = [];
    let sharedQuery: KeyvSqlite['query'] | undefined;
    const sqliteAdapter = (collection: string): { adapter: KeyvSqlite; atomic: AtomicAccess } => {
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
    createAdapter = sqliteAdapter;
    // WAL lets the poller read while a command writes; NORMAL sync is durable across process crashes.
    const { adapter: probe } = sqliteAdapter('meta');
    await probe.query('PRAGMA journal_mode=WAL');
    await probe.query('PRAGMA synchronous=NORMAL');
    closeConnection = async () => {
      await Promise.all(adapters.map((adapter) => adapter.disconnect()));
    };
  } else {
    kind = 'redis';
    const client: RedisClientType = createClient({ url, commandsQueueMaxLength: REDIS_QUEUE_MAX, socket: { connectTimeout: deadlineMs } });
    client.on('error', (error: unknown) => log.error('redis connection error', { error }));
    const connectDeadlineMs = CONNECT_DEADLINES * deadlineMs;
    try {
      await withinDeadline(client.connect(), connectDeadlineMs, 'connect');
    } catch (error) {
      client.destroy();
      throw new StoreUnavailableError(`could not connect to the store at STORE_URL ${redactUrl(url)} within ${connectDeadlineMs / 1000} s`, error);
    }
    // Errors are thrown, not swallowed: a read that fails must never look like "no record".
    createAdapter = (collection) => {
      const adapter = new KeyvRedis(client, { namespace: collection, keyPrefixSeparator: ':', throwOnErrors: true });
      return { adapter, atomic: redisAtomic(client, adapter) };
    };
    closeConnection = async () => {
      // A graceful close waits for queued commands, which a lost server never answers.
      await withinDeadline(client.close(), deadlineMs, 'close').catch(() => client.destroy());
    };
  }

  const openCollections = new Set<string>();
  log.info('store opened', { kind, url: redactUrl(url) });

  return {
    kind,
    collection<T>(name: string, parse: Parse<T>): Collection<T> {
      if (openCollections.has(name)) throw new Error(`collection ${name} is already open`);
      openCollections.add(name);
      const { adapter, atomic } = createAdapter(name);
      const keyv = new Keyv({ store: adapter, namespace: name, serialize: serializeStored, deserialize: deserializeStored, throwOnErrors: true });
      // Thrown to the caller, who logs it with what it was doing; here only for debugging.
      keyv.on('error', (error: unknown) => log.debug('store error', { collection: name, error }));
      return new KeyvCollection<T>(name, keyv, atomic, parse, log, deadlineMs);
    },
    async close() {
      await closeConnection();
      log.info('store closed', { kind });
    },
  };
}
