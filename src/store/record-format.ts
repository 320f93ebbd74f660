import type { DeserializedData } from 'keyv';
import { isRecord } from '../lib/json.ts';
import { graphemePrefix } from '../lib/text.ts';

// How a record is written as text, in Keyv's format, `{ value, expires }` (expires: ms since the epoch, or
// none), so that a record written by Keyv or natively (the atomic steps) reads the same; and how stored
// text is parsed back, checked: text that is not such a record is refused, never taken for one.

/** A record read back from its stored text: its value, not yet parsed by its collection. */
export interface StoredEnvelope {
  /** undefined: the record holds nothing (Keyv reads it as no record). */
  value?: unknown;
  /** When it stops being there, in ms since the epoch; undefined: never. */
  expires?: number;
}

/** Stored text that is not a record in Keyv's format: says what is wrong with it. */
export class RecordFormatError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'RecordFormatError';
  }
}

/**
 * A JSON string value or key that starts with `:`, in compact JSON: `":` right after `{`, `[`, `,` or `:`.
 * Keyv's format escapes exactly such strings (Buffers are `:base64:…`); text without one is plain JSON.
 */
const COLON_STRING = /[{[,:]":/;

/** The longest piece of a wrong value quoted in an error: enough to recognise it, never a whole record. */
const QUOTED_MAX_CHARS = 40;

function quote(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > QUOTED_MAX_CHARS ? `${graphemePrefix(text, QUOTED_MAX_CHARS)}…` : text;
}

/** Keyv's reviver: what its serializer escaped (strings starting with `:`, Buffers) read back. */
function reviveEscaped(_key: string, value: unknown): unknown {
  if (typeof value !== 'string' || !value.startsWith(':')) return value;
  return value.startsWith(':base64:') ? Buffer.from(value.slice(8), 'base64') : value.slice(1);
}

/**
 * A record from its stored text, checked; RecordFormatError when the text is not one. Keyv's own
 * deserializer runs JSON.parse with a reviver, several times slower than without, for what its serializer
 * escapes; text without COLON_STRING parses plainly, with the same result.
 */
export function parseStoredText(text: string): StoredEnvelope {
  let data: unknown;
  try {
    data = COLON_STRING.test(text) ? JSON.parse(text, reviveEscaped) : JSON.parse(text);
  } catch (error) {
    throw new RecordFormatError('the stored text is not JSON', error);
  }
  if (!isRecord(data)) throw new RecordFormatError(`the stored text is ${quote(data)}, not a { value, expires } object`);
  const { value, expires } = data;
  // Keyv writes no expires for a record kept for good; null is how other writers of its format say so.
  if (expires === undefined || expires === null) return { value };
  if (typeof expires !== 'number') throw new RecordFormatError(`the stored field expires is ${quote(expires)}, not a time in milliseconds`);
  return { value, expires };
}

/**
 * What Keyv hands back for stored text that is not a record (its deserializer must not throw: a throw in
 * the middle of Keyv's scan ends the whole scan). The collection refuses it with the record's key.
 */
export class UnreadableText {
  readonly error: RecordFormatError;

  constructor(error: RecordFormatError) {
    this.error = error;
  }
}

/**
 * parseStoredText as Keyv's deserializer: text that is not a record reads as a record whose value is an
 * UnreadableText. Keyv's type lets whoever reads name the value's type; the collection reads it as
 * `unknown` and parses it, so nothing here claims more than was checked.
 */
export function deserializeForKeyv<Value>(text: string): DeserializedData<Value>;
export function deserializeForKeyv(text: string): StoredEnvelope {
  try {
    return parseStoredText(text);
  } catch (error) {
    if (!(error instanceof RecordFormatError)) throw error;
    return { value: new UnreadableText(error) };
  }
}

/**
 * A value holding a number JSON cannot store (NaN, Infinity, -Infinity), which JSON.stringify would write as
 * null for the next read to refuse: refused as it is written instead. `path` is where it sits in the stored
 * `{ value, expires }`, as `value.reservation.estimateUsdTicks`.
 */
export class UnstorableNumberError extends Error {
  readonly path: readonly string[];
  readonly number: number;

  constructor(path: readonly string[], number: number) {
    super(`${path.join('.')} is ${number}, a number JSON cannot store`);
    this.name = 'UnstorableNumberError';
    this.path = path;
    this.number = number;
  }
}

/**
 * The first number JSON cannot store in `data`, as JSON.stringify sees it (after toJSON), with its path.
 * The replacer sees each holder before its members, so a member's path is its holder's and its key.
 */
function findUnstorableNumber(data: unknown): UnstorableNumberError | undefined {
  const paths = new Map<object, readonly string[]>();
  let found: UnstorableNumberError | undefined;
  JSON.stringify(data, function (this: object, key: string, value: unknown) {
    if (found) return undefined;
    const path = key === '' && !paths.has(this) ? [] : [...(paths.get(this) ?? []), key];
    if (typeof value === 'number' && !Number.isFinite(value)) {
      found = new UnstorableNumberError(path, value);
      return undefined;
    }
    if (typeof value === 'object' && value !== null) paths.set(value, path);
    return value;
  });
  return found;
}

/**
 * Keyv's format, written natively: its own serializer walks every value in JavaScript to mark what its
 * deserializer (and parseStoredText) must read back specially, strings that start with `:` (written
 * with one more) and Buffers (`:base64:…`). Plain JSON.stringify is right for any value without them,
 * which COLON_STRING (and the Buffer mark) tells; only the others pay for a replacer. A value holding a
 * number JSON cannot store is refused with UnstorableNumberError, so that no record is written unreadable.
 */
export function serializeStored<Value>(data: DeserializedData<Value>): string {
  const plain = JSON.stringify(data);
  // Such a number is written as null: text without null holds none, and only the others are searched.
  const unstorable = plain.includes('null') ? findUnstorableNumber(data) : undefined;
  if (unstorable) throw unstorable;
  if (!COLON_STRING.test(plain) && !plain.includes('"type":"Buffer"')) return plain;
  return JSON.stringify(data, function (this: Record<string, unknown>, key: string, value: unknown) {
    const original = this[key];
    if (Buffer.isBuffer(original)) return `:base64:${original.toString('base64')}`;
    return typeof value === 'string' && value.startsWith(':') ? `:${value}` : value;
  });
}
