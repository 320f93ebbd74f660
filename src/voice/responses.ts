import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';

/** Refusals of the same response.create for an active response before it is given up. */
const MAX_ACTIVE_RESPONSE_REFUSALS = 3;
/** After a refusal for a response the bot never saw start, how long before asking again (no response.done will say). */
const ACTIVE_RESPONSE_RETRY: BackoffPolicy = { baseMs: 500, maxMs: 4_000, jitter: 0.25, spread: 'shorter' };

/**
 * The responses of one realtime session: how many are open (between response.created and response.done),
 * a response.create the gateway refused for an active response, to send again once that one ends, and a
 * hold after a refusal for a response the bot had not seen start.
 */
export class ResponsesOfSession {
  /** Responses between response.created and response.done. */
  #open = 0;
  /** Refusals of response.create in a row (reset when a response starts): past MAX_ACTIVE_RESPONSE_REFUSALS it is given up. */
  #refusals = 0;
  /** A refused response.create waits to be sent again: at the next response.done, or when its timer fires. */
  #retry: { timer: NodeJS.Timeout | undefined } | undefined;
  /**
   * The gateway refused an event for an active response that the bot had not seen start: it is taken to be
   * answering something until then (Date.now()), or until the next response.done.
   */
  #heldUntil: number | undefined;

  /** A response is between response.created and response.done. */
  get open(): boolean {
    return this.#open > 0;
  }

  /** A refused response.create waits to be sent again. */
  get retryWaiting(): boolean {
    return this.#retry !== undefined;
  }

  /** Until when the gateway is taken to be answering something the bot did not see start (Date.now()), if it is. */
  get heldUntil(): number | undefined {
    return this.#heldUntil;
  }

  /** Whether the gateway would refuse another response now: one is open, or taken to be. */
  busy(now: number): boolean {
    return this.#open > 0 || (this.#heldUntil !== undefined && now < this.#heldUntil);
  }

  /** A response started (response.created). */
  created(): void {
    this.#open++;
    this.#refusals = 0;
  }

  /** A response ended (response.done); true when none is open any more (then the hold ends too). */
  done(): boolean {
    this.#open = Math.max(0, this.#open - 1);
    if (this.#open > 0) return false;
    this.#heldUntil = undefined;
    return true;
  }

  /**
   * The gateway refused something (the `refusals`th time in a row) for a response the bot did not see
   * start: it is taken as answering something for a backoff.
   */
  holdAfterRefusal(refusals: number): void {
    this.#heldUntil = Date.now() + backoffDelay(refusals - 1, ACTIVE_RESPONSE_RETRY);
  }

  /** A hold whose time has passed ends. */
  endHoldIfOver(now: number): void {
    if (this.#heldUntil !== undefined && now >= this.#heldUntil) this.#heldUntil = undefined;
  }

  /**
   * The gateway refused a response.create for an active response: it is sent again (`retry`) once that
   * response ends (done() says), or after a backoff when none is seen open. Returns the refusals in a row,
   * and whether the response is given up (too many of them).
   */
  createRefused(retry: () => void): { refusals: number; givenUp: boolean } {
    this.#refusals++;
    this.dropRetry();
    if (this.#refusals > MAX_ACTIVE_RESPONSE_REFUSALS) return { refusals: this.#refusals, givenUp: true };
    const timer = this.#open > 0 ? undefined : setTimeout(retry, backoffDelay(this.#refusals - 1, ACTIVE_RESPONSE_RETRY));
    this.#retry = { timer };
    return { refusals: this.#refusals, givenUp: false };
  }

  /** The refused response.create is about to be sent again; false when none waits. */
  takeRetry(): boolean {
    if (!this.#retry) return false;
    this.dropRetry();
    return true;
  }

  /** No refused response.create is sent again (a new turn is answered instead, or the session is gone). */
  dropRetry(): void {
    clearTimeout(this.#retry?.timer);
    this.#retry = undefined;
  }
}
