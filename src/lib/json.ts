// Tiny readers for untrusted JSON (gateway answers, stored records, Discord payloads): every value is checked,
// nothing is cast. A reader answers undefined for a missing or wrongly typed field, so callers decide what is required.

export type JsonRecord = Readonly<Record<string, unknown>>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A body that is not JSON fails; `empty` tells a blank body (a valid "nothing" for some answers) apart. */
export type JsonParseResult = { ok: true; value: unknown } | { ok: false; empty: boolean };

export function parseJsonText(text: string): JsonParseResult {
  if (text.trim() === '') return { ok: false, empty: true };
  try {
    const value: unknown = JSON.parse(text);
    return { ok: true, value };
  } catch {
    return { ok: false, empty: false };
  }
}

/**
 * What `table` holds under `key` itself: never what its prototype lends (`toString`, `constructor`,
 * `__proto__`), so a word from outside (a status, an event type, a code) finds only the table's own keys.
 */
export function ownValue<V>(table: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

export function readRecord(source: unknown, key: string): JsonRecord | undefined {
  if (!isRecord(source)) return undefined;
  const value = source[key];
  return isRecord(value) ? value : undefined;
}

export function readString(source: unknown, key: string): string | undefined {
  if (!isRecord(source)) return undefined;
  const value = source[key];
  return typeof value === 'string' ? value : undefined;
}

/** A finite number (JSON has no NaN, but a string "12" is not a number either). */
export function readNumber(source: unknown, key: string): number | undefined {
  if (!isRecord(source)) return undefined;
  const value = source[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function readBoolean(source: unknown, key: string): boolean | undefined {
  if (!isRecord(source)) return undefined;
  const value = source[key];
  return typeof value === 'boolean' ? value : undefined;
}

export function readArray(source: unknown, key: string): readonly unknown[] | undefined {
  if (!isRecord(source)) return undefined;
  const value = source[key];
  return Array.isArray(value) ? value : undefined;
}

/** A non-empty string, or undefined (an empty id or url is as useless as a missing one). */
export function readNonEmptyString(source: unknown, key: string): string | undefined {
  const value = readString(source, key);
  return value !== undefined && value !== '' ? value : undefined;
}

/**
 * A point in time written as unix seconds (number or numeric string) or as an ISO date string; undefined
 * when it is neither.
 */
export function readTimestamp(source: unknown, key: string): Date | undefined {
  if (!isRecord(source)) return undefined;
  const value = source[key];
  if (typeof value === 'number' && Number.isFinite(value)) return new Date(value * 1000);
  if (typeof value === 'string' && value.trim() !== '') {
    if (/^\d+(\.\d+)?$/.test(value.trim())) return new Date(Number(value) * 1000);
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : new Date(parsed);
  }
  return undefined;
}
