// Structured logs: one JSON object per line. Secrets registered here (the Discord token, gateway keys)
// are scrubbed from every line, whatever field or error message they hide in.

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

const REDACTED = '[redacted]';
// Shorter strings would scrub ordinary words; real keys and tokens are far longer.
const MIN_SECRET_LENGTH = 8;
/**
 * How many secrets that come and go (servers' keys, keys offered and refused, realtime client secrets)
 * are remembered: the least recently registered is forgotten first. A secret in use is registered again
 * each time it is opened, so it stays; the process's own secrets are kept for good.
 */
export const MAX_PASSING_SECRETS = 1_000;

/** The process's own secrets (the Discord token, the operator's key, the encryption secrets). */
const lastingSecrets = new Set<string>();
/** Other secrets, least recently registered first (a Map keeps insertion order). */
const passingSecrets = new Map<string, true>();
/**
 * Every form a registered secret can take in a line: as written, and JSON-escaped as it appears inside a
 * JSON string (a `"` or `\` in it becomes `\"` or `\\`). Longest first, so no form is cut by a shorter
 * one. Rebuilt when the secrets change, so scrubbing a line costs only the `includes` checks.
 */
let secretForms: string[] = [];

function rebuildForms(): void {
  const forms = new Set<string>();
  for (const secret of [...lastingSecrets, ...passingSecrets.keys()]) forms.add(secret).add(JSON.stringify(secret).slice(1, -1));
  secretForms = [...forms].sort((a, b) => b.length - a.length);
}

/**
 * Scrubs `secret` from every line logged from now on. `lasting`: the process's own secrets, never
 * forgotten; others are kept while among the MAX_PASSING_SECRETS most recently registered.
 */
export function registerSecret(secret: string | undefined, lasting = false): void {
  if (!secret || secret.length < MIN_SECRET_LENGTH) return;
  if (lastingSecrets.has(secret)) return;
  if (lasting) {
    lastingSecrets.add(secret);
    passingSecrets.delete(secret);
  } else {
    const known = passingSecrets.delete(secret);
    passingSecrets.set(secret, true);
    if (known) return;
    for (const oldest of passingSecrets.keys()) {
      if (passingSecrets.size <= MAX_PASSING_SECRETS) break;
      passingSecrets.delete(oldest);
    }
  }
  rebuildForms();
}

export function redact(text: string): string {
  let result = text;
  for (const form of secretForms) {
    if (result.includes(form)) result = result.replaceAll(form, REDACTED);
  }
  return result;
}

function serializeError(error: Error): LogFields {
  const fields: LogFields = { name: error.name, message: error.message };
  for (const key of ['code', 'status', 'requestId', 'param', 'type'] as const) {
    const value: unknown = Reflect.get(error, key);
    if (value !== undefined) fields[key] = value;
  }
  if (error.stack) fields.stack = error.stack;
  if (error.cause instanceof Error) fields.cause = serializeError(error.cause);
  return fields;
}

function toJsonLine(record: LogFields): string {
  const json = JSON.stringify(record, (_key, value: unknown) => {
    if (value instanceof Error) return serializeError(value);
    if (typeof value === 'bigint') return value.toString();
    return value;
  });
  return redact(json);
}

export interface LoggerOptions {
  level?: LogLevel;
  write?: (line: string) => void;
  fields?: LogFields;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level ?? 'info');
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const base = options.fields ?? {};

  const make = (bound: LogFields): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields) => {
      if (LOG_LEVELS.indexOf(level) < threshold) return;
      write(toJsonLine({ time: new Date().toISOString(), level, msg: message, ...bound, ...fields }));
    };
    return {
      debug: (message, fields) => emit('debug', message, fields),
      info: (message, fields) => emit('info', message, fields),
      warn: (message, fields) => emit('warn', message, fields),
      error: (message, fields) => emit('error', message, fields),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make(base);
}

/** A logger that drops everything, for library code used without one. */
export const silentLogger: Logger = createLogger({ write: () => {} });
