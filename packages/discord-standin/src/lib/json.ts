/** A parsed JSON object (not an array, not null), whose fields are still to be checked. */
export function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
