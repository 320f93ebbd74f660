// The one percentile the tests and the benchmarks read their samples with (bench/ imports test/support/,
// never the other way round).

/** The value below which `p` percent of `values` fall (nearest rank, taken from the sorted values); 0 for no values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
