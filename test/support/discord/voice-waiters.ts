// Lets tests await a condition on the stand-in's state ("the bot sent 50 frames") instead of
// sleeping: every state change calls notify(), which re-checks the pending conditions.

export const DEFAULT_WAIT_MS = 10_000;

interface PendingWait {
  check(): boolean;
  fail(error: Error): void;
}

export class ConditionWaiters {
  readonly #pending = new Set<PendingWait>();
  #closedWith: Error | undefined;

  /** Resolves with check()'s first defined result; rejects after `timeoutMs` naming `description`. */
  waitFor<T>(check: () => T | undefined, description: string, timeoutMs = DEFAULT_WAIT_MS): Promise<T> {
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    const immediate = check();
    if (immediate !== undefined) return Promise.resolve(immediate);
    return new Promise<T>((resolve, reject) => {
      const pending: PendingWait = {
        check: () => {
          let result: T | undefined;
          try {
            result = check();
          } catch (error) {
            settle();
            reject(error instanceof Error ? error : new Error(String(error)));
            return true;
          }
          if (result === undefined) return false;
          settle();
          resolve(result);
          return true;
        },
        fail: (error) => {
          settle();
          reject(error);
        },
      };
      const timer = setTimeout(
        () => pending.fail(new Error(`voice stand-in: timed out after ${timeoutMs} ms waiting for ${description}`)),
        timeoutMs,
      );
      const settle = () => {
        clearTimeout(timer);
        this.#pending.delete(pending);
      };
      this.#pending.add(pending);
    });
  }

  notify(): void {
    for (const pending of [...this.#pending]) pending.check();
  }

  /** Fails every pending and future wait (the server is closing). */
  close(reason: string): void {
    this.#closedWith = new Error(`voice stand-in: ${reason}`);
    for (const pending of [...this.#pending]) pending.fail(this.#closedWith);
  }
}
