import type { Logger } from '../lib/log.ts';
import { hears, type ConsentContext, type ConsentRecord, type KnownConsent } from './consent.ts';

// Whom one conversation hears, answered at once for every packet's speaker: the members' choices as the
// conversation last read them (consent.ts decides with them). A member is read from the store when the
// conversation starts or they join its channel; until the read answers, or when it fails, they are not
// heard (failing closed), and a failed read is tried again a while later. A member's change of mind
// (/voice ignore-me, /voice listen-to-me) is set here at once, in every conversation of the process.

/** A member whose choice could not be read is read again after this long (and is not heard meanwhile). */
export const CONSENT_REREAD_MS = 15_000;

export interface HearingOptions {
  context: ConsentContext;
  /** A member's record; rejects when it cannot be had (the store did not answer, the record is unreadable). */
  read(userId: string): Promise<ConsentRecord | undefined>;
  /** Whether `userId` is heard changed (called after it did). */
  onChange(userId: string): void;
  log: Logger;
  rereadMs?: number;
}

export class Hearing {
  readonly #options: HearingOptions;
  readonly #known = new Map<string, KnownConsent>();
  /** Counts each member's changes, so that a read that answers after a newer change is not taken. */
  readonly #generation = new Map<string, number>();
  readonly #rereads = new Map<string, NodeJS.Timeout>();
  #stopped = false;

  constructor(options: HearingOptions) {
    this.#options = options;
  }

  /** Whether the conversation hears `userId` now. */
  heard(userId: string): boolean {
    return hears(userId, this.#known.get(userId) ?? { known: false }, this.#options.context);
  }

  /** Reads the choices of members not known yet (in the channel when it starts, or who joined it); resolves once every read ended. */
  async load(userIds: Iterable<string>): Promise<void> {
    await Promise.all([...userIds].filter((userId) => !this.#known.has(userId)).map((userId) => this.#read(userId)));
  }

  /** A member's choice as just stored: taken at once, whatever read is still under way. */
  set(userId: string, record: ConsentRecord): void {
    this.#take(userId, { known: true, record });
  }

  /** A member left the channel: what was known of them is read again should they come back. */
  forget(userId: string): void {
    this.#bump(userId);
    this.#known.delete(userId);
    clearTimeout(this.#rereads.get(userId));
    this.#rereads.delete(userId);
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#rereads.values()) clearTimeout(timer);
    this.#rereads.clear();
  }

  async #read(userId: string): Promise<void> {
    const generation = this.#bump(userId);
    this.#known.set(userId, { known: false });
    let consent: KnownConsent;
    try {
      consent = { known: true, record: await this.#options.read(userId) };
    } catch (error) {
      if (this.#generation.get(userId) !== generation || this.#stopped) return;
      this.#options.log.warn('could not read whether a member may be heard; not hearing them until it can be read', {
        user: userId,
        error,
      });
      this.#rereadLater(userId);
      return;
    }
    if (this.#generation.get(userId) !== generation || this.#stopped) return;
    this.#take(userId, consent, generation);
  }

  #rereadLater(userId: string): void {
    clearTimeout(this.#rereads.get(userId));
    const timer = setTimeout(() => {
      this.#rereads.delete(userId);
      if (this.#stopped || this.#known.get(userId)?.known !== false) return;
      this.#known.delete(userId);
      void this.load([userId]);
    }, this.#options.rereadMs ?? CONSENT_REREAD_MS);
    timer.unref();
    this.#rereads.set(userId, timer);
  }

  #take(userId: string, consent: KnownConsent, generation = this.#bump(userId)): void {
    if (this.#generation.get(userId) !== generation) return;
    const before = this.heard(userId);
    this.#known.set(userId, consent);
    if (this.heard(userId) !== before && !this.#stopped) this.#options.onChange(userId);
  }

  #bump(userId: string): number {
    const next = (this.#generation.get(userId) ?? 0) + 1;
    this.#generation.set(userId, next);
    return next;
  }
}
