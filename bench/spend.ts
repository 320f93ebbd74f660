import { ENGLISH } from '../src/i18n/index.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Routes } from 'discord.js';
import { silentLogger } from '../src/lib/log.ts';
import { budgetChange } from '../src/settings/config-options.ts';
import { openStore } from '../src/store/index.ts';
import { pollPolicyWithInterval } from '../src/video/poll-policy.ts';
import { word } from '../src/wording/notice.ts';
import { CountingStore, type StoreTally } from './counting-store.ts';
import { percentile } from '../test/support/percentile.ts';
import { benchGeneration, contextOf, startVideoBot, type VideoBot } from './video-bot.ts';
import type { Interaction, ServerInfo } from './video-protocol.ts';
import { newInteractions, openStoreSource, startServers, type PhaseStore, type VideoStore } from './video.ts';

// Issue 24's store cost of budgets: /video submissions through the real video part and settings (as
// src/app.ts puts them together, budget alerts wired) on a real store, against the gateway emulator and
// the Discord stand-in, once on a server with no budgets and once on one with all three set (high enough
// to refuse nothing). Each side has a store of its own (a SQLite file, or a database of a Redis server
// of the benchmark's own) and the same members in the same order; the submissions are alternated between
// the two, one at a time, so that both see the same machine. Every call the parts make of the store is
// counted (bench/counting-store.ts): the difference per submission is what the budgets cost, and the
// target is at most one more store round trip in the submission itself (VideoSubmission.submit, where the
// estimate is reserved); preparing is counted beside it. Time per submission (both steps) is given as a
// ratio of the two.

/** The bound on what budgets add to a submission, in store round trips. */
export const BUDGET_ROUND_TRIPS_BOUND = 1;
/** Submissions on each side before the measured ones: the first ones pay for compiling and opening. */
const WARM_UP = 10;
/** Budgets that refuse nothing here (an estimate is cents; the benchmark's servers have 20 guilds of 50 members). */
const HIGH_BUDGETS = { member_daily_usd: 100_000, server_daily_usd: 500_000, server_monthly_usd: 1_000_000 };
/** Tasks are not polled while the benchmark runs: only submissions touch the store. */
const NO_POLLS_FOR_MS = 3_600_000;

export interface SpendBenchOptions {
  /** Measured submissions on each side. */
  submissions: number;
  stores: readonly VideoStore[];
}

/** Per submission, averaged: the store round trips of each step, and where they went. */
export interface SpendSide {
  budgets: boolean;
  /** Preparing (checks before the interaction is deferred) and submitting (admission, the task stored, sent, its card). */
  roundTrips: { prepare: number; submit: number };
  requests: { prepare: number; submit: number };
  /** Round trips by `collection method`, both steps together. */
  byCall: Map<string, number>;
  /** Round trips made between submissions (by nothing the benchmark asked: should be none). */
  between: number;
  ms: { p50: number; mean: number };
}

export interface SpendStoreReport {
  store: VideoStore;
  submissions: number;
  without: SpendSide;
  with: SpendSide;
}

export interface SpendBenchReport {
  runs: SpendStoreReport[];
}

interface Side {
  budgets: boolean;
  phase: PhaseStore;
  counting: CountingStore;
  bot: VideoBot;
  interactions: Interaction[];
  downloads: string;
  totals: { prepare: StoreTally[]; submit: StoreTally[]; between: number; ms: number[] };
}

async function openSide(info: ServerInfo, phase: PhaseStore, budgets: boolean, count: number): Promise<Side> {
  const counting = new CountingStore(await openStore(phase.url, silentLogger));
  const downloads = mkdtempSync(join(tmpdir(), 'bench-spend-'));
  const bot = startVideoBot(info, counting, {
    postAlerts: true,
    pollPolicy: pollPolicyWithInterval(NO_POLLS_FOR_MS),
    downloadDirectory: downloads,
  });
  const interactions = await newInteractions(info, count);
  if (budgets) {
    const change = budgetChange({ ...HIGH_BUDGETS, confirm_over_usd: null, alertChannelId: null, clearAlertChannel: false });
    if (!change.ok) throw new Error(word(ENGLISH, change.notice));
    for (const guildId of new Set(interactions.map((interaction) => interaction.guildId)))
      await bot.settings.update(guildId, 'bench', change.description, change.change);
  }
  // Setting the budgets up is not a submission's.
  counting.take();
  return { budgets, phase, counting, bot, interactions, downloads, totals: { prepare: [], submit: [], between: 0, ms: [] } };
}

async function closeSide(side: Side): Promise<void> {
  await side.bot.stop();
  await side.counting.close();
  side.phase.remove();
  rmSync(side.downloads, { recursive: true, force: true });
}

/** One /video generate as the command runs it: prepared, deferred, submitted; its store calls counted by step. */
async function submitOne(info: ServerInfo, side: Side, interaction: Interaction, measured: boolean): Promise<void> {
  const { bot, counting, totals } = side;
  totals.between += counting.take().roundTrips;
  const context = contextOf(info, interaction);
  const startedAt = performance.now();
  const prepared = await bot.video.prepare.generation(context, benchGeneration());
  const preparedMs = performance.now() - startedAt;
  if (!prepared.ok) throw new Error(`a benchmark submission was refused: ${word(ENGLISH, prepared.notice)}`);
  const prepare = counting.take();
  await bot.rest.post(Routes.interactionCallback(interaction.id, interaction.token), { body: { type: 5 }, auth: false });
  const submittedAt = performance.now();
  const task = await bot.video.submit(prepared.plan, context);
  const submitMs = performance.now() - submittedAt;
  const submit = counting.take();
  if (task.state !== 'running') throw new Error(`a benchmark task ended up ${task.state}`);
  // The monthly budget is what makes a submission reserve against the month too: proof the budgets were in force.
  if ((task.reservation?.month ?? false) !== side.budgets)
    throw new Error(`a task was reserved ${side.budgets ? 'without' : 'with'} the budgets`);
  if (!measured) return;
  totals.prepare.push(prepare);
  totals.submit.push(submit);
  totals.ms.push(preparedMs + submitMs);
}

function figures(side: Side): SpendSide {
  const { prepare, submit, between, ms } = side.totals;
  const count = prepare.length;
  const mean = (tallies: StoreTally[], of: (tally: StoreTally) => number) => tallies.reduce((sum, tally) => sum + of(tally), 0) / count;
  const byCall = new Map<string, number>();
  for (const tally of [...prepare, ...submit])
    for (const [call, times] of tally.byCall) byCall.set(call, (byCall.get(call) ?? 0) + times / count);
  return {
    budgets: side.budgets,
    roundTrips: { prepare: mean(prepare, (tally) => tally.roundTrips), submit: mean(submit, (tally) => tally.roundTrips) },
    requests: { prepare: mean(prepare, (tally) => tally.requests), submit: mean(submit, (tally) => tally.requests) },
    byCall,
    between,
    ms: { p50: percentile(ms, 50), mean: ms.reduce((sum, value) => sum + value, 0) / ms.length },
  };
}

async function measureStore(info: ServerInfo, store: VideoStore, submissions: number): Promise<SpendStoreReport> {
  const source = await openStoreSource(store);
  const sides: Side[] = [];
  try {
    for (const budgets of [false, true]) sides.push(await openSide(info, source.fresh(), budgets, WARM_UP + submissions));
    for (let index = 0; index < WARM_UP + submissions; index++) {
      // Alternated, each side first every other time, so that neither always follows the other.
      for (const side of index % 2 === 0 ? sides : [...sides].reverse())
        await submitOne(info, side, side.interactions[index]!, index >= WARM_UP);
    }
    return { store, submissions, without: figures(sides[0]!), with: figures(sides[1]!) };
  } finally {
    for (const side of sides) await closeSide(side);
    await source.close();
  }
}

export async function benchmarkSpend(options: SpendBenchOptions): Promise<SpendBenchReport> {
  const servers = await startServers(1);
  try {
    const runs: SpendStoreReport[] = [];
    for (const store of options.stores) runs.push(await measureStore(servers.info, store, options.submissions));
    return { runs };
  } finally {
    await servers.close();
  }
}

const fixed = (value: number) => value.toFixed(2);
const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;

/** What the budgets added, by collection call (the calls whose count changed). */
function addedCalls(run: SpendStoreReport): string {
  const calls = new Set([...run.without.byCall.keys(), ...run.with.byCall.keys()]);
  const changed = [...calls]
    .map((call) => [call, (run.with.byCall.get(call) ?? 0) - (run.without.byCall.get(call) ?? 0)] as const)
    .filter(([, added]) => Math.abs(added) > 0.005)
    .sort((a, b) => b[1] - a[1]);
  return changed.length === 0 ? 'nothing' : changed.map(([call, added]) => `${call} ${signed(added)}`).join(', ');
}

function runLines(run: SpendStoreReport): { lines: string[]; failed: boolean } {
  const { without, with: budgeted } = run;
  const row = (what: string, off: number, on: number) =>
    `  ${what.padEnd(34)} ${fixed(off).padStart(8)} ${fixed(on).padStart(12)} ${signed(on - off).padStart(12)}`;
  const total = (side: SpendSide) => side.roundTrips.prepare + side.roundTrips.submit;
  const requests = (side: SpendSide) => side.requests.prepare + side.requests.submit;
  // The submission is VideoSubmission.submit, where the estimate is reserved (the "at submission");
  // what preparing adds is shown beside it (a monthly budget is read there to refuse before the defer).
  const added = budgeted.roundTrips.submit - without.roundTrips.submit;
  const failed = added > BUDGET_ROUND_TRIPS_BOUND + 1e-9;
  const addedInAll = total(budgeted) - total(without);
  const between = without.between + budgeted.between;
  return {
    failed,
    lines: [
      `spend: store round trips per /video submission, ${run.store} store, ${run.submissions} submissions each way (alternated, after ${WARM_UP} each to warm up)`,
      `  ${'per submission'.padEnd(34)} ${'no budgets'.padStart(8)} ${'all three set'.padStart(12)} ${'budgets add'.padStart(12)}`,
      row('prepare (checks before the defer)', without.roundTrips.prepare, budgeted.roundTrips.prepare),
      row('submit (admission, store, send)', without.roundTrips.submit, budgeted.roundTrips.submit),
      row('round trips in all', total(without), total(budgeted)),
      row('backend requests (reads and writes)', requests(without), requests(budgeted)),
      `  added by the budgets, by call: ${addedCalls(run)}`,
      ...(between > 0
        ? [`  (${between} round trips were made between submissions, by nothing the benchmark asked: not in the figures)`]
        : []),
      `  time per submission p50 ${fixed(budgeted.ms.p50)} ms with budgets vs ${fixed(without.ms.p50)} ms without = ${(budgeted.ms.p50 / without.ms.p50).toFixed(2)}x` +
        ` (mean ${fixed(budgeted.ms.mean)} vs ${fixed(without.ms.mean)} ms = ${(budgeted.ms.mean / without.ms.mean).toFixed(2)}x)`,
      `  ${failed ? 'FAIL' : 'ok'}: budgets add ${fixed(added)} store round trips to a submission (target <= ${BUDGET_ROUND_TRIPS_BOUND});` +
        ` with its preparation, ${fixed(addedInAll)}`,
    ],
  };
}

/** Prints the report; a run past the target sets a failing exit code (the other benchmarks still run). */
export function printSpendReport(report: SpendBenchReport): void {
  const runs = report.runs.map(runLines);
  process.stdout.write(`${runs.flatMap((run) => run.lines).join('\n')}\n`);
  if (runs.some((run) => run.failed)) process.exitCode = 1;
}
