import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { REST } from 'discord.js';
import { DiscordOutbox } from '../src/discord/outbox.ts';
import { GatewayClientPool } from '../src/gateway/pool.ts';
import { silentLogger } from '../src/log.ts';
import { SettingsService } from '../src/settings/service.ts';
import { openStore } from '../src/store.ts';
import { VideoDelivery } from '../src/tasks/delivery.ts';
import { PolicyGatewayResolver } from '../src/tasks/gateway-resolver.ts';
import { DEFAULT_POLL_POLICY } from '../src/tasks/poll-policy.ts';
import { TaskRepository, newTaskId } from '../src/tasks/repository.ts';
import { VideoService, type InteractionContext } from '../src/tasks/service.ts';
import { TaskTracker } from '../src/tasks/tracker.ts';

// Issue 4's benchmark: many video tasks followed by one bot process, with the production poll policy,
// against the emulator and the Discord stand-in (in a child process). Reports memory per task, gateway
// requests per task against the minimum, event-loop delay, and time from a task's end to its post.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MIN_REQUESTS_PER_TASK = 3; // submit, one poll that sees it done, one download
const SUBMIT_CONCURRENCY = 64;

interface ServerInfo {
  controlUrl: string;
  gatewayUrl: string;
  apiUrl: string;
  botToken: string;
  applicationId: string;
  channels: string[];
  guildIds: string[];
  generationMs: number;
}

interface Stats {
  requests: { submit: number; poll: number; download: number; other: number };
  posts: { nonce: string; at: number; bytes: number }[];
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run benchmarks with --expose-gc (npm run bench does)');
  gc();
  gc();
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

export interface VideoBenchReport {
  tasks: number;
  bytesPerTask: number;
  baselineBytesPerEntry: number;
  requestsPerTask: number;
  requestBreakdown: Stats['requests'];
  loopDelayP99Ms: number;
  idleLoopDelayP99Ms: number;
  postedAfterEndMs: { p50: number; p99: number; max: number };
  wallSeconds: number;
}

interface Bot {
  video: VideoService;
  tracker: TaskTracker;
  clients: GatewayClientPool;
  plan: Extract<Awaited<ReturnType<VideoService['prepareGeneration']>>, { ok: true }>['plan'];
  context(index: number): InteractionContext;
  close(): Promise<void>;
}

/** The real services, as src/app.ts puts them together, on a fresh SQLite store. */
async function startBot(info: ServerInfo): Promise<Bot> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-video-'));
  const store = await openStore(`sqlite://${join(directory, 'bench.sqlite')}`, silentLogger);
  // The stand-in has no global rate limit, so the bench lifts discord.js's 50 requests/s (real Discord
  // would pace posts at that rate).
  const rest = new REST({ api: info.apiUrl, globalRequestsPerSecond: 100_000 }).setToken(info.botToken);
  const outbox = new DiscordOutbox(rest);
  const clients = new GatewayClientPool({ baseUrl: info.gatewayUrl, log: silentLogger });
  const policy = new SettingsService({ store, clients, log: silentLogger, operatorKey: 'emulator-key', defaultLayer: 'compat', encryptionSecret: undefined });
  const repository = new TaskRepository(store);
  const delivery = new VideoDelivery({ repository, outbox, log: silentLogger, cardEditIntervalMs: 4000 });
  const tracker = new TaskTracker(repository, new PolicyGatewayResolver(policy, clients, silentLogger), delivery, silentLogger, {
    policy: DEFAULT_POLL_POLICY,
    maxInFlight: 16,
  });
  const video = new VideoService({ repository, tracker, delivery, clients, policy, store, vendor: 'svc', log: silentLogger, attachmentUrl: () => Promise.resolve(undefined) });
  const context = (index: number): InteractionContext => ({
    guildId: info.guildIds[index % info.guildIds.length]!,
    channelId: info.channels[index % info.channels.length]!,
    userId: `1000000000000${String(index).padStart(5, '0')}`,
    applicationId: info.applicationId,
    interactionToken: 'expired',
    // Long past: status cards are not edited in the benchmark (they have no message yet).
    interactionReceivedAt: 0,
    attachmentSizeLimit: 10 * 1024 * 1024,
  });
  const prepared = await video.prepareGeneration(context(0), {
    prompt: 'benchmark', model: undefined, duration: 4, resolution: undefined, aspectRatio: undefined,
    image: undefined, lastFrame: undefined, referenceImages: [], voices: [], referenceAudio: undefined,
  });
  if (!prepared.ok) throw new Error(prepared.message);
  return {
    video,
    tracker,
    clients,
    plan: prepared.plan,
    context,
    async close() {
      await tracker.stop();
      await clients.close();
      await store.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

async function submitAll(bot: Bot, tasks: number, onSubmitted: (id: string, at: number) => void = () => {}): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: SUBMIT_CONCURRENCY }, async () => {
      while (next < tasks) {
        const index = next++;
        // One prepared request, sent as many tasks: each needs its own id.
        const task = await bot.video.submit({ ...bot.plan, taskId: newTaskId() }, bot.context(index));
        onSubmitted(task.id, task.submittedAt ?? Date.now());
      }
    }),
  );
}

async function stats(info: ServerInfo): Promise<Stats> {
  return (await (await fetch(`${info.controlUrl}/stats`)).json()) as Stats;
}

async function setGeneration(info: ServerInfo, ms: number): Promise<void> {
  await fetch(`${info.controlUrl}/timing?generation_ms=${ms}`, { method: 'POST' });
}

/** Event-loop delay beyond the sampling interval, in ms (the histogram records the interval itself). */
const LOOP_RESOLUTION_MS = 5;
function loopDelayP99Ms(histogram: ReturnType<typeof monitorEventLoopDelay>): number {
  return Math.max(0, histogram.percentile(99) / 1e6 - LOOP_RESOLUTION_MS);
}

export async function benchmarkVideoTracking(tasks: number, generationMs = 2000): Promise<VideoBenchReport> {
  const child = spawn(join(ROOT, 'scripts', 'node'), [join(ROOT, 'bench', 'servers.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const firstLine = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
    const info = JSON.parse(firstLine) as ServerInfo;
    const started = performance.now();
    const idle = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    idle.enable();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    idle.disable();
    const baseline = baselineBytesPerEntry(tasks);

    // Phase 1, memory: every task tracked and none finished (the gateway takes ten minutes each).
    await setGeneration(info, 600_000);
    const holding = await startBot(info);
    collectGarbage();
    const heapBefore = process.memoryUsage().heapUsed;
    await submitAll(holding, tasks);
    collectGarbage();
    const bytesPerTask = (process.memoryUsage().heapUsed - heapBefore) / tasks;
    await holding.close();

    // Phase 2, timing: fast generations, followed to their posts.
    await setGeneration(info, generationMs);
    const before = await stats(info);
    const bot = await startBot(info);
    const submittedAt = new Map<string, number>();
    const histogram = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    histogram.enable();
    await submitAll(bot, tasks, (id, at) => submittedAt.set(id, at));
    let after: Stats;
    for (;;) {
      after = await stats(info);
      if (after.posts.filter((post) => submittedAt.has(post.nonce)).length >= tasks) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    histogram.disable();
    await bot.close();

    const posts = after.posts.filter((post) => submittedAt.has(post.nonce));
    const afterEnd = posts.map((post) => post.at - (submittedAt.get(post.nonce)! + generationMs));
    const requests = {
      submit: after.requests.submit - before.requests.submit,
      poll: after.requests.poll - before.requests.poll,
      download: after.requests.download - before.requests.download,
      other: after.requests.other - before.requests.other,
    };
    return {
      tasks,
      bytesPerTask,
      baselineBytesPerEntry: baseline,
      requestsPerTask: (requests.submit + requests.poll + requests.download) / tasks,
      requestBreakdown: requests,
      loopDelayP99Ms: loopDelayP99Ms(histogram),
      idleLoopDelayP99Ms: loopDelayP99Ms(idle),
      postedAfterEndMs: { p50: percentile(afterEnd, 50), p99: percentile(afterEnd, 99), max: Math.max(...afterEnd) },
      wallSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

export function printVideoReport(report: VideoBenchReport): void {
  const lines = [
    `video tracking: ${report.tasks} tasks in ${report.wallSeconds.toFixed(1)} s`,
    `  memory per task      ${(report.bytesPerTask / 1024).toFixed(2)} KB while tracked  (${(report.bytesPerTask / report.baselineBytesPerEntry).toFixed(1)}x a bare Map entry of ${report.baselineBytesPerEntry.toFixed(0)} B; target <= 2 KB)`,
    `  gateway requests     ${report.requestsPerTask.toFixed(3)} per task = ${(report.requestsPerTask / MIN_REQUESTS_PER_TASK).toFixed(3)}x the minimum of ${MIN_REQUESTS_PER_TASK} (target <= 1.1x)  ${JSON.stringify(report.requestBreakdown)}`,
    `  event-loop delay p99 ${report.loopDelayP99Ms.toFixed(1)} ms  (idle baseline ${report.idleLoopDelayP99Ms.toFixed(1)} ms in the same run; target <= 20 ms)`,
    `  end -> posted        p50 ${report.postedAfterEndMs.p50} ms, p99 ${report.postedAfterEndMs.p99} ms, max ${report.postedAfterEndMs.max} ms (includes the wait for the next poll)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
