import { parseArgs } from 'node:util';
import { benchmarkVideoTracking, printVideoReport } from './video.ts';
import { benchmarkVoice, printVoiceReport } from './voice.ts';

// `npm run bench [-- --only video|voice] [-- --tasks N]`: every benchmark, figures as ratios against
// baselines measured in the same run.

const { values } = parseArgs({ options: { only: { type: 'string' }, tasks: { type: 'string' } } });
const only = values.only;

if (!only || only === 'video') {
  printVideoReport(await benchmarkVideoTracking(Number(values.tasks ?? 10_000)));
}

if (!only || only === 'voice') {
  printVoiceReport(await benchmarkVoice());
}
