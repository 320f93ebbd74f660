import { isRecord } from '../lib/json.ts';

// A refusal as Discord words it: an HTTP status, a JSON error code and message, and field errors.

export class RestError extends Error {
  readonly status: number;
  readonly code: number;
  readonly errors: Record<string, unknown> | undefined;
  constructor(status: number, code: number, message: string, errors?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
  }
}

/**
 * Field errors as Discord nests them: the body's path down to the field, then `_errors`, e.g.
 * `{ embeds: { 0: { title: { _errors: [{ code, message }] } } } }`. A body can break several rules at
 * once; Discord names every one, each at its own path.
 */
export type FieldErrors = Record<string, unknown>;

export type FieldPath = readonly (string | number)[];

export function fieldError(path: FieldPath, code: string, message: string): FieldErrors {
  const leaf: FieldErrors = { _errors: [{ code, message }] };
  return path.reduceRight<FieldErrors>((inner, key) => ({ [String(key)]: inner }), leaf);
}

export function tooLong(path: FieldPath, max: number): FieldErrors {
  return fieldError(path, 'BASE_TYPE_MAX_LENGTH', `Must be ${max} or fewer in length.`);
}

/** An array (or string) whose length must lie in `[min, max]`, as Discord words it. */
export function badLength(path: FieldPath, min: number, max: number): FieldErrors {
  return fieldError(path, 'BASE_TYPE_BAD_LENGTH', `Must be between ${min} and ${max} in length.`);
}

/** A component whose `type` may not sit there; Discord lists the allowed types as a Python tuple, `(4,)` for one. */
export function typeChoices(path: FieldPath, allowed: readonly number[]): FieldErrors {
  const choices = allowed.length === 1 ? `${allowed[0]},` : allowed.join(', ');
  return fieldError(path, 'UNION_TYPE_CHOICES', `Value of field "type" must be one of (${choices}).`);
}

export function required(path: FieldPath): FieldErrors {
  return fieldError(path, 'BASE_TYPE_REQUIRED', 'This field is required');
}

/** Two error trees as one: `_errors` at the same path are concatenated. */
export function mergeFieldErrors(...trees: (FieldErrors | undefined)[]): FieldErrors | undefined {
  let merged: FieldErrors | undefined;
  for (const tree of trees) {
    if (!tree) continue;
    merged = merged ? mergeTwo(merged, tree) : tree;
  }
  return merged;
}

function mergeTwo(a: FieldErrors, b: FieldErrors): FieldErrors {
  const out: FieldErrors = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const existing = out[key];
    if (key === '_errors' && Array.isArray(existing) && Array.isArray(value)) {
      const earlier: unknown[] = existing;
      const later: unknown[] = value;
      out[key] = [...earlier, ...later];
    } else if (isRecord(existing) && isRecord(value)) out[key] = mergeTwo(existing, value);
    else out[key] = value;
  }
  return out;
}

/** 400 / 50035 Invalid Form Body with its field errors. */
export function invalidFormBody(errors: FieldErrors): RestError {
  return new RestError(400, 50035, 'Invalid Form Body', errors);
}

/** A small collector for a validator that walks a body and may find several errors. */
export class FieldErrorList {
  #errors: FieldErrors | undefined;

  add(errors: FieldErrors | undefined): void {
    this.#errors = mergeFieldErrors(this.#errors, errors);
  }

  get errors(): FieldErrors | undefined {
    return this.#errors;
  }
}
