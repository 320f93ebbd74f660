// The stand-in's logs: one JSON object per line. A caller may hand it any logger of this shape (a bot's
// own, say); without one it writes warnings and errors to stdout.

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type LogLevel = (typeof LEVELS)[number];

function jsonLine(record: LogFields): string {
  return JSON.stringify(record, (_key, value: unknown) => {
    if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
    if (typeof value === 'bigint') return value.toString();
    return value;
  });
}

export function createLogger(options: { level?: LogLevel; write?: (line: string) => void; fields?: LogFields } = {}): Logger {
  const threshold = LEVELS.indexOf(options.level ?? 'info');
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const make = (bound: LogFields): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields) => {
      if (LEVELS.indexOf(level) >= threshold) write(jsonLine({ time: new Date().toISOString(), level, msg: message, ...bound, ...fields }));
    };
    return {
      debug: (message, fields) => emit('debug', message, fields),
      info: (message, fields) => emit('info', message, fields),
      warn: (message, fields) => emit('warn', message, fields),
      error: (message, fields) => emit('error', message, fields),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make(options.fields ?? {});
}

export const silentLogger: Logger = createLogger({ write: () => undefined });
