import type { Collection, Parse, Store } from '../src/store/index.ts';

// A store that counts what the parts ask of it, for the spend benchmark: every call of every collection,
// by collection and method, and the requests those calls make of the backend. An update is a read and a
// compare-and-set, tried again (read and written again) when another writer came first: the `change` it
// is given runs once per attempt, which is how its retries are seen from outside. setIfAbsent's own
// retries are not visible here (it takes no `change`); a scan counts once however many pages it reads.

export interface StoreTally {
  /** Collection calls, each update's retries counted as calls of their own: the store round trips the parts cause. */
  roundTrips: number;
  /** What the backend was asked: a get, set or delete is one request, an update attempt a read and (when it writes) a write. */
  requests: number;
  /** Collection calls by `collection method` (retries included). */
  byCall: Map<string, number>;
}

function emptyTally(): StoreTally {
  return { roundTrips: 0, requests: 0, byCall: new Map() };
}

export class CountingStore implements Store {
  readonly #inner: Store;
  #tally = emptyTally();

  constructor(inner: Store) {
    this.#inner = inner;
  }

  get kind(): Store['kind'] {
    return this.#inner.kind;
  }

  /** What was counted since the last take, and a fresh count from now on. */
  take(): StoreTally {
    const tally = this.#tally;
    this.#tally = emptyTally();
    return tally;
  }

  #count(collection: string, method: string, roundTrips: number, requests: number): void {
    const tally = this.#tally;
    tally.roundTrips += roundTrips;
    tally.requests += requests;
    const key = `${collection} ${method}`;
    tally.byCall.set(key, (tally.byCall.get(key) ?? 0) + roundTrips);
  }

  collection<T>(name: string, parse: Parse<T>): Collection<T> {
    const inner = this.#inner.collection(name, parse);
    const count = (method: string, roundTrips = 1, requests = roundTrips) => this.#count(name, method, roundTrips, requests);
    return {
      get: (id) => {
        count('get');
        return inner.get(id);
      },
      set: (id, value, ttlMs) => {
        count('set');
        return inner.set(id, value, ttlMs);
      },
      delete: (id) => {
        count('delete');
        return inner.delete(id);
      },
      entries: () => {
        count('entries');
        return inner.entries();
      },
      setIfAbsent: async (id, value, ttlMs) => {
        const outcome = await inner.setIfAbsent(id, value, ttlMs);
        count('setIfAbsent', 1, outcome.created ? 2 : 1);
        return outcome;
      },
      update: async (id, change, ttlMs) => {
        let attempts = 0;
        let writes = 0;
        try {
          return await inner.update(
            id,
            (current) => {
              attempts++;
              const next = change(current);
              if (next !== undefined) writes++;
              return next;
            },
            ttlMs,
          );
        } finally {
          count('update', Math.max(1, attempts), Math.max(1, attempts) + writes);
        }
      },
    };
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}
