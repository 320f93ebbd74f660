import { afterEach, describe, expect, it } from 'vitest';
import { readString } from '../../src/lib/json.ts';
import { createLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { settingProblems } from '../../src/store/redis-settings.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';

// What the operator is told at start about a Redis that would lose the bot's records: each on a Redis of
// the test's own, started with the settings under test (the shared Redis on 6379 is only ever read).

interface LogLine {
  level: string;
  msg: string;
  setting: string | undefined;
}

const servers: OwnRedis[] = [];
const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** Opens the store on a Redis started with `settings`; the lines it logged while opening. */
async function openOn(settings: string[]): Promise<LogLine[]> {
  const server = await startOwnRedis({ settings });
  servers.push(server);
  const lines: LogLine[] = [];
  const log = createLogger({
    write(line) {
      const record: unknown = JSON.parse(line);
      lines.push({
        level: readString(record, 'level') ?? '',
        msg: readString(record, 'msg') ?? '',
        setting: readString(record, 'setting'),
      });
    },
  });
  stores.push(await openStore(server.url, log));
  return lines;
}

const warnings = (lines: LogLine[]) => lines.filter((line) => line.level === 'warn');

describe("the store's check of its Redis at start", () => {
  it('warns, naming the settings, of a Redis that neither persists nor keeps every key under a memory limit', async () => {
    const lines = await openOn(['--maxmemory-policy', 'allkeys-lru', '--maxmemory', '100mb']);
    const warned = warnings(lines);
    expect(warned.map((line) => line.setting).sort()).toEqual(['appendonly', 'maxmemory-policy']);
    const persistence = warned.find((line) => line.setting === 'appendonly')?.msg;
    expect(persistence).toContain('appendonly is no');
    expect(persistence).toContain('save is empty');
    expect(warned.find((line) => line.setting === 'maxmemory-policy')?.msg).toContain('maxmemory-policy is allkeys-lru');
    // The store opens all the same.
    expect(lines.some((line) => line.msg === 'store opened')).toBe(true);
  });

  it('says nothing of a Redis with AOF that never evicts', async () => {
    const lines = await openOn(['--appendonly', 'yes', '--maxmemory-policy', 'noeviction', '--maxmemory', '100mb']);
    expect(warnings(lines)).toEqual([]);
  });

  it('takes an RDB snapshot schedule as persistence', async () => {
    const lines = await openOn(['--save', '3600 1 300 100']);
    expect(warnings(lines)).toEqual([]);
  });

  it('says it could not check a Redis that refuses CONFIG, and opens the store', async () => {
    const lines = await openOn(['--rename-command', 'CONFIG', '']);
    expect(warnings(lines)).toEqual([]);
    const notChecked = lines.find((line) => line.msg.startsWith('could not check'));
    expect(notChecked?.level).toBe('info');
    expect(notChecked?.msg).toContain('maxmemory-policy noeviction');
    expect(lines.some((line) => line.msg === 'store opened')).toBe(true);
  });
});

describe('which Redis settings lose records', () => {
  const safe = { maxmemory: 100 * 2 ** 20, maxmemoryPolicy: 'noeviction', appendonly: true, save: '' };

  it('every eviction policy but noeviction under a memory limit: the bot gives many of its records a ttl', () => {
    for (const policy of ['volatile-lru', 'volatile-ttl', 'volatile-random', 'allkeys-lfu']) {
      expect(settingProblems({ ...safe, maxmemoryPolicy: policy }).map((problem) => problem.fields.setting)).toEqual(['maxmemory-policy']);
    }
  });

  it('no policy without a memory limit, where none evicts', () => {
    expect(settingProblems({ ...safe, maxmemory: 0, maxmemoryPolicy: 'allkeys-lru' })).toEqual([]);
  });
});
