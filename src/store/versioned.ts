import { z } from 'zod';
import { isRecord } from '../lib/json.ts';
import type { RecordWarning } from './interface.ts';

// Every kind of stored record has one schema, its current version's, and each record says which version
// wrote it (`v`; none: 0, the records written before versions were counted). A record of an older version
// is brought to the current shape by its kind's one upgrade function as it is read, then checked against
// the schema; its next write stores it in the current shape. A record of a newer version (another worker
// during a rolling deploy) is read as a current one: what the schema knows of it, or unreadable.
//
// A record whose value is a bare JSON value (a marker, an id, a list of ids, a time) has its schema but no
// `v`: were its shape to change, the new one would be an object with `v`, and the bare value its version 0.

/** A kind of record: its name in errors (`task`), its current version, its schema, and how older versions become it. */
export interface RecordKind<T extends { v: number }> {
  name: string;
  version: T['v'];
  schema: z.ZodType<T>;
  /**
   * A record of an older version (`from`; 0 when it has no `v`) in the current version's shape, not yet
   * checked. Where the old record holds what the current shape has no place for, it says (in a comment)
   * which current state it takes instead.
   */
  upgrade(record: Readonly<Record<string, unknown>>, from: number, warn: RecordWarning): Record<string, unknown>;
}

/** A stored value that does not fit its kind's schema: every field that does not, by its path. */
export class RecordShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordShapeError';
  }
}

const ARTICLES: Readonly<Record<string, string>> = { object: 'an object', array: 'a list', int: 'a whole number' };

/** One issue as `task.delivery.state must be one of waiting, posting`: the field's path, then what it must be. */
function describeIssue(name: string, issue: z.core.$ZodIssue): string {
  const path = [name, ...issue.path.map(String)].join('.');
  switch (issue.code) {
    case 'invalid_type':
      return `${path} must be ${ARTICLES[issue.expected] ?? `a ${issue.expected}`}`;
    case 'invalid_value':
      return `${path} must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_union':
      // A discriminated union names the values its discriminator may take.
      return 'options' in issue && issue.options
        ? `${path} must be one of ${issue.options.map(String).join(', ')}`
        : `${path}: ${issue.message}`;
    default:
      return `${path}: ${issue.message}`;
  }
}

/** Parses a value with `schema`, throwing RecordShapeError that names every field that does not fit. */
export function parseShape<T>(name: string, schema: z.ZodType<T>, raw: unknown): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new RecordShapeError(parsed.error.issues.map((issue) => describeIssue(name, issue)).join('; '));
}

/** The version a stored record says wrote it: 0 when it says none. */
function versionOf(record: Readonly<Record<string, unknown>>, name: string): number {
  const v = record.v;
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new RecordShapeError(`${name}.v must be a version number`);
  return v;
}

/** The parser of a kind of record (a collection's Parse): any version in, the current one out. */
export function versionedRecord<T extends { v: number }>(kind: RecordKind<T>): (raw: unknown, warn?: RecordWarning) => T {
  return (raw, warn = () => undefined) => {
    if (!isRecord(raw)) throw new RecordShapeError(`${kind.name} must be an object`);
    const from = versionOf(raw, kind.name);
    const current = from < kind.version ? kind.upgrade(raw, from, warn) : raw;
    return parseShape(kind.name, kind.schema, { ...current, v: kind.version });
  };
}

/**
 * A stored table keyed by words from outside (member ids, days), each value read with `values`: built with
 * own keys, so even `__proto__` is only a key (zod's record leaves such a key out).
 */
export function ownKeyedTable<T>(values: z.ZodType<T>): z.ZodType<Record<string, T>> {
  return z.custom<Readonly<Record<string, unknown>>>(isRecord, 'must be an object').transform((table, context) =>
    Object.fromEntries(
      Object.entries(table).flatMap(([key, value]) => {
        const read = values.safeParse(value);
        if (read.success) return [[key, read.data]];
        for (const issue of read.error.issues) context.addIssue({ code: 'custom', message: issue.message, path: [key, ...issue.path] });
        return [];
      }),
    ),
  );
}
