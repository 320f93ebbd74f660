import { parentPort } from 'node:worker_threads';
import { isRecord } from '../lib/json.ts';
import { readSpendChartOptions, renderSpendChart, type SpendChartOptions, type SpendDay } from './usage-chart.ts';

// The thread that draws /usage's chart (spend-chart-drawer.ts starts it): echarts and resvg load here,
// about a second of CPU, and each chart is tens of milliseconds more, none of it on the event loop that
// answers members and plays voice frames every 20 ms. Requests come from the bot's own thread; they are
// still read with checks, as everything that crosses a boundary is. The thread runs at the bot's CPU
// priority: lowered (nice 10), it starved on a busy machine and the chart missed its deadline, while the
// event loop, on its own thread, keeps turning either way.

export interface ChartRequest {
  id: number;
  days: SpendDay[];
  options: SpendChartOptions;
}

export type ChartAnswer = { id: number; png: Uint8Array } | { id: number; error: string };

function readDay(value: unknown): SpendDay | undefined {
  if (!isRecord(value)) return undefined;
  const { day, videoUsd, voiceUsd } = value;
  return typeof day === 'string' && typeof videoUsd === 'number' && typeof voiceUsd === 'number' ? { day, videoUsd, voiceUsd } : undefined;
}

function readRequest(message: unknown): ChartRequest | undefined {
  if (!isRecord(message) || typeof message.id !== 'number' || !Array.isArray(message.days)) return undefined;
  const days = message.days.map(readDay);
  const options = readSpendChartOptions(message.options);
  if (days.some((day) => day === undefined) || !options) return undefined;
  return { id: message.id, days: days.filter((day) => day !== undefined), options };
}

function answer(request: ChartRequest): ChartAnswer {
  try {
    return { id: request.id, png: renderSpendChart(request.days, request.options) };
  } catch (error) {
    return { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
}

if (parentPort) {
  const port = parentPort;
  port.on('message', (message: unknown) => {
    const request = readRequest(message);
    if (!request) {
      port.postMessage({ id: isRecord(message) && typeof message.id === 'number' ? message.id : -1, error: 'not a chart request' });
      return;
    }
    // Copied, not transferred: a picture is tens of kilobytes, and resvg's buffer is not ours to detach.
    port.postMessage(answer(request));
  });
}
