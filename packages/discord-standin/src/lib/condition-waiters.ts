import { waitUntil } from './wait-until.ts';

// Lets tests await a condition on the stand-in's state ("the bot sent 50 frames") instead of
// sleeping: every state change calls notify(), which re-checks the pending conditions.

export const DEFAULT_WAIT_MS = 10_000;

interface PendingWait {
  wake(): void;
  fail(error: Error): void;
}

export class ConditionWaiters {
  readonly #pending = new Set<PendingWait>();
  #closedWith: Error | undefined;

  /** Resolves with check()'s first defined result; rejects when check throws, or after `timeoutMs` naming `description`. */
  waitFor<T>(check: () => T | undefined, description: string, timeoutMs = DEFAULT_WAIT_MS): Promise<T> {
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    return waitUntil({
      check,
      subscribe: (wake, fail) => {
        const pending: PendingWait = {
          wake: () => {
            try {
              wake();
            } catch (error) {
              fail(error instanceof Error ? error : new Error(String(error)));
            }
          },
          fail,
        };
        this.#pending.add(pending);
        return () => this.#pending.delete(pending);
      },
      timeoutMs,
      timeoutError: () => new Error(`voice stand-in: timed out after ${timeoutMs} ms waiting for ${description}`),
    });
  }

  notify(): void {
    for (const pending of [...this.#pending]) pending.wake();
  }

  /** Fails every pending and future wait (the server is closing). */
  close(reason: string): void {
    this.#closedWith = new Error(`voice stand-in: ${reason}`);
    for (const pending of [...this.#pending]) pending.fail(this.#closedWith);
  }
}
