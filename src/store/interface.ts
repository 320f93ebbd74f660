import { UnstorableNumberError } from './record-format.ts';

// What the rest of the bot knows of its persistence: named collections of records, each record parsed on
// every read (the store is a boundary like any other: an older version, a hand edit or a bug may have
// written it), every call within a deadline, and the two ways a call fails.

/**
 * Turns a stored value into a typed record, throwing when it does not fit. A record it can still read
 * past something (a setting out of range, read as its default) is told to `warn`, which the collection logs
 * as one line naming the record.
 */
export type Parse<T> = (raw: unknown, warn: RecordWarning) => T;

/** What a parser read past in a record it could read: one warning line, with the collection and the record's key. */
export type RecordWarning = (message: string, fields?: Readonly<Record<string, unknown>>) => void;

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

export interface StoreOptions {
  /** Each call's deadline; default STORE_DEADLINE_MS (tests of a stalled store shorten it). */
  deadlineMs?: number;
}

export class StoredRecordError extends Error {
  constructor(collection: string, id: string, cause: unknown) {
    super(`stored ${collection} record ${id} is unreadable`, { cause });
    this.name = 'StoredRecordError';
  }
}

/**
 * A record refused as it was about to be written, because it holds a number JSON cannot store (NaN,
 * Infinity): nothing was written and the record as it was stays. Names the field, as
 * `tasks.reservation.estimateUsdTicks`. A bug upstream, never the store's fault, so never StoreUnavailableError.
 */
export class UnstorableRecordError extends Error {
  readonly collection: string;
  readonly field: string;

  constructor(collection: string, id: string, cause: UnstorableNumberError) {
    // The stored envelope is { value, expires }: the record's fields are under `value`.
    const [first, ...rest] = cause.path;
    const field = first === 'value' ? [collection, ...rest].join('.') : `${collection} (${cause.path.join('.')})`;
    super(`refused to write ${collection} record ${id}: ${field} is ${cause.number}, a number JSON cannot store`, { cause });
    this.name = 'UnstorableRecordError';
    this.collection = collection;
    this.field = field;
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

export function deadlineMessage(deadlineMs: number, what: string): string {
  return `the store did not answer within ${deadlineMs} ms (${what})`;
}

/** `work`, or StoreUnavailableError when it fails or takes longer than `deadlineMs` (it may still land later). */
export async function withinDeadline<T>(work: Promise<T>, deadlineMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(deadlineMessage(deadlineMs, what))), deadlineMs);
  });
  try {
    return await Promise.race([work, late]);
  } catch (error) {
    // A value refused before it reached the store says nothing of the store.
    if (error instanceof StoreUnavailableError || error instanceof UnstorableNumberError) throw error;
    throw new StoreUnavailableError(`the store failed (${what})`, error);
  } finally {
    clearTimeout(timer);
  }
}
