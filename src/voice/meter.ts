import type { Logger } from '../lib/log.ts';
import type { Notice } from '../wording/notice.ts';
import type { VoiceBudgetLeft, VoiceSpending } from '../ports/voice-spend.ts';

// A conversation's meter: the time its realtime sessions are open, counted against the member who
// brought the bot in and the server, and the budget watch that follows from each reading.
//
// Counting does no work per audio frame: a session is counted from the moment it opened to its close
// by one heartbeat per conversation, which hands the time since the last reading of every open session
// to the ledger (a crash loses at most one interval), plus a reading when a session closes and a last
// one when the conversation ends. Each session's time is counted once (its `countedUntil` moves with
// every reading); a reading that fails (store down) keeps its time for the next one.
//
// The budget watch, from each reading's `msLeft`:
//
//   watching ──a minute or less left──▶ watching (warned) ──a reading with nothing left──▶ spent
//      │   ▲                                   │                                                        │
//      └───┘ every reading re-arms the timer   └──── end() from any state ─────────────▶ ended ◀───────┘
//
// Other spending (videos) and budget changes move the deadline, so every reading re-arms the timer, and
// the deadline is confirmed by a reading before the conversation is ended; when that reading cannot be
// taken, the last one decides.

/** A conversation is warned this long before its budget runs out. */
export const BUDGET_WARNING_MS = 60_000;

/** What the meter needs of a realtime session: when it closes. */
export interface MeteredSession {
  once(event: 'close', listener: () => void): unknown;
}

export interface ConversationMeterOptions {
  spending: VoiceSpending;
  guildId: string;
  /** The member who brought the bot in, who is charged with the conversation. */
  userId: string;
  model: string;
  heartbeatMs: number;
  log: Logger;
  /** Once per conversation, when a budget has a minute or less left (at once when it starts so). */
  onWarning(left: BudgetReasons & { msLeft: number }): void;
  /** Once, when a budget is spent: the conversation has to end (with `end()`). */
  onSpent(reasons: BudgetReasons): void;
  now?: () => number;
}

/** Why the conversation ends when it does: the budget that bounds it, for the service to post and say. */
export interface BudgetReasons {
  reason: Notice<'budget.used-up'>;
}

type BudgetWatch =
  | { readonly status: 'watching'; readonly warned: boolean; readonly timer: NodeJS.Timeout | undefined }
  | { readonly status: 'spent' }
  | { readonly status: 'ended' };

interface OpenSession {
  /** Counted up to here. */
  countedUntil: number;
}

export class ConversationMeter {
  readonly #options: ConversationMeterOptions;
  readonly #now: () => number;
  readonly #open = new Set<OpenSession>();
  /** Time of closed sessions, and of readings that failed, not yet counted. */
  #pendingMs = 0;
  /** What the readings counted so far cost, in USD ticks. */
  #countedUsdTicks = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  #watch: BudgetWatch = { status: 'watching', warned: false, timer: undefined };
  /** The last reading's words for why the conversation ends. */
  /** Readings one after the other, so that they reach the ledger, and re-arm the watch, in order. */
  #readings: Promise<unknown> = Promise.resolve();

  constructor(options: ConversationMeterOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** A realtime session opened for this conversation (first, renewed or reconnected): counted until it closes. */
  opened(session: MeteredSession): void {
    if (this.#watch.status === 'ended') return;
    const open: OpenSession = { countedUntil: this.#now() };
    this.#open.add(open);
    session.once('close', () => {
      if (!this.#open.delete(open)) return;
      this.#pendingMs += Math.max(0, this.#now() - open.countedUntil);
      void this.read();
    });
  }

  /** What the conversation's time counted so far cost, in USD ticks (all of it once `end()` resolved). */
  get countedUsdTicks(): number {
    return this.#countedUsdTicks;
  }

  /** Starts the heartbeat and takes a first reading (a conversation starting with under a minute left is warned at once). */
  start(): Promise<boolean> {
    if (this.#watch.status === 'ended' || this.#heartbeat) return Promise.resolve(false);
    this.#heartbeat = setInterval(() => void this.read(), this.#options.heartbeatMs);
    this.#heartbeat.unref();
    return this.read();
  }

  /** Counts what is not counted yet and updates the budget watch; false when the ledger could not be reached. */
  read(): Promise<boolean> {
    const reading = this.#readings.then(() => this.#takeReading());
    this.#readings = reading;
    return reading;
  }

  /** The conversation ended: every session stops counting now, and the rest is counted. */
  async end(): Promise<void> {
    if (this.#watch.status === 'ended') return;
    this.#set({ status: 'ended' });
    clearInterval(this.#heartbeat);
    const now = this.#now();
    for (const open of this.#open) this.#pendingMs += Math.max(0, now - open.countedUntil);
    this.#open.clear();
    if (!(await this.read()) && this.#pendingMs > 0) {
      this.#options.log.error('voice session time could not be counted and is lost', {
        guild: this.#options.guildId,
        user: this.#options.userId,
        ms: this.#pendingMs,
      });
    }
  }

  async #takeReading(): Promise<boolean> {
    const at = this.#now();
    let ms = this.#pendingMs;
    for (const open of this.#open) {
      ms += Math.max(0, at - open.countedUntil);
      open.countedUntil = at;
    }
    this.#pendingMs = 0;
    const { spending, guildId, userId, model } = this.#options;
    let left: VoiceBudgetLeft;
    try {
      left = await spending.meter({ guildId, userId, model, ms, at });
    } catch (error) {
      this.#pendingMs += ms;
      this.#options.log.warn('could not count voice session time; it is kept for the next heartbeat', {
        guild: guildId,
        ms: this.#pendingMs,
        error,
      });
      return false;
    }
    this.#countedUsdTicks += left.usdTicks ?? 0;
    try {
      this.#follow(left, at);
    } catch (error) {
      // Counted either way; a notice that failed must not stop the readings after it.
      this.#options.log.error('could not act on a voice budget reading', { guild: guildId, error });
    }
    return true;
  }

  /** Re-arms the watch from a reading taken at `at`. */
  #follow(left: VoiceBudgetLeft, at: number): void {
    const watch = this.#watch;
    if (watch.status !== 'watching') return;
    if (left.msLeft === undefined || left.reason === undefined) {
      this.#set({ status: 'watching', warned: watch.warned, timer: undefined });
      return;
    }
    this.#arm(at + left.msLeft, watch.warned, { reason: left.reason });
  }

  /** Ends at the deadline; warns when it is a minute away or less; else waits for the warning's time. */
  #arm(deadline: number, warned: boolean, reasons: BudgetReasons): void {
    const msLeft = deadline - this.#now();
    if (msLeft <= 0) {
      this.#set({ status: 'spent' });
      this.#options.onSpent(reasons);
      return;
    }
    if (!warned && msLeft <= BUDGET_WARNING_MS) {
      warned = true;
      this.#options.onWarning({ msLeft, ...reasons });
    }
    const timer = setTimeout(() => this.#due(deadline, warned, reasons), warned ? msLeft : msLeft - BUDGET_WARNING_MS);
    this.#set({ status: 'watching', warned, timer });
  }

  /**
   * The warning's time or the deadline came. The deadline is confirmed by a fresh reading (which re-arms
   * the watch itself: videos or a changed budget may have moved it); when none can be taken, the last
   * reading decides.
   */
  #due(deadline: number, warned: boolean, reasons: BudgetReasons): void {
    if (!warned) return this.#arm(deadline, false, reasons);
    void this.read().then((fresh) => {
      if (!fresh && this.#watch.status === 'watching') this.#arm(deadline, true, reasons);
    });
  }

  /** The one transition: the old watch's timer goes with it. */
  #set(next: BudgetWatch): void {
    const previous = this.#watch;
    if (previous.status === 'watching') clearTimeout(previous.timer);
    this.#watch = next;
  }
}
