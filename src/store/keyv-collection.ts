import type Keyv from 'keyv';
import { KeyedLock } from '../lib/keyed-lock.ts';
import type { Logger } from '../lib/log.ts';
import type { AtomicAccess } from './backend.ts';
import {
  deadlineMessage,
  StoredRecordError,
  StoreUnavailableError,
  UnstorableRecordError,
  withinDeadline,
  type Collection,
  type Parse,
} from './interface.ts';
import { parseStoredText, serializeStored, UnreadableText, UnstorableNumberError, type StoredEnvelope } from './record-format.ts';

// A collection on Keyv, on either backend: Keyv's reads and writes, and the backend's atomic steps for
// what Keyv does not do.

export class KeyvCollection<T> implements Collection<T> {
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

  /** A value Keyv read (through deserializeForKeyv), parsed; throws what is wrong with it. */
  #parseRaw(id: string, raw: unknown): T {
    if (raw instanceof UnreadableText) throw raw.error;
    return this.#parse(raw, (message, fields) => this.#log.warn(message, { ...fields, collection: this.#name, id }));
  }

  /** #parseRaw, failing with StoredRecordError, which names the record. */
  #parseValue(id: string, raw: unknown): T {
    try {
      return this.#parseRaw(id, raw);
    } catch (error) {
      throw new StoredRecordError(this.#name, id, error);
    }
  }

  async get(id: string): Promise<T | undefined> {
    const raw: unknown = await this.#call('read', id, () => this.#keyv.get(id));
    if (raw === undefined) return undefined;
    return this.#parseValue(id, raw);
  }

  async set(id: string, value: T, ttlMs?: number): Promise<void> {
    let written: boolean;
    try {
      written = await this.#call('write', id, () => this.#keyv.set(id, value, ttlMs));
    } catch (error) {
      throw error instanceof UnstorableNumberError ? new UnstorableRecordError(this.#name, id, error) : error;
    }
    if (!written) throw new StoreUnavailableError(`could not write ${this.#name} record ${id}`);
  }

  /** serializeStored, failing with UnstorableRecordError, which names the record and the field. */
  #serialize(id: string, data: StoredEnvelope): string {
    try {
      return serializeStored(data);
    } catch (error) {
      throw error instanceof UnstorableNumberError ? new UnstorableRecordError(this.#name, id, error) : error;
    }
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
  #atomically(
    id: string,
    change: (current: T | undefined) => T | undefined,
    ttlMs: number | undefined,
  ): Promise<{ value: T | undefined; written: boolean }> {
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
        const text = this.#serialize(id, { value: next, expires: ttl === undefined ? undefined : Date.now() + ttl });
        if (await this.#callUntil(giveUpAt, 'write', id, () => this.#atomic.replace(key, raw, text, ttl)))
          return { value: next, written: true };
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
    let data: StoredEnvelope;
    try {
      data = parseStoredText(raw);
    } catch (error) {
      throw new StoredRecordError(this.#name, id, error);
    }
    if (data.value === undefined) return undefined;
    if (data.expires !== undefined && Date.now() > data.expires) return undefined;
    return this.#parseValue(id, data.value);
  }

  async *entries(): AsyncIterable<[string, T]> {
    if (!this.#keyv.iterator) throw new Error(`the ${this.#name} store cannot be iterated`);
    const records: AsyncGenerator<unknown, void> = this.#keyv.iterator(undefined);
    try {
      for (;;) {
        // Each page has the deadline of one call: a whole scan may take as long as it needs.
        const step = await this.#call('scan', '', () => records.next());
        if (step.done) return;
        const entry: unknown = step.value;
        const key: unknown = Array.isArray(entry) ? entry[0] : undefined;
        if (!Array.isArray(entry) || typeof key !== 'string')
          throw new Error(`the ${this.#name} store's scan gave something other than a [key, value] pair`);
        const raw: unknown = entry[1];
        if (raw === undefined) continue;
        try {
          yield [key, this.#parseRaw(key, raw)];
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
