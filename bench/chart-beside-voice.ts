import { availableParallelism } from 'node:os';
import { readNumber } from '../src/lib/json.ts';
import { CapacityRig, placeProcesses, stepLine, type CapacityStep } from './voice-capacity.ts';

// Issue 33's chart off the event loop: one bot worker of the voice capacity rig holds 20 two-way
// conversations (DAVE on), and three windows are measured: the conversations alone, with the process's
// first /usage chart drawn as the bot draws it (on a thread of its own), and with it drawn as it was drawn
// before (on the event loop, echarts and resvg loaded there). The first chart is the one that loads the
// libraries, so each way is measured once, in that order, in the same process.

const CONVERSATIONS = 20;
/** The chart is asked for this far into the window, once every conversation is talking. */
const DRAW_AFTER_MS = 2_000;

export interface ChartWindow {
  step: CapacityStep;
  /** From the chart asked for to the picture (undefined for the window without one). */
  drawnMs?: number;
}

export interface ChartBesideVoiceReport {
  conversations: number;
  alone: ChartWindow;
  onThread: ChartWindow;
  onLoop: ChartWindow;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function benchmarkChartBesideVoice(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<ChartBesideVoiceReport> {
  const placement = placeProcesses(1, availableParallelism());
  log(`chart beside voice: ${CONVERSATIONS} conversations on one worker (${placement.note})`);
  const rig = await CapacityRig.start(placement);
  try {
    await rig.ensure(CONVERSATIONS);
    const worker = rig.workers[0]!;
    const withChart = async (onLoop: boolean): Promise<ChartWindow> => {
      let drawnMs: number | undefined;
      const step = await rig.measure(CONVERSATIONS, async () => {
        await sleep(DRAW_AFTER_MS);
        drawnMs = readNumber(await worker.request({ op: 'drawChart', onLoop }), 'drawnMs');
      });
      log(`${stepLine(step)}  (first chart ${onLoop ? 'on the event loop' : 'on its thread'}: ${drawnMs?.toFixed(0)} ms)`);
      return { step, ...(drawnMs === undefined ? {} : { drawnMs }) };
    };
    const alone = { step: await rig.measure(CONVERSATIONS) };
    log(`${stepLine(alone.step)}  (no chart)`);
    const onThread = await withChart(false);
    const onLoop = await withChart(true);
    return { conversations: CONVERSATIONS, alone, onThread, onLoop };
  } finally {
    await rig.stop();
  }
}

export function printChartBesideVoiceReport(report: ChartBesideVoiceReport): void {
  const loop = (window: ChartWindow) =>
    `event-loop delay p99 ${window.step.loopDelayP99Ms.toFixed(0)} ms (max ${window.step.loopDelayMaxMs.toFixed(0)}), ` +
    `in p99 ${window.step.input.p99.toFixed(0)} ms, out p99 ${window.step.sent.p99.toFixed(0)} ms` +
    (window.drawnMs === undefined ? '' : `; the chart took ${window.drawnMs.toFixed(0)} ms`);
  const ratio = (window: ChartWindow, figure: 'loopDelayP99Ms' | 'loopDelayMaxMs') =>
    (window.step[figure] / report.onLoop.step[figure]).toFixed(2);
  process.stdout.write(
    [
      `first /usage chart beside ${report.conversations} voice conversations, one bot worker (event-loop delays include the 20 ms sampling interval):`,
      `  no chart:                          ${loop(report.alone)}`,
      `  on its own thread (the bot):       ${loop(report.onThread)}`,
      `  on the event loop (the baseline):  ${loop(report.onLoop)}`,
      `  against the baseline: event-loop p99 ${ratio(report.onThread, 'loopDelayP99Ms')}x with the chart on its thread (${ratio(report.alone, 'loopDelayP99Ms')}x with no chart),` +
        ` longest delay ${ratio(report.onThread, 'loopDelayMaxMs')}x (${ratio(report.alone, 'loopDelayMaxMs')}x)`,
    ].join('\n') + '\n',
  );
}
