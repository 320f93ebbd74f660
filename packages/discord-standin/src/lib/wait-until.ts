/**
 * Waits on events, never on the clock: resolves with the first value `check` finds, checking at once and
 * again whenever `subscribe` wakes it; rejects when `subscribe` fails it, or after `timeoutMs` with
 * `timeoutError()`. Every listener is removed either way.
 */
export function waitUntil<T>(options: {
  check: () => T | undefined;
  /** Calls `wake` whenever `check` may find something now (or `fail` to give up); returns the unsubscribe. */
  subscribe: (wake: () => void, fail: (error: Error) => void) => () => void;
  timeoutMs: number;
  timeoutError: () => Error;
}): Promise<T> {
  const { check, subscribe, timeoutMs, timeoutError } = options;
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const listening: { stop?: () => void } = {};
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      listening.stop?.();
      settle();
    };
    const timer = setTimeout(() => finish(() => reject(timeoutError())), timeoutMs);
    listening.stop = subscribe(
      () => {
        const value = check();
        if (value !== undefined) finish(() => resolve(value));
      },
      (error) => finish(() => reject(error)),
    );
    // Woken while subscribing: finish() ran before there was anything to unsubscribe.
    if (settled) listening.stop();
  });
}
