import { describe, expect, it } from 'vitest';
import { MAX_PASSING_SECRETS, createLogger, redact, registerSecret } from '../../src/lib/log.ts';

describe('structured logs', () => {
  it('writes one JSON object per line with level, message and fields', () => {
    const lines: string[] = [];
    const log = createLogger({ write: (line) => lines.push(line) }).child({ guild: '1' });
    log.info('task submitted', { task: 'abc' });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', msg: 'task submitted', guild: '1', task: 'abc' });
  });

  it('drops lines under the threshold', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', write: (line) => lines.push(line) });
    log.info('quiet');
    log.warn('loud');
    expect(lines).toHaveLength(1);
  });

  it('never prints a registered secret, even inside an error', () => {
    const secret = 'sk-live-1234567890abcdef';
    registerSecret(secret);
    const lines: string[] = [];
    const log = createLogger({ write: (line) => lines.push(line) });
    log.error('request failed', { error: new Error(`bad key ${secret}`), header: `Bearer ${secret}` });
    expect(lines[0]).not.toContain(secret);
    expect(lines[0]).toContain('[redacted]');
  });

  it('scrubs a secret with quotes or backslashes, which JSON escapes inside the line', () => {
    const secret = 'pa"ss\\word-1234567';
    registerSecret(secret);
    const lines: string[] = [];
    const log = createLogger({ write: (line) => lines.push(line) });
    log.error('request failed', { header: `Bearer ${secret}`, error: new Error(`bad key ${secret}`) });
    const line = lines[0]!;
    expect(line).not.toContain(JSON.stringify(secret).slice(1, -1));
    const parsed: unknown = JSON.parse(line);
    expect(parsed).toMatchObject({ header: 'Bearer [redacted]', error: { message: 'bad key [redacted]' } });
    expect(redact(`plain text ${secret}`)).toBe('plain text [redacted]');
  });

  it('remembers a bounded number of passing secrets, forgetting the least recently registered, and keeps lasting ones', () => {
    const token = 'discord-token-0123456789';
    registerSecret(token, true);
    const first = 'server-key-first-000000';
    const refreshed = 'server-key-refreshed-000';
    registerSecret(first);
    registerSecret(refreshed);
    for (let index = 0; index < MAX_PASSING_SECRETS - 2; index++) registerSecret(`server-key-${index.toString().padStart(8, '0')}`);
    registerSecret(refreshed);
    registerSecret('server-key-one-too-many');
    expect(redact(first)).toBe(first);
    expect(redact(refreshed)).toBe('[redacted]');
    expect(redact('server-key-one-too-many')).toBe('[redacted]');
    expect(redact(token)).toBe('[redacted]');
  });
});
