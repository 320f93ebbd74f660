import type { IntervalHistogram } from 'node:perf_hooks';
import { Routes, type REST } from 'discord.js';
import { ENGLISH } from '../src/i18n/index.ts';
import { silentLogger } from '../src/lib/log.ts';
import { openStore } from '../src/store/index.ts';
import type { Video } from '../src/video/index.ts';
import type { SubmissionPlan } from '../src/video/plan.ts';
import { newTaskId } from '../src/video/repository.ts';
import { word } from '../src/wording/notice.ts';
import { collectGarbage, loopDelayP99Ms, startLoopDelay } from './measure.ts';
import { benchGeneration, contextOf, startVideoBot } from './video-bot.ts';
import {
  parseServerInfo,
  parseWorkerRequest,
  type FinishedRun,
  type HeldMemory,
  type Interaction,
  type ServerInfo,
  type WorkerRequest,
} from './video-protocol.ts';

// One bot process of the video benchmark (bench/video.ts): the one process of the single-process run, or
// one of the workers of a sharded run, given the interactions of its shard's guilds as Discord's gateway
// would route them. It runs the real services as src/app.ts puts them together (without discord.js's
// gateway connection: the benchmark hands it the interactions) and measures itself: memory while its
// tasks are held, CPU time and event-loop delay while they run. Driven over the IPC channel of `fork`,
// one request at a time (bench/video-protocol.ts); the benchmark servers' addresses come as argv[2].

const SUBMIT_CONCURRENCY = 64;

interface Bot {
  video: Video;
  rest: REST;
  plan: SubmissionPlan;
  close(): Promise<void>;
}

/** The real services, as src/app.ts puts them together, on the store at `storeUrl`. */
async function startBot(info: ServerInfo, storeUrl: string, first: Interaction): Promise<Bot> {
  const store = await openStore(storeUrl, silentLogger);
  const bot = startVideoBot(info, store);
  const prepared = await bot.video.prepare.generation(contextOf(info, first), benchGeneration());
  if (!prepared.ok) throw new Error(word(ENGLISH, prepared.notice));
  return {
    video: bot.video,
    rest: bot.rest,
    plan: prepared.plan,
    async close() {
      await bot.stop();
      await store.close();
    },
  };
}

/** Each interaction as /video handles it: deferred at once, then submitted with its status card. */
async function submitAll(
  info: ServerInfo,
  bot: Bot,
  interactions: Interaction[],
  onSubmitted: (id: string, at: number) => void = () => {},
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: SUBMIT_CONCURRENCY }, async () => {
      while (next < interactions.length) {
        const interaction = interactions[next++]!;
        await bot.rest.post(Routes.interactionCallback(interaction.id, interaction.token), { body: { type: 5 }, auth: false });
        // One prepared request, sent as many tasks: each needs its own id.
        const task = await bot.video.submit({ ...bot.plan, taskId: newTaskId() }, contextOf(info, interaction));
        onSubmitted(task.id, task.submittedAt ?? Date.now());
      }
    }),
  );
}

async function hold(info: ServerInfo, storeUrl: string, interactions: Interaction[], checkpoint: number): Promise<HeldMemory> {
  const bot = await startBot(info, storeUrl, interactions[0]!);
  try {
    const first = Math.min(checkpoint, interactions.length);
    collectGarbage();
    const before = process.memoryUsage();
    await submitAll(info, bot, interactions.slice(0, first));
    collectGarbage();
    const atCheckpoint = process.memoryUsage().heapUsed;
    await submitAll(info, bot, interactions.slice(first));
    collectGarbage();
    const held = process.memoryUsage();
    // discord.js keeps a rate-limit route per interaction token (swept after an hour): not the tracker's.
    bot.rest.hashes.clear();
    bot.rest.handlers.clear();
    collectGarbage();
    return {
      heapBytes: held.heapUsed - before.heapUsed,
      restCacheBytes: held.heapUsed - process.memoryUsage().heapUsed,
      rssBytes: held.rss - before.rss,
      checkpointHeapBytes: atCheckpoint - before.heapUsed,
      checkpointTasks: first,
    };
  } finally {
    await bot.close();
  }
}

/** The run under way between `run` and `finish`. */
let running: { bot: Bot; loopDelay: IntervalHistogram; cpuBefore: NodeJS.CpuUsage; submitted: [string, number][] } | undefined;

async function run(info: ServerInfo, storeUrl: string, interactions: Interaction[]): Promise<{ submittedCount: number }> {
  if (running) throw new Error('a run is already under way');
  const bot = await startBot(info, storeUrl, interactions[0]!);
  running = { bot, loopDelay: startLoopDelay(), cpuBefore: process.cpuUsage(), submitted: [] };
  const { submitted } = running;
  await submitAll(info, bot, interactions, (id, at) => submitted.push([id, at]));
  return { submittedCount: submitted.length };
}

async function finish(): Promise<FinishedRun> {
  if (!running) throw new Error('no run is under way');
  const { bot, loopDelay, cpuBefore, submitted } = running;
  running = undefined;
  loopDelay.disable();
  const cpu = process.cpuUsage(cpuBefore);
  await bot.close();
  return { cpuMs: (cpu.user + cpu.system) / 1000, loopDelayP99Ms: loopDelayP99Ms(loopDelay), submitted };
}

function answer(info: ServerInfo, request: WorkerRequest): Promise<object> {
  switch (request.op) {
    case 'hold':
      return hold(info, request.storeUrl, request.interactions, request.checkpoint);
    case 'run':
      return run(info, request.storeUrl, request.interactions);
    case 'finish':
      return finish();
  }
}

const send = process.send?.bind(process);
if (!send) throw new Error('bench/video-worker.ts runs as a worker of bench/video.ts (started with fork)');
const info = parseServerInfo(JSON.parse(process.argv[2] ?? 'null'));
process.on('message', (raw) => {
  Promise.resolve(raw)
    .then((request) => answer(info, parseWorkerRequest(request)))
    .then(
      (reply) => send(reply),
      (error: unknown) => send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
});
