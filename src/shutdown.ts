import type { Logger } from './lib/log.ts';

// What SIGINT and SIGTERM do to the process: one orderly stop, bounded in time; a second signal from
// outside (an impatient operator) or the deadline ends the process at once.
//
// A worker of the supervisor (src/shards/supervisor.ts) hears one stop twice when the signal goes to the
// whole process group (Ctrl-C in a terminal, systemd's default KillMode=control-group): once from the
// group and once as the supervisor passes it on, in either order. So a worker takes every signal as the
// same stop ('same stop'), and only the supervisor counts a second one: it then exits at once, and its
// workers hear their IPC channel close (src/main.ts), which ends them at once too ('exit now'). Nothing
// here depends on timing or on the order the two arrive in. Not chosen: ignoring a repeat within a time
// window (a guess: a busy worker may handle the two far apart, and a real second signal inside the window
// is lost); the supervisor passing the stop on as an IPC message (a protocol of its own for what SIGTERM
// says, and a worker still loading has no listener for it, where SIGTERM's default action ends it);
// workers in a process group of their own (systemd's KillMode=control-group signals every process of the
// service regardless, and such a worker outlives a supervisor killed outright).

export const SHUTDOWN_DEADLINE_MS = 10_000;
export const EXIT_FAILURE = 1;

/** What a request to stop does once a stop has started: end the process at once, or nothing (it is the same stop). */
export type RepeatedStop = 'exit now' | 'same stop';

export interface ShutdownOptions {
  log: Logger;
  /** Everything an orderly stop does (cancelling a start still under way included). */
  stop: () => Promise<void>;
  exit: (code: number) => void;
  deadlineMs?: number;
}

/**
 * The signal handler: exits 0 after a clean stop, 1 when the stop failed, took too long or was cut short.
 * `signal` names what asked (a signal, or the supervisor's going away); `repeated` says what it does when a
 * stop is already under way (by default a second signal ends the process at once).
 */
export function createShutdown(options: ShutdownOptions): (signal: string, repeated?: RepeatedStop) => Promise<void> {
  const { log, exit } = options;
  const deadlineMs = options.deadlineMs ?? SHUTDOWN_DEADLINE_MS;
  let started = false;
  return async (signal, repeated = 'exit now') => {
    if (started) {
      if (repeated === 'same stop') {
        log.debug('signal received again: the stop under way goes on', { signal });
        return;
      }
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
