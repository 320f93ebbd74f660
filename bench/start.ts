import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { readNumber } from '../src/lib/json.ts';
import { percentile } from '../test/support/percentile.ts';
import { startWorld } from '../test/support/world.ts';
import { START_LOOP_MARK } from './start-probe.ts';

// The event loop's delay while the bot starts: from its first module to "ready" (logged in to Discord,
// commands registered), on the stand-ins, as `npm start` starts it, sampled from inside the bot by
// bench/start-probe.ts. The baseline, in the same run: a Node process doing nothing, sampled the same way
// for as long as the start took. Each start is a fresh process on the same store; from the first start
// on, V8's compiled code comes from the cache src/main.ts keeps, as on a server after its first start.

const STARTS = 3;
const PROBE = new URL('./start-probe.ts', import.meta.url).href;
const NODE = fileURLToPath(new URL('../scripts/node', import.meta.url));

export interface LoopDelay {
  p99Ms: number;
  maxMs: number;
}

export interface StartReport {
  starts: (LoopDelay & { ms: number })[];
  idle: LoopDelay;
}

/** What the probe in `child` saw so far: it is asked with SIGUSR2 and answers on stderr. */
async function askProbe(child: ChildProcess): Promise<LoopDelay> {
  const stderr = child.stderr;
  if (!stderr) throw new Error('the probed process has no stderr to read');
  let seen = '';
  const answer = new Promise<LoopDelay>((resolve) => {
    const read = (chunk: Buffer) => {
      seen += chunk.toString();
      const line = seen.split('\n').find((text) => text.startsWith(START_LOOP_MARK));
      if (line === undefined) return;
      stderr.off('data', read);
      const figures: unknown = JSON.parse(line.slice(START_LOOP_MARK.length));
      resolve({ p99Ms: readNumber(figures, 'p99Ms') ?? NaN, maxMs: readNumber(figures, 'maxMs') ?? NaN });
    };
    stderr.on('data', read);
  });
  child.kill('SIGUSR2');
  return answer;
}

/** A Node process that does nothing, sampled by the probe for `ms`. */
async function idleLoopDelay(ms: number): Promise<LoopDelay> {
  const child = spawn(NODE, [`--import=${PROBE}`, '-e', 'setInterval(() => {}, 60_000)'], { stdio: ['ignore', 'ignore', 'pipe'] });
  await once(child, 'spawn');
  await new Promise((resolve) => setTimeout(resolve, ms));
  const delay = await askProbe(child);
  child.kill('SIGKILL');
  await once(child, 'exit');
  return delay;
}

export async function benchmarkStart(): Promise<StartReport> {
  const env = { NODE_OPTIONS: `--import=${PROBE}` };
  const starts: StartReport['starts'] = [];
  let began = Date.now();
  const world = await startWorld({ env });
  try {
    for (let index = 0; index < STARTS; index++) {
      if (index > 0) {
        await world.bot.stop();
        began = Date.now();
        await world.restartBot(env);
      }
      const ms = Date.now() - began;
      starts.push({ ...(await askProbe(world.bot.child)), ms });
    }
  } finally {
    await world.stop();
  }
  const idle = await idleLoopDelay(
    percentile(
      starts.map((start) => start.ms),
      50,
    ),
  );
  return { starts, idle };
}

export function printStartReport(report: StartReport): void {
  const { idle } = report;
  const median = (pick: (start: StartReport['starts'][number]) => number) => percentile(report.starts.map(pick), 50);
  const p99 = median((start) => start.p99Ms);
  const max = median((start) => start.maxMs);
  const lines = [
    `start: the bot from its first module to ready (on the stand-ins), ${report.starts.length} starts, median` +
      ` ${median((start) => start.ms).toFixed(0)} ms; event loop delay p99 +${p99.toFixed(0)} ms` +
      ` (${(p99 / idle.p99Ms).toFixed(0)}x an idle process's +${idle.p99Ms.toFixed(1)} ms over as long),` +
      ` max +${max.toFixed(0)} ms (${(max / idle.maxMs).toFixed(0)}x its +${idle.maxMs.toFixed(1)} ms)`,
    ...report.starts.map(
      (start, index) =>
        `  start ${index + 1} ${start.ms.toFixed(0).padStart(5)} ms to ready;` +
        ` loop delay p99 +${start.p99Ms.toFixed(0)} ms, max +${start.maxMs.toFixed(0)} ms`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
