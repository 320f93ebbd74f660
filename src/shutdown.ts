import type { Logger } from './lib/log.ts';

// What SIGINT and SIGTERM do to the process: one orderly stop, bounded in time; a second signal (an
// impatient operator, or a supervisor's follow-up) or the deadline ends the process at once.

export const SHUTDOWN_DEADLINE_MS = 10_000;
export const EXIT_FAILURE = 1;

export interface ShutdownOptions {
  log: Logger;
  /** Everything an orderly stop does (cancelling a start still under way included). */
  stop: () => Promise<void>;
  exit: (code: number) => void;
  deadlineMs?: number;
}

/** The signal handler: exits 0 after a clean stop, 1 when the stop failed, took too long or was cut short. */
export function createShutdown(options: ShutdownOptions): (signal: string) => Promise<void> {
  const { log, exit } = options;
  const deadlineMs = options.deadlineMs ?? SHUTDOWN_DEADLINE_MS;
  let started = false;
  return async (signal) => {
    if (started) {
      log.warn('second signal: exiting without finishing what is in flight', { signal });
      exit(EXIT_FAILURE);
      return;
    }
    started = true;
    log.info('signal received', { signal });
    // A handler or a connection that never ends must not keep the process alive forever.
    const deadline = setTimeout(() => {
      log.error('shutdown did not finish in time; exiting without finishing what is in flight', { deadlineMs });
      exit(EXIT_FAILURE);
    }, deadlineMs);
    let code = 0;
    try {
      await options.stop();
    } catch (error) {
      log.error('shutdown failed', { error });
      code = EXIT_FAILURE;
    } finally {
      clearTimeout(deadline);
      exit(code);
    }
  };
}
