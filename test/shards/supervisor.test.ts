import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isRecord } from '../../src/lib/json.ts';
import { createLogger } from '../../src/lib/log.ts';
import { waitUntil } from '../../src/lib/wait-until.ts';
import { Supervisor, WORKER_SHARDS_VARIABLE } from '../../src/shards/supervisor.ts';

// The supervisor with real child processes: tiny worker modules that behave as a worker may (die at once,
// stay up, ignore SIGTERM) and say which shards they were given.

const directory = mkdtempSync(join(tmpdir(), 'supervisor-test-'));

function workerModule(name: string, body: string): string {
  const path = join(directory, `${name}.mjs`);
  writeFileSync(path, body);
  return path;
}

/** Exits at once with code 3. */
const dying = workerModule('dying', 'process.exit(3);');
/** Stays up until SIGTERM, and exits 0 on it; writes steady-<its shards> once its handler is in place. */
const steady = workerModule(
  'steady',
  `import { writeFileSync } from 'node:fs'; process.on('SIGTERM', () => process.exit(0)); writeFileSync(${JSON.stringify(directory)} + '/steady-' + process.env.${WORKER_SHARDS_VARIABLE}, 'ready'); setInterval(() => {}, 1000);`,
);
/** Stays up and ignores SIGTERM; writes a file once it does. */
const stubbornReady = join(directory, 'stubborn-ready');
const stubborn = workerModule(
  'stubborn',
  `import { writeFileSync } from 'node:fs'; process.on('SIGTERM', () => {}); writeFileSync(${JSON.stringify(stubbornReady)}, 'ready'); setInterval(() => {}, 1000);`,
);
/** Answers the supervisor's questions when it holds shards 0 and 1, with its shards and the question's `value`; the others stay silent. */
const answering = workerModule(
  'answering',
  `import { writeFileSync } from 'node:fs'; const shards = process.env.${WORKER_SHARDS_VARIABLE};` +
    ` process.on('message', (m) => { if (shards === '0,1') process.send({ answer: m.question, id: m.id, shards, value: m.value }); });` +
    ` process.on('SIGTERM', () => process.exit(0)); writeFileSync(${JSON.stringify(directory)} + '/answering-' + shards, 'ready');`,
);

let lines: Record<string, unknown>[];
let supervisor: Supervisor | undefined;
const logged = new EventEmitter();
const log = createLogger({
  write: (line) => {
    const parsed: unknown = JSON.parse(line);
    if (isRecord(parsed)) lines.push(parsed);
    logged.emit('line');
  },
});

function start(entry: string, workers: number[][], stopDeadlineMs = 2_000): Supervisor {
  lines = [];
  supervisor = new Supervisor({
    plan: { count: 4, ids: workers.flat(), workers },
    entry,
    execArgv: [],
    env: process.env,
    log,
    stopDeadlineMs,
    restartBackoff: { baseMs: 20, maxMs: 160, jitter: 0, spread: 'within-bounds' },
  });
  supervisor.start();
  return supervisor;
}

async function waitForLines(predicate: (found: Record<string, unknown>[]) => boolean): Promise<Record<string, unknown>[]> {
  return waitUntil({
    check: () => (predicate(lines) ? lines : undefined),
    subscribe: (wake) => {
      logged.on('line', wake);
      return () => logged.off('line', wake);
    },
    timeoutMs: 10_000,
    timeoutError: () => new Error(`the supervisor's log lines never matched; got ${JSON.stringify(lines.map((line) => line.msg))}`),
  });
}

async function waitForFile(path: string): Promise<void> {
  const watcher = watch(directory);
  try {
    await waitUntil({
      check: () => (existsSync(path) ? true : undefined),
      subscribe: (wake) => {
        watcher.on('change', wake);
        return () => watcher.off('change', wake);
      },
      timeoutMs: 10_000,
      timeoutError: () => new Error(`${path} never appeared`),
    });
  } finally {
    watcher.close();
  }
}

/** A process's state letter from /proc (`Z` for a zombie: exited, not yet reaped by its parent), or 'gone'. */
function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '';
  } catch {
    return 'gone';
  }
}

afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
});

describe('the worker supervisor', () => {
  it('starts a worker per group of shards, and starts one that dies again after a backoff that grows while it keeps dying', async () => {
    start(dying, [
      [0, 1],
      [2, 3],
    ]);
    const found = await waitForLines(
      (all) => all.filter((line) => line.msg === 'a worker died; starting it again' && line.shards === '0-1').length >= 4,
    );
    expect(
      found
        .filter((line) => line.msg === 'worker started')
        .slice(0, 2)
        .map((line) => line.shards),
    ).toEqual(['0-1', '2-3']);
    const deaths = found.filter((line) => line.msg === 'a worker died; starting it again' && line.shards === '0-1');
    expect(deaths[0]).toMatchObject({ why: 'exited with code 3' });
    // Reaped, not left a zombie: Node waits for each child it started when it exits (libuv, on SIGCHLD),
    // which is what lets the bot be a container's first process without an init (Dockerfile).
    expect(deaths.map((line) => processState(Number(line.pid))).filter((state) => state !== 'gone')).toEqual([]);
    expect(deaths.slice(0, 4).map((line) => line.restartInMs)).toEqual([20, 40, 80, 160]);
  });

  it('stops every worker on stop(), and restarts none', async () => {
    const running = start(steady, [[0], [1]]);
    await waitForFile(join(directory, 'steady-0'));
    await waitForFile(join(directory, 'steady-1'));
    expect(running.workers.every((worker) => worker.pid !== undefined)).toBe(true);
    await running.stop();
    expect(lines.filter((line) => line.msg === 'worker stopped').map((line) => line.code)).toEqual([0, 0]);
    expect(lines.some((line) => line.msg === 'a worker died; starting it again')).toBe(false);
    expect(running.workers.every((worker) => worker.pid === undefined)).toBe(true);
  });

  it('kills a worker that does not stop by the deadline', async () => {
    const running = start(stubborn, [[0]], 300);
    // Once its SIGTERM handler is in place.
    await waitForFile(stubbornReady);
    await running.stop();
    expect(lines.some((line) => line.msg === 'workers did not stop in time; killing them')).toBe(true);
    expect(lines.find((line) => line.msg === 'worker stopped')).toMatchObject({ signal: 'SIGKILL' });
  });

  it('asks every worker a question over IPC: an answer from each that gives one, "no answer in time" or "not running" for the others', async () => {
    const running = start(answering, [
      [0, 1],
      [2, 3],
    ]);
    await Promise.all(['0,1', '2,3'].map((shards) => waitForFile(join(directory, `answering-${shards}`))));
    const answers = await running.ask({ question: 'how-are-you', value: 7 }, 300);
    expect(answers).toEqual([
      { shards: '0-1', answer: { answer: 'how-are-you', id: expect.any(Number), shards: '0,1', value: 7 } },
      { shards: '2-3', answer: undefined, missing: 'no answer in time' },
    ]);
    await running.stop();
    expect(await running.ask({ question: 'how-are-you' }, 300)).toEqual([
      { shards: '0-1', answer: undefined, missing: 'not running' },
      { shards: '2-3', answer: undefined, missing: 'not running' },
    ]);
  });
});
