// How long realtime sessions live, and what renews one before the gateway ends it: at a quiet moment
// (nobody speaking, no turn waiting for its answer, nothing playing) within a window before the limit,
// and at a safety margin before it whatever is going on. A gateway that ends sessions sooner than the
// spec's limit (it says so with an expiry error before closing) teaches the conversation its real limit.

/** A session limit learned from a gateway is never taken as shorter than this (a confused server must not cause a renewal storm). */
const MIN_SESSION_LIMIT_MS = 1_000;
/** While the renewal window is open, how often the session looks for a quiet moment. */
const QUIET_CHECK_MS = 100;

export interface RenewalTimes {
  /** How long before the limit the renewal window opens. */
  windowMs: number;
  /** How long before the limit a renewal goes whatever is going on. */
  marginMs: number;
}

/** The defaults: a third of the limit (at most 10 minutes), and a tenth (at most a minute). */
export function renewalTimes(limitMs: number): RenewalTimes {
  return { windowMs: Math.min(10 * 60_000, limitMs / 3), marginMs: Math.min(60_000, limitMs / 10) };
}

/** How long the gateway keeps a realtime session open, as far as the conversation knows: learned from one session for the next. */
export class SessionLimit {
  #ms: number;
  readonly #renewal: RenewalTimes | undefined;

  /** `renewal`: fixed renewal times; without them, renewalTimes() of the limit. */
  constructor(ms: number, renewal: RenewalTimes | undefined) {
    this.#ms = ms;
    this.#renewal = renewal;
  }

  get ms(): number {
    return this.#ms;
  }

  /** A gateway that says when a session opened at `openedAt` expires is believed. */
  believe(expiresAt: Date | undefined, openedAt: number): void {
    if (expiresAt !== undefined) this.#ms = Math.min(this.#ms, Math.max(MIN_SESSION_LIMIT_MS, expiresAt.getTime() - openedAt));
  }

  /** A session closed after `lifetime` noticed its limit sooner than expected: renew before that from now on. Whether it taught anything. */
  learnFrom(lifetime: SessionLifetime, closedAt: number): boolean {
    const lived = closedAt - lifetime.openedAt;
    if (!lifetime.limitNoticed || lived >= this.#ms) return false;
    this.#ms = Math.max(MIN_SESSION_LIMIT_MS, lived);
    return true;
  }

  /** When the renewal window opens and when the renewal is forced, for a session opened at `openedAt`. */
  renewalAt(openedAt: number): { windowAt: number; forcedAt: number } {
    const { windowMs, marginMs } = this.#renewal ?? renewalTimes(this.#ms);
    const endsAt = openedAt + this.#ms;
    return { windowAt: endsAt - windowMs, forcedAt: endsAt - marginMs };
  }
}

/** What renews a session: the conversation, which knows when it is quiet and how to open another session. */
export interface Renewer {
  /** Nobody speaking, no turn waiting for its answer, no answer coming or playing: a renewal loses nothing. */
  quiet(): boolean;
  /** Opens a fresh session in place of this one: `failed` leaves this one going, `gone` when it was replaced or lost meanwhile. */
  renew(why: string): Promise<'renewed' | 'failed' | 'gone'>;
}

/**
 * One realtime session's life: when it opened, whether the gateway said it reached its limit, and what
 * starts its renewal: the window opening (then the look for a quiet moment) and the forced one at the
 * margin. Each trigger is undefined once it fired, and both while a renewal is under way.
 */
export class SessionLifetime {
  readonly openedAt: number;
  readonly #limit: SessionLimit;
  readonly #renewer: Renewer;
  /** The gateway said this session reached its limit: it closes next. */
  #limitNoticed = false;
  #quiet: NodeJS.Timeout | undefined;
  #forced: NodeJS.Timeout | undefined;

  constructor(openedAt: number, limit: SessionLimit, renewer: Renewer) {
    this.openedAt = openedAt;
    this.#limit = limit;
    this.#renewer = renewer;
  }

  get limitNoticed(): boolean {
    return this.#limitNoticed;
  }

  /** The gateway said this session reached its limit (an expiry error): it closes next. */
  noticeLimit(): void {
    this.#limitNoticed = true;
  }

  /** Arms the renewal triggers (both, for a session that just opened). */
  armRenewal(triggers: { quiet: boolean; forced: boolean } = { quiet: true, forced: true }): void {
    const { windowAt, forcedAt } = this.#limit.renewalAt(this.openedAt);
    if (triggers.quiet) {
      this.#quiet = setTimeout(
        () => {
          this.#quiet = undefined;
          this.#renewWhenQuiet();
        },
        Math.max(0, windowAt - Date.now()),
      );
    }
    if (triggers.forced) {
      this.#forced = setTimeout(
        () => {
          this.#forced = undefined;
          void this.#renew('the session limit is near');
        },
        Math.max(0, forcedAt - Date.now()),
      );
    }
  }

  /** Disarms the renewal triggers (the session is renewed, lost or closed). */
  disarmRenewal(): void {
    clearTimeout(this.#quiet);
    clearTimeout(this.#forced);
    this.#quiet = undefined;
    this.#forced = undefined;
  }

  #renewWhenQuiet(): void {
    if (this.#renewer.quiet()) {
      void this.#renew('a quiet moment before the session limit');
      return;
    }
    const check = setInterval(() => {
      if (!this.#renewer.quiet()) return;
      clearInterval(check);
      this.#quiet = undefined;
      void this.#renew('a quiet moment before the session limit');
    }, QUIET_CHECK_MS);
    this.#quiet = check;
  }

  /**
   * One renewal at a time: the triggers still waiting are disarmed while it runs, and if it fails, those
   * whose time has not passed meanwhile are armed again (the forced renewal tries after a failed quiet
   * one; after that the session ends at its limit and is reopened).
   */
  async #renew(why: string): Promise<void> {
    const waiting = { quiet: this.#quiet !== undefined, forced: this.#forced !== undefined };
    this.disarmRenewal();
    if ((await this.#renewer.renew(why)) !== 'failed') return;
    this.armRenewal({ quiet: waiting.quiet, forced: waiting.forced && this.#limit.renewalAt(this.openedAt).forcedAt > Date.now() });
  }
}
