import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import { isRecord } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { describeShards, type ShardPlan } from './plan.ts';

// `npm start` when the bot is sharded: one worker process per group of shards, each the bot itself on
// discord.js's own sharding (a Client holding those shards). The supervisor only keeps the processes
// running: a worker that dies is started again after a backoff that grows while it keeps dying soon after
// starting; SIGINT/SIGTERM is passed on to every worker (as SIGTERM), which stops as a single bot does, and
// a worker still running at the deadline is killed. A worker that also got the signal itself (sent to the
// whole process group) takes the two as one stop; a second signal counts here only (src/shutdown.ts).
//
// Neither of the libraries for this fits: discord.js's ShardingManager runs exactly one shard per
// process (no SHARDS_PER_PROCESS), and discord-hybrid-sharding, which groups shards, restarts at a fixed
// delay and stops restarting after a number of deaths. What the supervisor adds is process supervision.

/** The environment a worker reads its shards from (set by the supervisor only). */
export const WORKER_SHARDS_VARIABLE = 'BOT_WORKER_SHARDS';
export const WORKER_SHARD_COUNT_VARIABLE = 'BOT_WORKER_SHARD_COUNT';

/**
 * A question the supervisor asks its workers over their IPC channel (`{ question, id, ... }`), and what a
 * worker's answer carries besides (`{ answer: question, id, ... }`).
 */
export interface WorkerQuestion {
  question: string;
  [field: string]: unknown;
}

/** What one worker answered; `answer` is undefined when it is not running or did not answer in time. */
export interface WorkerAnswer {
  shards: string;
  answer: Record<string, unknown> | undefined;
  /** Why there is no answer. */
  missing?: 'not running' | 'no answer in time';
}

/**
 * The exit code of a worker that a restart cannot help (its configuration, or the application's settings
 * on Discord, refused): it is not started again, and the supervisor is told (`onRefusedForGood`).
 */
export const EXIT_REFUSED_FOR_GOOD = 2;

/** Restarts wait 1 s, 2 s, 4 s… up to a minute; a worker that ran this long starts the count afresh. */
const RESTART_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000, jitter: 0.25, spread: 'within-bounds' };
const STABLE_AFTER_MS = 60_000;

export interface SupervisorOptions {
  plan: ShardPlan;
  /** The module a worker runs (the bot's main), with the node flags it was started with. */
  entry: string;
  execArgv: string[];
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** How long workers get to stop before they are killed. */
  stopDeadlineMs: number;
  restartBackoff?: BackoffPolicy;
}

interface Worker {
  readonly shards: number[];
  readonly label: string;
  child: ChildProcess | undefined;
  startedAt: number;
  /** Restarts in a row, each soon after the one before. */
  quickRestarts: number;
  restartTimer: NodeJS.Timeout | undefined;
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

async function exitOf(child: ChildProcess): Promise<void> {
  if (isRunning(child)) await once(child, 'exit');
}

export class Supervisor {
  readonly #options: SupervisorOptions;
  readonly #workers: Worker[];
  #stopping = false;
  #nextQuestion = 0;
  #refusedForGood: ((shards: string) => void) | undefined;

  constructor(options: SupervisorOptions) {
    this.#options = options;
    this.#workers = options.plan.workers.map((shards) => ({
      shards,
      label: describeShards(shards),
      child: undefined,
      startedAt: 0,
      quickRestarts: 0,
      restartTimer: undefined,
    }));
  }

  /** Process ids of the running workers, by their shards (for tests and operators). */
  get workers(): { shards: string; pid: number | undefined }[] {
    return this.#workers.map((worker) => ({ shards: worker.label, pid: worker.child?.pid }));
  }

  /** Called when a worker exits with EXIT_REFUSED_FOR_GOOD (it is not started again). */
  onRefusedForGood(listener: (shards: string) => void): void {
    this.#refusedForGood = listener;
  }

  start(): void {
    for (const worker of this.#workers) this.#spawn(worker);
  }

  /** Asks every worker `question` at once; each answers within `timeoutMs` or is reported as missing. */
  ask(question: WorkerQuestion, timeoutMs: number): Promise<WorkerAnswer[]> {
    return Promise.all(this.#workers.map((worker) => this.#askOne(worker, question, timeoutMs)));
  }

  async #askOne(worker: Worker, question: WorkerQuestion, timeoutMs: number): Promise<WorkerAnswer> {
    const child = worker.child;
    if (!child || !isRunning(child) || !child.connected) return { shards: worker.label, answer: undefined, missing: 'not running' };
    const id = ++this.#nextQuestion;
    return new Promise((resolve) => {
      const done = (answer: Record<string, unknown> | undefined, missing?: WorkerAnswer['missing']) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(missing ? { shards: worker.label, answer, missing } : { shards: worker.label, answer });
      };
      const onMessage = (message: unknown) => {
        if (isRecord(message) && message.answer === question.question && message.id === id) done(message);
      };
      const onExit = () => done(undefined, 'not running');
      const timer = setTimeout(() => done(undefined, 'no answer in time'), timeoutMs);
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send({ ...question, id }, (error) => {
        if (error) done(undefined, 'not running');
      });
    });
  }

  /** Stops every worker: SIGTERM, then SIGKILL for any still running at the deadline. */
  async stop(): Promise<void> {
    this.#stopping = true;
    const running: ChildProcess[] = [];
    for (const worker of this.#workers) {
      clearTimeout(worker.restartTimer);
      const child = worker.child;
      if (child && isRunning(child)) running.push(child);
    }
    for (const child of running) child.kill('SIGTERM');
    const exited = Promise.all(running.map(exitOf));
    let deadline: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      deadline = setTimeout(() => resolve('late'), this.#options.stopDeadlineMs);
    });
    const outcome = await Promise.race([exited, late]);
    clearTimeout(deadline);
    if (outcome === 'late') {
      const stuck = running.filter(isRunning);
      this.#options.log.error('workers did not stop in time; killing them', {
        pids: stuck.map((child) => child.pid),
        deadlineMs: this.#options.stopDeadlineMs,
      });
      for (const child of stuck) child.kill('SIGKILL');
      await Promise.all(stuck.map(exitOf));
    }
    this.#options.log.info('all workers stopped');
  }

  #spawn(worker: Worker): void {
    const { plan, entry, execArgv, env, log } = this.#options;
    const child = fork(entry, [], {
      execArgv,
      env: { ...env, [WORKER_SHARDS_VARIABLE]: worker.shards.join(','), [WORKER_SHARD_COUNT_VARIABLE]: String(plan.count) },
      stdio: 'inherit',
    });
    worker.child = child;
    worker.startedAt = Date.now();
    log.info('worker started', { shards: worker.label, pid: child.pid, shardCount: plan.count });
    child.once('exit', (code, signal) => this.#exited(worker, child, code, signal));
  }

  #exited(worker: Worker, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (worker.child !== child) return;
    worker.child = undefined;
    if (this.#stopping) {
      this.#options.log.info('worker stopped', { shards: worker.label, pid: child.pid, code, signal });
      return;
    }
    const ranMs = Date.now() - worker.startedAt;
    if (code === EXIT_REFUSED_FOR_GOOD) {
      this.#options.log.error('a worker was refused for good; not starting it again', { shards: worker.label, pid: child.pid, ranMs });
      this.#refusedForGood?.(worker.label);
      return;
    }
    worker.quickRestarts = ranMs >= STABLE_AFTER_MS ? 0 : worker.quickRestarts + 1;
    const delayMs = backoffDelay(Math.max(0, worker.quickRestarts - 1), this.#options.restartBackoff ?? RESTART_BACKOFF);
    const why = signal ? `killed by ${signal}` : `exited with code ${code}`;
    this.#options.log.warn('a worker died; starting it again', { shards: worker.label, pid: child.pid, why, ranMs, restartInMs: delayMs });
    worker.restartTimer = setTimeout(() => {
      worker.restartTimer = undefined;
      if (!this.#stopping) this.#spawn(worker);
    }, delayMs);
  }
}
