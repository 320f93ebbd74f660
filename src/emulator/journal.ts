/**
 * Appends `entry` to a journal kept to at most `max` entries: when full, the oldest tenth goes at once,
 * so a long run stays bounded at little cost per entry (not one array shift for every new one).
 */
export function appendBounded<T>(entries: T[], entry: T, max: number): void {
  if (entries.length >= max) entries.splice(0, Math.max(1, Math.floor(max / 10)));
  entries.push(entry);
}
