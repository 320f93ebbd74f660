import type KeyvSqlite from '@keyv/sqlite';
import type KeyvRedis from '@keyv/redis';
import type { Store } from './interface.ts';

// What each backend (SQLite, Redis) gives the collections: a Keyv adapter per collection, and what Keyv
// does not do, written natively for the backend.

/**
 * The atomic steps, over the records Keyv writes (its keys, its serialized `{ value, expires }` text), so
 * a record written either way reads the same.
 */
export interface AtomicAccess {
  /** The stored text under Keyv's `key`, expired or not; undefined when there is none. */
  read(key: string): Promise<string | undefined>;
  /**
   * Writes `text` under Keyv's `key` if the record still holds exactly `expected` (undefined: none), as one
   * step for every process on the store; whether it wrote.
   */
  replace(key: string, expected: string | undefined, text: string, ttlMs: number | undefined): Promise<boolean>;
}

export interface Backend {
  readonly kind: Store['kind'];
  /** The adapter of one collection, and its atomic steps. */
  adapterFor(collection: string): { adapter: KeyvSqlite | KeyvRedis<unknown>; atomic: AtomicAccess };
  close(): Promise<void>;
}

/** A store URL fit for logs and errors: without the password it may carry. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
