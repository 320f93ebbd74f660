import { EventEmitter } from 'node:events';
import { parseJsonText } from '../lib/json.ts';
import { waitUntil } from '../lib/wait-until.ts';
import { BoundedJournal, type JournalLimits } from './journal.ts';

// The emulator's record of the requests it answered, for tests and demos to look at and wait for.

export interface JournalEntry {
  method: string;
  path: string;
  status: number;
  /** Which key called (a fingerprint: `emulator.keyIdOf(key)`), when it authenticated. */
  keyId?: string;
  /**
   * The request body, parsed, of the newest submissions (see BODY_JOURNAL_LIMITS). It is kept as the text
   * that was sent and parsed on each read: a parsed body of nested junk weighs many times its text.
   */
  body?: unknown;
  requestId: string;
  at: number;
}

/**
 * The journal keeps the newest requests within these bounds, each weighed as JOURNAL_ENTRY_BYTES plus its
 * path (a path may be 16 KiB long), and the bodies of the newest submissions within BODY_JOURNAL_LIMITS.
 */
const JOURNAL_LIMITS: JournalLimits = { maxEntries: 100_000, maxBytes: 32 * 1024 * 1024 };
const JOURNAL_ENTRY_BYTES = 256;
const BODY_JOURNAL_LIMITS: JournalLimits = { maxEntries: 1000, maxBytes: 8 * 1024 * 1024 };

export class RequestJournal {
  readonly #journal = new BoundedJournal<JournalEntry>(JOURNAL_LIMITS);
  readonly #bodies = new BoundedJournal<JournalEntry>(BODY_JOURNAL_LIMITS, (entry) => delete entry.body);
  /** The size of each journaled body, until its entry is recorded. */
  readonly #bodySizes = new WeakMap<JournalEntry, number>();
  readonly #events = new EventEmitter();

  /** The requests recorded, newest last, within the journal's bounds (one array for the journal's life). */
  get entries(): JournalEntry[] {
    return this.#journal.entries;
  }

  /** Keeps the body of a request, as its text, in its entry (once recorded, among the newest bodies). */
  keepBody(entry: JournalEntry, text: string): void {
    Object.defineProperty(entry, 'body', {
      get: () => {
        const parsed = parseJsonText(text);
        return parsed.ok ? parsed.value : undefined;
      },
      enumerable: true,
      configurable: true,
    });
    this.#bodySizes.set(entry, text.length);
  }

  /** Records an answered request. */
  record(entry: JournalEntry): void {
    this.#journal.append(entry, JOURNAL_ENTRY_BYTES + entry.method.length + entry.path.length);
    const bodySize = this.#bodySizes.get(entry);
    if (bodySize !== undefined) this.#bodies.append(entry, bodySize);
    this.#events.emit('entry', entry);
  }

  /** The first request recorded (before or after this call) that `predicate` matches. */
  waitFor(predicate: (entry: JournalEntry) => boolean, timeoutMs: number): Promise<JournalEntry> {
    // The whole journal once; after that, each new entry alone.
    let newest: JournalEntry | undefined;
    return waitUntil({
      check: () => (newest === undefined ? this.#journal.entries.find(predicate) : predicate(newest) ? newest : undefined),
      subscribe: (wake) => {
        const onEntry = (entry: JournalEntry) => {
          newest = entry;
          wake();
        };
        this.#events.on('entry', onEntry);
        return () => this.#events.off('entry', onEntry);
      },
      timeoutMs,
      timeoutError: () => new Error(`the emulator saw no matching request within ${timeoutMs} ms`),
    });
  }
}
