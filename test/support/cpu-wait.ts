// How long this thread has waited for a CPU: on a busy machine (the suite's other files, other work) a
// ready thread can wait most of a second for its turn, and everything it does is late by that much. A test
// that holds the code's own work to a time bound subtracts the wait, so what it measures is the code.

import { readFileSync } from 'node:fs';

/**
 * Milliseconds the calling thread has spent ready to run but waiting for a CPU since it started (Linux's
 * run delay, the second field of /proc/thread-self/schedstat); 0 where the system does not say, so that
 * a bound measured with it is the plain wall-clock bound there.
 */
export function cpuWaitMs(): number {
  let schedstat: string;
  try {
    schedstat = readFileSync('/proc/thread-self/schedstat', 'utf8');
  } catch {
    return 0;
  }
  const runDelayNs = Number(schedstat.split(' ')[1]);
  return Number.isFinite(runDelayNs) ? runDelayNs / 1e6 : 0;
}
