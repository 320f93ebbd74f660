import { createHistogram, performance } from 'node:perf_hooks';

// Loaded with --import before a process's first module (bench/start.ts): samples its event loop's delay
// from the very start, and on SIGUSR2 writes what it saw to stderr as one line after START_LOOP_MARK.
// perf_hooks' monitorEventLoopDelay is not used: it measures from the loop's cached clock, and misses
// a block that comes before its first turn (the loading of the first modules).

export const START_LOOP_MARK = 'start-loop-delay ';
export const SAMPLE_EVERY_MS = 10;

/** Delays beyond the sampling interval, in microseconds (a histogram records whole numbers from 1). */
const delays = createHistogram();
let last = performance.now();
setInterval(() => {
  const now = performance.now();
  delays.record(Math.max(1, Math.round((now - last - SAMPLE_EVERY_MS) * 1000)));
  last = now;
}, SAMPLE_EVERY_MS).unref();

process.on('SIGUSR2', () => {
  const figures = { p99Ms: delays.percentile(99) / 1000, maxMs: delays.max / 1000, samples: delays.count };
  process.stderr.write(`${START_LOOP_MARK}${JSON.stringify(figures)}\n`);
});
