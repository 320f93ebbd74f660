import Keyv from 'keyv';
import type { Logger } from '../lib/log.ts';
import { redactUrl, type Backend } from './backend.ts';
import { STORE_DEADLINE_MS, type Collection, type Parse, type Store, type StoreOptions } from './interface.ts';
import { KeyvCollection } from './keyv-collection.ts';
import { deserializeForKeyv, serializeStored } from './record-format.ts';
import { openSqlite } from './sqlite.ts';

// The bot's persistence: named collections of records in Keyv, on an embedded SQLite file by default
// or on Redis for a store shared between processes. What the rest of the bot imports of the store.

export { parseMarker, STORE_DEADLINE_MS, StoredRecordError, StoreUnavailableError, UnstorableRecordError } from './interface.ts';
export type { Collection, Parse, RecordWarning, Store, StoreOptions } from './interface.ts';
export { ownKeyedTable, parseShape, RecordShapeError, versionedRecord, type RecordKind } from './versioned.ts';

export async function openStore(url: string, log: Logger, options: StoreOptions = {}): Promise<Store> {
  const deadlineMs = options.deadlineMs ?? STORE_DEADLINE_MS;
  // The Redis client is loaded only for a Redis store: @redis/client declares `class … extends String`,
  // and V8 then runs every `charCodeAt` loop of the process about 5x slower (a 4,096-character loop: 5 µs
  // before, 26 µs after, Node 22), which a bot on its embedded SQLite store need not pay.
  const backend: Backend = url.startsWith('sqlite://')
    ? await openSqlite(url.slice('sqlite://'.length))
    : await (await import('./redis.ts')).openRedis(url, log, deadlineMs);
  const { kind } = backend;
  const openCollections = new Set<string>();
  log.info('store opened', { kind, url: redactUrl(url) });

  return {
    kind,
    collection<T>(name: string, parse: Parse<T>): Collection<T> {
      if (openCollections.has(name)) throw new Error(`collection ${name} is already open`);
      openCollections.add(name);
      const { adapter, atomic } = backend.adapterFor(name);
      const keyv = new Keyv({
        store: adapter,
        namespace: name,
        serialize: serializeStored,
        deserialize: deserializeForKeyv,
        throwOnErrors: true,
      });
      // Thrown to the caller, who logs it with what it was doing; here only for debugging.
      keyv.on('error', (error: unknown) => log.debug('store error', { collection: name, error }));
      return new KeyvCollection<T>(name, keyv, atomic, parse, log, deadlineMs);
    },
    async close() {
      await backend.close();
      log.info('store closed', { kind });
    },
  };
}
