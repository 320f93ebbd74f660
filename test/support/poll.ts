import { waitUntil } from '../../src/lib/wait-until.ts';

/**
 * vitest.config.ts's testTimeout: the bound of a poll that has none of its own, which the test's own
 * timeout, started earlier, always reaches first.
 */
export const TEST_TIMEOUT_MS = 30_000;

/**
 * Asks `ask` at once, and again `intervalMs` after each answer (never two questions at a time), until
 * `found` finds what it waits for in an answer: for what says nothing unless asked, such as an HTTP
 * endpoint polled as the bot's poller would. Rejects when `ask` fails, or after `timeoutMs` with
 * `timeoutError(the last answer)`.
 */
export function pollUntil<A, T>(options: {
  ask: () => Promise<A>;
  found: (answer: A) => T | undefined;
  intervalMs: number;
  timeoutMs: number;
  timeoutError: (last: A | undefined) => Error;
}): Promise<T> {
  const { ask, found, intervalMs, timeoutMs, timeoutError } = options;
  let last: { answer: A } | undefined;
  return waitUntil({
    check: () => (last === undefined ? undefined : found(last.answer)),
    subscribe: (wake, fail) => {
      let stopped = false;
      let timer: NodeJS.Timeout | undefined;
      const askOnce = () => {
        ask().then(
          (answer) => {
            if (stopped) return;
            last = { answer };
            wake();
            if (!stopped) timer = setTimeout(askOnce, intervalMs);
          },
          (error: unknown) => {
            if (!stopped) fail(error instanceof Error ? error : new Error(String(error)));
          },
        );
      };
      askOnce();
      return () => {
        stopped = true;
        clearTimeout(timer);
      };
    },
    timeoutMs,
    timeoutError: () => timeoutError(last?.answer),
  });
}
