import { Routes, REST } from 'discord.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { snowflake, startDiscordStandIn, type DiscordStandIn } from 'discord-standin';
import { DiscordOutbox } from '../src/discord/outbox.ts';
import { startEmulator, type Emulator } from '../src/emulator/server.ts';
import { GatewayClientPool } from '../src/gateway/pool.ts';
import { ENGLISH } from '../src/i18n/index.ts';
import { silentLogger } from '../src/lib/log.ts';
import type { GuildVideoPolicy } from '../src/ports/guild-policy.ts';
import type { InteractionContext } from '../src/ports/interaction-context.ts';
import { openStore } from '../src/store/index.ts';
import { createVideo, type Video } from '../src/video/index.ts';
import type { SubmissionPlan } from '../src/video/plan.ts';
import { DEFAULT_POLL_POLICY } from '../src/video/poll-policy.ts';
import { isTerminal, type TaskRecord } from '../src/video/record.ts';
import { word } from '../src/wording/notice.ts';
import { openVideoPolicy } from '../test/support/open-policy.ts';
import { percentile } from '../test/support/percentile.ts';
import { memberContext } from '../test/support/video-request.ts';
import { CountingStore } from './counting-store.ts';
import { benchGeneration } from './video-bot.ts';
import { openStoreSource, type VideoStore } from './video.ts';

// A burst on one gateway key: 200 /video jobs from 20 members of one server at the same moment, on a key
// the gateway (the emulator, in this process) lets run 4 tasks at once, through the real video part
// (VideoSubmission.submit, the key's line, QueueSender, the tracker) against the Discord stand-in. Run on
// each store (a SQLite file; a Redis server of the benchmark's own, never the machine's shared one).
//
// Each store runs the burst three ways, each on a fresh store (so the line starts knowing nothing):
// - learned: the bot is not told the key's limit and learns it from the gateway's 429s (the probe);
// - stated: an admin stated 4 (`/config limits key_concurrency`): nothing past it is sent, nothing probed;
// - open: a key of 200 slots, stated 200: no job waits for a slot, so its wait is the path's own cost.
// It reports gateway submissions per job (429s included; target <= 1.1 for the learned line), each job's
// wait from asked to sent, the makespan against the least the key allows (ceil(200/4) generations), and
// fairness: the spread of the members' first-job waits and of their mean waits.

/** The bound on gateway submissions per job (refusals included) for a line that learns its key's limit. */
export const SUBMISSIONS_PER_JOB_BOUND = 1.1;
const LIMITED_KEY = 'bench-key-limited';
const OPEN_KEY = 'bench-key-open';
const SUBMIT_PATH = '/v1/videos/generations';

export type KeyQueueMode = 'learned' | 'stated' | 'open';
const MODES: readonly KeyQueueMode[] = ['learned', 'stated', 'open'];

export interface KeyQueueBenchOptions {
  stores: readonly VideoStore[];
  jobs?: number;
  members?: number;
  keyLimit?: number;
  generationMs?: number;
}

export interface KeyQueueRun {
  store: VideoStore;
  mode: KeyQueueMode;
  /** POSTs of a video to the gateway, and of those the 429s. */
  submissions: number;
  refusals: number;
  /** ms from asked to sent (accepted by the gateway), each job. */
  waits: number[];
  /** Each member's first job's wait, and each member's mean wait (ms). */
  firstWaits: number[];
  memberMeanWaits: number[];
  /** ms from the burst to the last job sent, and to the last job seen done. */
  lastSentMs: number;
  lastDoneMs: number;
  /** Store round trips from the burst to the last job done, per job: all, and the key line's updates (retries included). */
  storeRoundTrips: number;
  lineUpdates: number;
  /** Jobs whose video was made (all of them, or the run is not what it claims). */
  succeeded: number;
}

export interface KeyQueueBenchReport {
  jobs: number;
  members: number;
  keyLimit: number;
  generationMs: number;
  pollIntervalMs: number;
  runs: KeyQueueRun[];
}

/** A policy that admits everything, on `apiKey`, with `statedLimit` as the admin's key_concurrency. */
function benchPolicy(apiKey: string, keyId: string, statedLimit: number | undefined): GuildVideoPolicy {
  return openVideoPolicy({ access: { apiKey, keyId }, keyConcurrency: () => Promise.resolve(statedLimit) });
}

interface Rig {
  emulator: Emulator;
  discord: DiscordStandIn;
  rest: REST;
  guildId: string;
  channelId: string;
  members: string[];
}

/** The jobs of the burst, prepared and deferred ahead of it: member `i % members` asks for job i. */
async function prepareJobs(rig: Rig, video: Video, jobs: number): Promise<{ plan: SubmissionPlan; context: InteractionContext }[]> {
  const prepared: { plan: SubmissionPlan; context: InteractionContext }[] = [];
  for (let index = 0; index < jobs; index++) {
    const userId = rig.members[index % rig.members.length]!;
    const run = rig.discord.runCommand({
      user: rig.discord.state.users.get(userId)!,
      guildId: rig.guildId,
      channelId: rig.channelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'benchmark' },
    });
    const context = memberContext(
      { guildId: rig.guildId, channelId: rig.channelId, userId },
      { applicationId: rig.discord.applicationId, interactionToken: run.record.token },
    );
    const plan = await video.prepare.generation(context, benchGeneration());
    if (!plan.ok) throw new Error(`a benchmark job was refused: ${word(ENGLISH, plan.notice)}`);
    await rig.rest.post(Routes.interactionCallback(run.record.id, run.record.token), { body: { type: 5 }, auth: false });
    prepared.push({ plan: plan.plan, context });
  }
  return prepared;
}

async function runBurst(
  rig: Rig,
  store: CountingStore,
  kind: VideoStore,
  mode: KeyQueueMode,
  options: Required<Omit<KeyQueueBenchOptions, 'stores'>>,
  pollIntervalMs: number,
): Promise<KeyQueueRun> {
  const { jobs, keyLimit } = options;
  const apiKey = mode === 'open' ? OPEN_KEY : LIMITED_KEY;
  const statedLimit = mode === 'learned' ? undefined : mode === 'open' ? jobs : keyLimit;
  const downloads = mkdtempSync(join(tmpdir(), 'bench-key-queue-'));
  const clients = new GatewayClientPool({ baseUrl: rig.emulator.baseUrl, log: silentLogger });
  const video = createVideo({
    store,
    clients,
    policy: benchPolicy(apiKey, `${apiKey}-${mode}`, statedLimit),
    outbox: new DiscordOutbox(rig.rest),
    vendor: 'svc',
    log: silentLogger,
    pollPolicy: { ...DEFAULT_POLL_POLICY, intervalMs: pollIntervalMs, maxIntervalMs: pollIntervalMs },
    downloadDirectory: downloads,
  });
  try {
    const prepared = await prepareJobs(rig, video, jobs);
    const done = new Set<string>();
    let lastDoneAt = 0;
    const allDone = new Promise<void>((resolve) =>
      video.tracker.onFinished((task) => {
        done.add(task.id);
        lastDoneAt = Math.max(lastDoneAt, task.finishedAt ?? Date.now());
        if (done.size === jobs) resolve();
      }),
    );
    store.take();
    const journalFrom = rig.emulator.requests.length;
    const startedAt = Date.now();
    // The burst: every member's every job asked for in the same tick.
    const submitted = await Promise.all(prepared.map(({ plan, context }) => video.submit(plan, context)));
    await allDone;
    const tally = store.take();
    const posts = rig.emulator.requests.slice(journalFrom).filter((entry) => entry.method === 'POST' && entry.path === SUBMIT_PATH);
    const tasks: TaskRecord[] = [];
    for (const { id } of submitted) {
      const task = await video.tasks.get(id);
      if (!task || !isTerminal(task.state)) throw new Error(`benchmark job ${id} did not finish (${task?.state ?? 'gone'})`);
      tasks.push(task);
    }
    const waits = tasks.map((task) => (task.submittedAt ?? NaN) - task.createdAt);
    if (waits.some((wait) => !Number.isFinite(wait))) throw new Error('a benchmark job finished without being sent');
    const byMember = new Map<string, TaskRecord[]>();
    for (const task of tasks) byMember.set(task.userId, [...(byMember.get(task.userId) ?? []), task]);
    const firstWaits: number[] = [];
    const memberMeanWaits: number[] = [];
    for (const own of byMember.values()) {
      const first = own.reduce((earliest, task) => (task.createdAt < earliest.createdAt ? task : earliest));
      firstWaits.push((first.submittedAt ?? 0) - first.createdAt);
      memberMeanWaits.push(own.reduce((sum, task) => sum + (task.submittedAt ?? 0) - task.createdAt, 0) / own.length);
    }
    return {
      store: kind,
      mode,
      submissions: posts.length,
      refusals: posts.filter((entry) => entry.status === 429).length,
      waits,
      firstWaits,
      memberMeanWaits,
      lastSentMs: Math.max(...tasks.map((task) => task.submittedAt ?? 0)) - startedAt,
      lastDoneMs: lastDoneAt - startedAt,
      storeRoundTrips: tally.roundTrips / jobs,
      lineUpdates: (tally.byCall.get('video_key_queues update') ?? 0) / jobs,
      succeeded: tasks.filter((task) => task.state === 'succeeded').length,
    };
  } finally {
    await video.sender.stop();
    await video.tracker.stop();
    await clients.close();
    rmSync(downloads, { recursive: true, force: true });
  }
}

export async function benchmarkKeyQueue(options: KeyQueueBenchOptions): Promise<KeyQueueBenchReport> {
  const settings = {
    jobs: options.jobs ?? 200,
    members: options.members ?? 20,
    keyLimit: options.keyLimit ?? 4,
    generationMs: options.generationMs ?? 200,
  };
  // A tenth of a generation: a freed slot is seen about that late (production polls every 5 s).
  const pollIntervalMs = Math.max(5, Math.round(settings.generationMs / 10));
  const emulator = await startEmulator({
    config: {
      keys: {
        [LIMITED_KEY]: { group: 'default', quota_usd: 1e6, limits: { concurrent_tasks: settings.keyLimit } },
        [OPEN_KEY]: { group: 'default', quota_usd: 1e6, limits: { concurrent_tasks: settings.jobs } },
      },
      timing: { generation_ms: settings.generationMs },
      limits: { rate_per_minute: 1e6 },
    },
    onlyGivenKeys: true,
  });
  // Cards are edited long after their interaction began: Discord's 3 s for the first answer is lifted.
  const discord = await startDiscordStandIn({ responseDeadlineMs: 3_600_000 });
  const rest = new REST({ api: discord.apiUrl, globalRequestsPerSecond: 100_000 }).setToken(discord.botToken);
  try {
    discord.state.commands.set('global', [
      { id: snowflake(), name: 'video', type: 1, options: [{ name: 'generate', type: 1, options: [{ name: 'prompt', type: 3 }] }] },
    ]);
    const guild = discord.createGuild();
    const members = Array.from({ length: settings.members }, () => discord.createUser({ guildId: guild.id }).id);
    const rig: Rig = { emulator, discord, rest, guildId: guild.id, channelId: guild.textChannelId, members };
    const runs: KeyQueueRun[] = [];
    for (const kind of options.stores) {
      const source = await openStoreSource(kind);
      try {
        for (const mode of MODES) {
          const phase = source.fresh();
          const store = new CountingStore(await openStore(phase.url, silentLogger));
          try {
            runs.push(await runBurst(rig, store, kind, mode, settings, pollIntervalMs));
          } finally {
            await store.close();
            phase.remove();
          }
        }
      } finally {
        await source.close();
      }
    }
    return { ...settings, pollIntervalMs, runs };
  } finally {
    rest.clearHashSweeper();
    rest.clearHandlerSweeper();
    await discord.close();
    await emulator.close();
  }
}

const ms = (value: number) => `${Math.round(value)} ms`;
const ratio = (value: number, baseline: number) => `${(value / Math.max(1, baseline)).toFixed(2)}x`;

function spread(values: readonly number[]): string {
  return `${ms(Math.min(...values))}..${ms(Math.max(...values))}`;
}

function runLines(report: KeyQueueBenchReport, run: KeyQueueRun, baseline: KeyQueueRun | undefined): string[] {
  const { jobs, members, keyLimit, generationMs } = report;
  const limit = run.mode === 'open' ? jobs : keyLimit;
  const leastMs = Math.ceil(jobs / limit) * generationMs;
  // Round robin over the members: the last member's first job goes once the generations before it end.
  const leastFirstMs = (Math.ceil(members / limit) - 1) * generationMs;
  const perJob = run.submissions / jobs;
  const waitsP50 = percentile(run.waits, 50);
  const waitsP95 = percentile(run.waits, 95);
  const slots = run.mode === 'learned' ? `${keyLimit} slots, learned` : `${limit} slots, stated`;
  const lines = [
    `  ${run.mode.padEnd(7)} ${slots.padEnd(17)} submissions ${run.submissions} (${run.refusals} refused 429) = ${perJob.toFixed(3)}/job;` +
      ` made ${run.succeeded}/${jobs}; store round trips ${run.storeRoundTrips.toFixed(1)}/job (line updates ${run.lineUpdates.toFixed(1)})`,
    `          wait asked->sent p50 ${ms(waitsP50)}, p95 ${ms(waitsP95)}, max ${ms(Math.max(...run.waits))}`,
    `          members' first job sent after ${spread(run.firstWaits)} (least possible ${ms(leastFirstMs)} for the last),` +
      ` members' mean wait ${spread(run.memberMeanWaits)} (max/min ${ratio(Math.max(...run.memberMeanWaits), Math.min(...run.memberMeanWaits))})`,
    `          last sent ${ms(run.lastSentMs)}, last done ${ms(run.lastDoneMs)} = ${ratio(run.lastDoneMs, leastMs)} the least the key allows (${ms(leastMs)})`,
  ];
  if (baseline)
    lines.push(
      `          vs stated: last done ${ratio(run.lastDoneMs, baseline.lastDoneMs)}, wait p50 ${ratio(waitsP50, percentile(baseline.waits, 50))},` +
        ` p95 ${ratio(waitsP95, percentile(baseline.waits, 95))}, last first job ${ratio(Math.max(...run.firstWaits), Math.max(...baseline.firstWaits))}`,
    );
  return lines;
}

/** Prints the report; a learned line past the bound on submissions per job sets a failing exit code. */
export function printKeyQueueReport(report: KeyQueueBenchReport): void {
  const lines: string[] = [];
  let failed = false;
  for (const store of new Set(report.runs.map((run) => run.store))) {
    const runs = report.runs.filter((run) => run.store === store);
    const stated = runs.find((run) => run.mode === 'stated');
    lines.push(
      `key-queue: ${report.jobs} jobs from ${report.members} members at once on one key of ${report.keyLimit} slots, ${store} store` +
        ` (generation ${report.generationMs} ms, polled every ${report.pollIntervalMs} ms: most store round trips are those polls)`,
    );
    // The open key is the baseline of the path's own wait; the stated limit, of the learned line's.
    for (const run of runs) lines.push(...runLines(report, run, run.mode === 'learned' ? stated : undefined));
    const learned = runs.find((run) => run.mode === 'learned');
    if (learned) {
      const perJob = learned.submissions / report.jobs;
      const over = perJob > SUBMISSIONS_PER_JOB_BOUND;
      failed ||= over;
      lines.push(
        `  ${over ? 'FAIL' : 'ok'}: the learned line sent ${perJob.toFixed(3)} submissions a job (target <= ${SUBMISSIONS_PER_JOB_BOUND})`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (failed) process.exitCode = 1;
}
