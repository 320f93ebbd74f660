import { parseArgs } from 'node:util';
import { benchmarkBlockedWords, printBlockedWordsReport } from './blocked-words.ts';
import { benchmarkChartBesideVoice, printChartBesideVoiceReport } from './chart-beside-voice.ts';
import { CRASH_STORES, benchmarkCrashes, printCrashReport } from './crash.ts';
import { benchmarkDelivery, printDeliveryReport } from './delivery.ts';
import { benchmarkKeyQueue, printKeyQueueReport } from './key-queue.ts';
import { benchmarkFirstFrame, printFirstFrameReport } from './first-frame.ts';
import { benchmarkSpend, printSpendReport } from './spend.ts';
import { benchmarkStart, printStartReport } from './start.ts';
import { benchmarkVideoTracking, printVideoReport } from './video.ts';
import { benchmarkVoice, printVoiceReport } from './voice.ts';
import { benchmarkVoiceAddressing, printVoiceAddressingReport } from './voice-addressing.ts';
import { benchmarkVoiceConsent, printVoiceConsentReport } from './voice-consent.ts';
import {
  benchmarkLibraryFloor,
  benchmarkVoiceCapacity,
  benchmarkVoiceMetering,
  printLibraryFloorReport,
  printVoiceCapacityReport,
  printVoiceMeteringReport,
} from './voice-capacity.ts';

// `npm run bench [-- --only video|delivery|voice|voice-addressing|voice-consent|voice-capacity|voice-metering|voice-floor|spend|crash|first-frame|chart|start|blocked-words|key-queue[,...]] [--tasks N] [--turns N] [--kills N] [--seed N]
// [--store sqlite|redis] [--video-mb N] [--workers N] [--submissions N]`: every benchmark, figures as ratios against baselines measured in the same run.
// The video benchmark runs its tasks through one process and then through --workers workers (default 2,
// one shard each; 1: the single process only), both on a Redis of its own, or with --store sqlite on
// SQLite in the single process alone. The spend benchmark runs --submissions (default 100) each way, on each store (or --store's).
// key-queue: 200 jobs from 20 members at once on a key of 4 slots (on each store, or --store's): submissions per job, waits, makespan.
// blocked-words: the blocked-words check of a prompt (200 rules, 10,000 prompts) against the naive way.
// voice-consent: what an ignored member's packet costs the voice receiver, against an unknown SSRC's.
// voice-metering and voice-floor are parts of voice-capacity on their own: metered conversations against
// unmetered, and the marginal CPU of a bot with no audio work on the same libraries (bench/naive-voice-bot.ts).

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    tasks: { type: 'string' },
    kills: { type: 'string' },
    seed: { type: 'string' },
    store: { type: 'string' },
    'video-mb': { type: 'string' },
    workers: { type: 'string' },
    turns: { type: 'string' },
    submissions: { type: 'string' },
  },
});
const stores = CRASH_STORES.filter((store) => values.store === undefined || values.store === store);
if (stores.length === 0) {
  process.stderr.write(`--store must be sqlite or redis (got ${values.store})\n`);
  process.exit(2);
}
const BENCHMARKS = [
  'video',
  'delivery',
  'voice',
  'voice-addressing',
  'voice-consent',
  'voice-capacity',
  'voice-metering',
  'voice-floor',
  'spend',
  'crash',
  'first-frame',
  'chart',
  'start',
  'blocked-words',
  'key-queue',
];
/** The benchmarks --only names (comma-separated), or undefined for every one. */
const only = values.only?.split(',').map((name) => name.trim());
const unknown = only?.filter((name) => !BENCHMARKS.includes(name)) ?? [];
if (unknown.length > 0) {
  process.stderr.write(`--only takes a comma-separated list of ${BENCHMARKS.join(', ')} (got ${unknown.join(', ')})\n`);
  process.exit(2);
}
/** Whether this run includes `name`; voice-metering and voice-floor run alone only when named (they are also part of voice-capacity). */
const runs = (name: string) => (only === undefined ? name !== 'voice-metering' && name !== 'voice-floor' : only.includes(name));

const videoStore = values.store === 'sqlite' ? 'sqlite' : 'redis';
const videoWorkers = Number(values.workers ?? (videoStore === 'sqlite' ? 1 : 2));
if (!Number.isInteger(videoWorkers) || videoWorkers < 1 || (videoStore === 'sqlite' && videoWorkers > 1)) {
  process.stderr.write(
    `--workers must be a whole number from 1, and 1 with --store sqlite (workers share a Redis) (got ${values.workers})\n`,
  );
  process.exit(2);
}

if (runs('start')) {
  printStartReport(await benchmarkStart());
}

if (runs('video')) {
  printVideoReport(await benchmarkVideoTracking({ tasks: Number(values.tasks ?? 10_000), workers: videoWorkers, store: videoStore }));
}

if (runs('delivery')) {
  printDeliveryReport(await benchmarkDelivery({ videoBytes: Number(values['video-mb'] ?? 50) * 1024 * 1024 }));
}

if (runs('voice')) {
  printVoiceReport(await benchmarkVoice());
}

if (runs('voice-addressing')) {
  printVoiceAddressingReport(await benchmarkVoiceAddressing({ turns: Number(values.turns ?? 40) }));
}

if (runs('voice-consent')) {
  printVoiceConsentReport(benchmarkVoiceConsent());
}

if (runs('voice-capacity')) {
  printVoiceCapacityReport(await benchmarkVoiceCapacity());
}

if (runs('chart')) {
  printChartBesideVoiceReport(await benchmarkChartBesideVoice());
}

if (runs('voice-metering')) {
  printVoiceMeteringReport(await benchmarkVoiceMetering());
}

if (runs('voice-floor')) {
  printLibraryFloorReport(await benchmarkLibraryFloor());
}

if (runs('spend')) {
  printSpendReport(await benchmarkSpend({ submissions: Number(values.submissions ?? 100), stores }));
}

if (runs('crash')) {
  const tasks = only?.includes('crash') && values.tasks !== undefined ? Number(values.tasks) : 40;
  const seed = Number(values.seed ?? Date.now() % 100_000);
  for (const store of stores) printCrashReport(await benchmarkCrashes({ tasks, kills: Number(values.kills ?? 15), seed, store }));
}

if (runs('first-frame')) {
  printFirstFrameReport(await benchmarkFirstFrame());
}

if (runs('key-queue')) {
  printKeyQueueReport(await benchmarkKeyQueue({ stores }));
}

if (runs('blocked-words')) {
  printBlockedWordsReport(benchmarkBlockedWords());
}
