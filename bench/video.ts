import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { readArray, readNumber, readRecord, readString } from '../src/lib/json.ts';
import { shardOfGuild } from '../src/shards/plan.ts';
import { startOwnRedis } from '../test/support/redis-server.ts';
import { percentile } from '../test/support/percentile.ts';
import { collectGarbage, loopDelayP99Ms, startLoopDelay } from './measure.ts';
import {
  parseFinishedRun,
  parseHeldMemory,
  parseInteraction,
  parseServerInfo,
  parseSubmitted,
  type FinishedRun,
  type HeldMemory,
  type Interaction,
  type ServerInfo,
  type WorkerRequest,
} from './video-protocol.ts';

// Issue 4's benchmark, and issue 16's: many video tasks followed by the bot with the production poll
// policy, against the emulator and the Discord stand-in (in a child process). Each task is a /video
// interaction the bot defers, whose status card it edits through the interaction token, then posts the
// video. The tasks are spread over guilds on every shard; one run gives them all to one bot process, the
// next to one worker per shard, each taking its shard's guilds' interactions as Discord's gateway routes
// them (bench/video-worker.ts is both). Each run has servers of its own; both use one kind of store, a
// fresh one for each phase, and the workers of a run share theirs, as sharded workers share their Redis. Reports memory per task (summed
// over the workers), gateway and Discord requests per task, CPU per task, event-loop delay and time from
// a task's end to its post, and the workers' figures against the single process's.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MIN_REQUESTS_PER_TASK = 3; // submit, one poll that sees it done, one download
/** Phase 1's tasks must not finish while their memory is measured. */
const HELD_GENERATION_MS = 600_000;
const POST_CHECK_INTERVAL_MS = 500;
/** What the workers' requests per task may differ from the single process's and still count as unchanged. */
const REQUESTS_UNCHANGED_WITHIN = 0.01;
/** The same for memory per task: heap measured after a full collection varies run to run, more in the workers' sum. */
const MEMORY_UNCHANGED_WITHIN = 0.1;
/** A Redis server's databases (its default); each phase of a run takes one of its own. */
const REDIS_DATABASES = 16;

export type VideoStore = 'sqlite' | 'redis';

export interface VideoBenchOptions {
  tasks: number;
  /** The workers of the sharded run; 1 runs only the single process. */
  workers: number;
  /** Redis for the sharded run (its workers share it); the single process then uses Redis too, so the two compare. */
  store: VideoStore;
  generationMs?: number;
}

interface Stats {
  requests: { submit: number; poll: number; download: number; other: number };
  discord: { defers: number; cardEdits: number; posts: number; other: number };
  postCount: number;
  /** Only when asked for (the list is long). */
  posts: { nonce: string; at: number }[];
}

function count(source: unknown, key: string): number {
  return readNumber(source, key) ?? 0;
}

function parseStats(raw: unknown): Stats {
  const requests = readRecord(raw, 'requests');
  const discord = readRecord(raw, 'discord');
  return {
    requests: {
      submit: count(requests, 'submit'),
      poll: count(requests, 'poll'),
      download: count(requests, 'download'),
      other: count(requests, 'other'),
    },
    discord: {
      defers: count(discord, 'defers'),
      cardEdits: count(discord, 'cardEdits'),
      posts: count(discord, 'posts'),
      other: count(discord, 'other'),
    },
    postCount: count(raw, 'postCount'),
    posts: (readArray(raw, 'posts') ?? []).flatMap((post) => {
      const nonce = readString(post, 'nonce');
      const at = readNumber(post, 'at');
      return nonce !== undefined && at !== undefined ? [{ nonce, at }] : [];
    }),
  };
}

/** What a bare Map of task id to due time costs per entry: the least any tracker could hold. */
function baselineBytesPerEntry(count: number): number {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const map = new Map<string, number>();
  for (let index = 0; index < count; index++) map.set(`v${Date.now().toString(36)}${index.toString(16).padStart(12, '0')}`, index);
  collectGarbage();
  const bytes = (process.memoryUsage().heapUsed - before) / count;
  map.clear();
  return bytes;
}

/** One run: its tasks over `workers` bot processes (1: the single process). */
export interface VideoRunReport {
  workers: number;
  /** The tasks each worker followed: those of its shard's guilds. */
  tasksPerWorker: number[];
  /** Heap growth while every task was held, after a full collection, summed over the workers. */
  bytesPerTask: number;
  /** Of bytesPerTask, what discord.js's REST client keeps per interaction token. */
  restCacheBytesPerTask: number;
  /**
   * The single process's memory per task once it held as many tasks as one worker of the sharded run
   * does: the same load per process, measured on the way to all of them.
   */
  atWorkerShare?: { tasks: number; bytesPerTask: number };
  /** Resident set growth at the same moments, summed over the workers. */
  rssBytesPerTask: number;
  requestsPerTask: number;
  requestBreakdown: Stats['requests'];
  discordPerTask: number;
  discordBreakdown: Stats['discord'];
  /** The workers' CPU time (user + system) per task while phase 2 ran, summed: steadier than delays on a shared machine. */
  cpuMsPerTask: number;
  /** The worst worker's. */
  loopDelayP99Ms: number;
  postedAfterEndMs: { p50: number; p99: number; max: number };
  wallSeconds: number;
}

export interface VideoBenchReport {
  tasks: number;
  store: VideoStore;
  /** The sharded run's workers, one shard each; every run's guilds are spread over this many shards. */
  shards: number;
  baselineBytesPerEntry: number;
  idleLoopDelayP99Ms: number;
  /** The single process first, then the sharded run. */
  runs: VideoRunReport[];
}

export interface Servers {
  info: ServerInfo;
  close(): Promise<void>;
}

/** bench/servers.ts in a child process, its guilds spread over `shards` shards. */
export async function startServers(shards: number): Promise<Servers> {
  const child = spawn(join(ROOT, 'scripts', 'node'), [join(ROOT, 'bench', 'servers.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_SHARDS: String(shards) },
  });
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  };
  try {
    const firstLine = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
    return { info: parseServerInfo(JSON.parse(firstLine)), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A store of its own for one phase of a run, shared by the run's workers. */
export interface PhaseStore {
  url: string;
  remove(): void;
}

export interface StoreSource {
  fresh(): PhaseStore;
  close(): Promise<void>;
}

/** Redis: a server of the benchmark's own, a database of it for each phase. SQLite: a file for each phase. */
export async function openStoreSource(kind: VideoStore): Promise<StoreSource> {
  if (kind === 'sqlite') {
    return {
      fresh() {
        const directory = mkdtempSync(join(tmpdir(), 'bench-video-'));
        return { url: `sqlite://${join(directory, 'bench.sqlite')}`, remove: () => rmSync(directory, { recursive: true, force: true }) };
      },
      close: async () => {},
    };
  }
  const redis = await startOwnRedis();
  let database = 0;
  return {
    fresh() {
      if (database === REDIS_DATABASES) throw new Error(`the benchmark's Redis has only ${REDIS_DATABASES} databases`);
      // Dropped with the server at the end.
      return { url: `${redis.url}/${database++}`, remove: () => {} };
    },
    close: () => redis.close(),
  };
}

/** A bot process of the benchmark (bench/video-worker.ts), answering one request at a time. */
class VideoWorker {
  readonly #child: ChildProcess;

  constructor(info: ServerInfo) {
    this.#child = fork(join(ROOT, 'bench', 'video-worker.ts'), [JSON.stringify(info)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  }

  get exited(): boolean {
    return this.#child.exitCode !== null || this.#child.signalCode !== null;
  }

  hold(storeUrl: string, interactions: Interaction[], checkpoint: number): Promise<HeldMemory> {
    return this.#ask({ op: 'hold', storeUrl, interactions, checkpoint }).then(parseHeldMemory);
  }

  run(storeUrl: string, interactions: Interaction[]): Promise<number> {
    return this.#ask({ op: 'run', storeUrl, interactions }).then(parseSubmitted);
  }

  finish(): Promise<FinishedRun> {
    return this.#ask({ op: 'finish' }).then(parseFinishedRun);
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = once(this.#child, 'exit');
    this.#child.kill('SIGTERM');
    await exited;
  }

  #ask(request: WorkerRequest): Promise<unknown> {
    const child = this.#child;
    return new Promise((resolve, reject) => {
      const settle = (then: () => void) => {
        child.off('message', onMessage);
        child.off('exit', onExit);
        then();
      };
      const onMessage = (answer: unknown) => settle(() => resolve(answer));
      const onExit = (code: number | null, signal: string | null) =>
        settle(() => reject(new Error(`a video worker ended (${signal ?? code}) before it answered ${request.op}`)));
      child.on('message', onMessage);
      child.on('exit', onExit);
      child.send(request);
    });
  }
}

async function stats(info: ServerInfo, withPosts = false): Promise<Stats> {
  return parseStats(await (await fetch(`${info.controlUrl}/stats${withPosts ? '?posts' : ''}`)).json());
}

export async function setGeneration(info: ServerInfo, ms: number): Promise<void> {
  await fetch(`${info.controlUrl}/timing?generation_ms=${ms}`, { method: 'POST' });
}

/**
 * `count` new /video interactions over every guild, round robin: each call gives the same guilds and members
 * in the same order (the servers' members, by the interaction's place in the call).
 */
export async function newInteractions(info: ServerInfo, count: number): Promise<Interaction[]> {
  const raw: unknown = await (await fetch(`${info.controlUrl}/interactions?count=${count}`)).json();
  if (!Array.isArray(raw)) throw new Error('the benchmark servers made no interactions');
  return raw.map(parseInteraction);
}

/** `count` new /video interactions over every guild, grouped by the shard of their guild (of `shards`). */
async function interactionsByShard(info: ServerInfo, count: number, shards: number): Promise<Interaction[][]> {
  const groups = Array.from({ length: shards }, (): Interaction[] => []);
  for (const interaction of await newInteractions(info, count)) groups[shardOfGuild(interaction.guildId, shards)]!.push(interaction);
  const empty = groups.findIndex((group) => group.length === 0);
  if (empty >= 0) throw new Error(`no task landed on shard ${empty} of ${shards}: run more tasks`);
  return groups;
}

/** `tasks` new interactions, grouped by shard, and a fresh store for `use` (the whole phase) to give them to the workers on. */
async function withPhase<T>(
  info: ServerInfo,
  stores: StoreSource,
  shards: number,
  tasks: number,
  use: (storeUrl: string, shares: Interaction[][]) => Promise<T>,
): Promise<T> {
  const shares = await interactionsByShard(info, tasks, shards);
  const store = stores.fresh();
  try {
    return await use(store.url, shares);
  } finally {
    store.remove();
  }
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

interface RunOptions {
  tasks: number;
  /** The bot processes of this run, one shard each (1: the single process). */
  workers: number;
  /** The shards the guilds are spread over: the sharded run's, in every run. */
  shards: number;
  store: VideoStore;
  generationMs: number;
}

/** A run on servers and a store of its own, so that nothing one run left behind slows the next. */
async function measureRun(options: RunOptions): Promise<VideoRunReport> {
  const servers = await startServers(options.shards);
  try {
    const stores = await openStoreSource(options.store);
    try {
      return await measureRunOn(servers.info, stores, options);
    } finally {
      await stores.close();
    }
  } finally {
    await servers.close();
  }
}

async function measureRunOn(
  info: ServerInfo,
  stores: StoreSource,
  { tasks, workers, shards, generationMs }: RunOptions,
): Promise<VideoRunReport> {
  const started = performance.now();
  const fleet = Array.from({ length: workers }, () => new VideoWorker(info));
  try {
    // Phase 1, memory: every task held and none finished (the gateway takes ten minutes each).
    await setGeneration(info, HELD_GENERATION_MS);
    // The single process is measured on the way too, once it holds a worker's share.
    const checkpoint = workers === 1 ? Math.ceil(tasks / shards) : tasks;
    const held = await withPhase(info, stores, workers, tasks, (storeUrl, shares) =>
      Promise.all(fleet.map((worker, shard) => worker.hold(storeUrl, shares[shard]!, checkpoint))),
    );

    // Phase 2, timing: fast generations, followed to their posts.
    await setGeneration(info, generationMs);
    const before = await stats(info);
    const finished = await withPhase(info, stores, workers, tasks, async (storeUrl, shares) => {
      await Promise.all(fleet.map((worker, shard) => worker.run(storeUrl, shares[shard]!)));
      // Earlier phases' tasks were never finished, so every post from now on is one of this phase's.
      while ((await stats(info)).postCount < before.postCount + tasks) {
        if (fleet.some((worker) => worker.exited)) throw new Error('a video worker ended before its tasks were posted');
        await delay(POST_CHECK_INTERVAL_MS);
      }
      return Promise.all(fleet.map((worker) => worker.finish()));
    });
    const after = await stats(info, true);

    const submittedAt = new Map(finished.flatMap((run) => run.submitted));
    const posts = after.posts.filter((post) => submittedAt.has(post.nonce));
    const afterEnd = posts.map((post) => post.at - (submittedAt.get(post.nonce)! + generationMs));
    const requests = {
      submit: after.requests.submit - before.requests.submit,
      poll: after.requests.poll - before.requests.poll,
      download: after.requests.download - before.requests.download,
      other: after.requests.other - before.requests.other,
    };
    const discordTraffic = {
      defers: after.discord.defers - before.discord.defers,
      cardEdits: after.discord.cardEdits - before.discord.cardEdits,
      posts: after.discord.posts - before.discord.posts,
      other: after.discord.other - before.discord.other,
    };
    return {
      workers,
      tasksPerWorker: finished.map((run) => run.submitted.length),
      bytesPerTask: sum(held.map((memory) => memory.heapBytes)) / tasks,
      restCacheBytesPerTask: sum(held.map((memory) => memory.restCacheBytes)) / tasks,
      ...(checkpoint < tasks
        ? { atWorkerShare: { tasks: held[0]!.checkpointTasks, bytesPerTask: held[0]!.checkpointHeapBytes / held[0]!.checkpointTasks } }
        : {}),
      rssBytesPerTask: sum(held.map((memory) => memory.rssBytes)) / tasks,
      requestsPerTask: (requests.submit + requests.poll + requests.download) / tasks,
      requestBreakdown: requests,
      discordPerTask: (discordTraffic.defers + discordTraffic.cardEdits + discordTraffic.posts + discordTraffic.other) / tasks,
      discordBreakdown: discordTraffic,
      cpuMsPerTask: sum(finished.map((run) => run.cpuMs)) / tasks,
      loopDelayP99Ms: Math.max(...finished.map((run) => run.loopDelayP99Ms)),
      postedAfterEndMs: { p50: percentile(afterEnd, 50), p99: percentile(afterEnd, 99), max: Math.max(...afterEnd) },
      wallSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    await Promise.all(fleet.map((worker) => worker.stop()));
  }
}

export async function benchmarkVideoTracking(options: VideoBenchOptions): Promise<VideoBenchReport> {
  const { tasks, workers, store, generationMs = 2000 } = options;
  if (store === 'sqlite' && workers > 1) throw new Error(`${workers} workers need a store they share: Redis, not SQLite`);
  const idle = startLoopDelay();
  await delay(1000);
  idle.disable();
  const baseline = baselineBytesPerEntry(tasks);
  const runs: VideoRunReport[] = [];
  for (const fleet of workers > 1 ? [1, workers] : [1])
    runs.push(await measureRun({ tasks, workers: fleet, shards: workers, store, generationMs }));
  return { tasks, store, shards: workers, baselineBytesPerEntry: baseline, idleLoopDelayP99Ms: loopDelayP99Ms(idle), runs };
}

const kb = (bytes: number): string => `${(bytes / 1024).toFixed(2)} KB`;

function runName(run: VideoRunReport): string {
  return run.workers === 1 ? 'one process' : `${run.workers} workers`;
}

function runLines(report: VideoBenchReport, run: VideoRunReport): string[] {
  const sharded = run.workers > 1;
  const shares = sharded ? `, ${run.tasksPerWorker.map((count, shard) => `shard ${shard}: ${count}`).join(', ')}` : '';
  return [
    `video tracking, ${runName(run)}: ${report.tasks} tasks in ${run.wallSeconds.toFixed(1)} s (${report.store} store${shares})`,
    `  memory per task      ${kb(run.bytesPerTask)} while tracked${sharded ? ', summed over the workers' : ''}  (${(run.bytesPerTask / report.baselineBytesPerEntry).toFixed(1)}x a bare Map entry of ${report.baselineBytesPerEntry.toFixed(0)} B; target <= 2 KB)`,
    `    of which discord.js ${kb(run.restCacheBytesPerTask)} (its REST client's routes per interaction token, swept after an hour), the rest ${kb(run.bytesPerTask - run.restCacheBytesPerTask)}`,
    ...(run.atWorkerShare
      ? [
          `    ${`at ${run.atWorkerShare.tasks} tasks`.padEnd(20)}${kb(run.atWorkerShare.bytesPerTask)} (on the way, once it held as many as each of ${report.shards} workers does)`,
        ]
      : []),
    `  RSS growth           ${kb(run.rssBytesPerTask)} per task at the same moments${sharded ? ', summed over the workers' : ''}`,
    `  gateway requests     ${run.requestsPerTask.toFixed(3)} per task = ${(run.requestsPerTask / MIN_REQUESTS_PER_TASK).toFixed(3)}x the minimum of ${MIN_REQUESTS_PER_TASK} (target <= 1.1x)  ${JSON.stringify(run.requestBreakdown)}`,
    `  Discord requests     ${run.discordPerTask.toFixed(3)} per task  ${JSON.stringify(run.discordBreakdown)} (defer, status card edits, the post)`,
    `  bot CPU              ${run.cpuMsPerTask.toFixed(2)} ms per task (user + system, while tasks ran${sharded ? ', summed over the workers' : ''})`,
    `  event-loop delay p99 ${run.loopDelayP99Ms.toFixed(1)} ms${sharded ? ' in the worse worker' : ''}  (idle baseline ${report.idleLoopDelayP99Ms.toFixed(1)} ms in the same run; target <= 20 ms)`,
    `  end -> posted        p50 ${run.postedAfterEndMs.p50} ms, p99 ${run.postedAfterEndMs.p99} ms, max ${run.postedAfterEndMs.max} ms (includes the wait for the next poll)`,
  ];
}

function change(value: number, reference: number): string {
  const percent = reference === 0 ? 0 : ((value - reference) / reference) * 100;
  return `${percent >= 0 ? '+' : ''}${percent.toFixed(1)}%`;
}

/** "unchanged" when `value` is within `within` (a share) of `reference`. */
function verdict(value: number, reference: number, within: number): string {
  return Math.abs(value - reference) <= within * reference ? `unchanged (within ${within * 100}%)` : `CHANGED (more than ${within * 100}%)`;
}

/** The sharded run against the single process: the issue's target is requests and memory per task unchanged. */
function comparisonLines(sharded: VideoRunReport, single: VideoRunReport): string[] {
  const name = runName(sharded);
  const row = (what: string, value: number, reference: number, show: (value: number) => string, within?: number) =>
    `    ${what.padEnd(28)} ${show(value)} vs ${show(reference)} (${change(value, reference)})${within === undefined ? '' : `  ${verdict(value, reference, within)}`}`;
  const fixed = (digits: number) => (value: number) => value.toFixed(digits);
  const ms = (value: number) => `${value} ms`;
  return [
    `  ${name} against one process, in the same run:`,
    row('gateway requests per task', sharded.requestsPerTask, single.requestsPerTask, fixed(3), REQUESTS_UNCHANGED_WITHIN),
    row('Discord requests per task', sharded.discordPerTask, single.discordPerTask, fixed(3), REQUESTS_UNCHANGED_WITHIN),
    row('memory per task', sharded.bytesPerTask, single.bytesPerTask, kb, MEMORY_UNCHANGED_WITHIN),
    // For what the process costs once whatever its load; no verdict, as one point on the way is noisier than the whole.
    ...(single.atWorkerShare
      ? [row(`  one process at ${single.atWorkerShare.tasks} tasks`, sharded.bytesPerTask, single.atWorkerShare.bytesPerTask, kb)]
      : []),
    row('RSS growth per task', sharded.rssBytesPerTask, single.rssBytesPerTask, kb),
    row('bot CPU per task', sharded.cpuMsPerTask, single.cpuMsPerTask, (value) => `${value.toFixed(2)} ms`),
    row('end -> posted p50', sharded.postedAfterEndMs.p50, single.postedAfterEndMs.p50, ms),
    row('end -> posted p99', sharded.postedAfterEndMs.p99, single.postedAfterEndMs.p99, ms),
  ];
}

export function printVideoReport(report: VideoBenchReport): void {
  const [single, ...sharded] = report.runs;
  const lines = report.runs.flatMap((run) => runLines(report, run));
  if (single) for (const run of sharded) lines.push(...comparisonLines(run, single));
  process.stdout.write(`${lines.join('\n')}\n`);
}
