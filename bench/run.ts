import { parseArgs } from 'node:util';
import { CRASH_STORES, benchmarkCrashes, printCrashReport } from './crash.ts';
import { benchmarkDelivery, printDeliveryReport } from './delivery.ts';
import { benchmarkVideoTracking, printVideoReport } from './video.ts';
import { benchmarkVoice, printVoiceReport } from './voice.ts';
import { benchmarkVoiceAddressing, printVoiceAddressingReport } from './voice-addressing.ts';
import { benchmarkVoiceCapacity, printVoiceCapacityReport } from './voice-capacity.ts';

// `npm run bench [-- --only video|delivery|voice|voice-addressing|voice-capacity|crash] [--tasks N] [--turns N] [--kills N] [--seed N] [--store sqlite|redis]
// [--video-mb N] [--workers N]`: every benchmark, figures as ratios against baselines measured in the same run.
// The video benchmark runs its tasks through one process and then through --workers workers (default 2,
// one shard each; 1: the single process only), both on a Redis of its own, or with --store sqlite on
// SQLite in the single process alone.

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
  },
});
const stores = CRASH_STORES.filter((store) => values.store === undefined || values.store === store);
if (stores.length === 0) {
  process.stderr.write(`--store must be sqlite or redis (got ${values.store})\n`);
  process.exit(2);
}
const only = values.only;
if (only !== undefined && !['video', 'delivery', 'voice', 'voice-addressing', 'voice-capacity', 'crash'].includes(only)) {
  process.stderr.write(`--only must be video, delivery, voice, voice-addressing, voice-capacity or crash (got ${only})\n`);
  process.exit(2);
}

const videoStore = values.store === 'sqlite' ? 'sqlite' : 'redis';
const videoWorkers = Number(values.workers ?? (videoStore === 'sqlite' ? 1 : 2));
if (!Number.isInteger(videoWorkers) || videoWorkers < 1 || (videoStore === 'sqlite' && videoWorkers > 1)) {
  process.stderr.write(
    `--workers must be a whole number from 1, and 1 with --store sqlite (workers share a Redis) (got ${values.workers})\n`,
  );
  process.exit(2);
}

if (!only || only === 'video') {
  printVideoReport(await benchmarkVideoTracking({ tasks: Number(values.tasks ?? 10_000), workers: videoWorkers, store: videoStore }));
}

if (!only || only === 'delivery') {
  printDeliveryReport(await benchmarkDelivery({ videoBytes: Number(values['video-mb'] ?? 50) * 1024 * 1024 }));
}

if (!only || only === 'voice') {
  printVoiceReport(await benchmarkVoice());
}

if (!only || only === 'voice-addressing') {
  printVoiceAddressingReport(await benchmarkVoiceAddressing({ turns: Number(values.turns ?? 40) }));
}

if (!only || only === 'voice-capacity') {
  printVoiceCapacityReport(await benchmarkVoiceCapacity());
}

if (!only || only === 'crash') {
  const tasks = only === 'crash' && values.tasks !== undefined ? Number(values.tasks) : 40;
  const seed = Number(values.seed ?? Date.now() % 100_000);
  for (const store of stores) printCrashReport(await benchmarkCrashes({ tasks, kills: Number(values.kills ?? 15), seed, store }));
}
