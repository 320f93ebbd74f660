import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

// Small measuring pieces the video benchmark's processes share.

export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run benchmarks with --expose-gc (npm run bench does)');
  gc();
  gc();
}

/** Event-loop delay is sampled this often. */
const LOOP_RESOLUTION_MS = 5;

export function startLoopDelay(): IntervalHistogram {
  const histogram = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  histogram.enable();
  return histogram;
}

/** Event-loop delay beyond the sampling interval, in ms (the histogram records the interval itself). */
export function loopDelayP99Ms(histogram: IntervalHistogram): number {
  return Math.max(0, histogram.percentile(99) / 1e6 - LOOP_RESOLUTION_MS);
}
