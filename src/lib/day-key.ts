/** The UTC day of a moment, `2026-11-22`: usage, limits and costs are counted by it. */
export function dayKey(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}
