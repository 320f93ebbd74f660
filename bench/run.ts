import { parseArgs } from 'node:util';
import { CRASH_STORES, benchmarkCrashes, printCrashReport } from './crash.ts';
import { benchmarkDelivery, printDeliveryReport } from './delivery.ts';
import { benchmarkVideoTracking, printVideoReport } from './video.ts';
import { benchmarkVoice, printVoiceReport } from './voice.ts';

// `npm run bench [-- --only video|delivery|voice|crash] [--tasks N] [--kills N] [--seed N] [--store sqlite|redis]
// [--video-mb N]`: every benchmark, figures as ratios against baselines measured in the same run.

const { values } = parseArgs({
  options: { only: { type: 'string' }, tasks: { type: 'string' }, kills: { type: 'string' }, seed: { type: 'string' }, store: { type: 'string' }, 'video-mb': { type: 'string' } },
});
const stores = CRASH_STORES.filter((store) => values.store === undefined || values.store === store);
if (stores.length === 0) {
  process.stderr.write(`--store must be sqlite or redis (got ${values.store})\n`);
  process.exit(2);
}
const only = values.only;
if (only !== undefined && !['video', 'delivery', 'voice', 'crash'].includes(only)) {
  process.stderr.write(`--only must be video, delivery, voice or crash (got ${only})\n`);
  process.exit(2);
}

if (!only || only === 'video') {
  printVideoReport(await benchmarkVideoTracking(Number(values.tasks ?? 10_000)));
}

if (!only || only === 'delivery') {
  printDeliveryReport(await benchmarkDelivery({ videoBytes: Number(values['video-mb'] ?? 50) * 1024 * 1024 }));
}

if (!only || only === 'voice') {
  printVoiceReport(await benchmarkVoice());
}

if (!only || only === 'crash') {
  const tasks = only === 'crash' && values.tasks !== undefined ? Number(values.tasks) : 40;
  const seed = Number(values.seed ?? Date.now() % 100_000);
  for (const store of stores) printCrashReport(await benchmarkCrashes({ tasks, kills: Number(values.kills ?? 15), seed, store }));
}
