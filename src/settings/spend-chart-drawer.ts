import { Worker } from 'node:worker_threads';
import { isRecord } from '../lib/json.ts';
import type { ChartAnswer, ChartRequest } from './spend-chart-thread.ts';
import type { SpendChartOptions, SpendDay } from './usage-chart.ts';

// /usage's chart, drawn on a thread of its own (spend-chart-thread.ts). Drawn in the bot's thread, the
// first chart held the event loop 1.1-1.8 s while echarts and resvg loaded: every member's answer and
// every voice frame waited behind it. The thread starts with the first chart asked for (most processes
// never draw one), stays for the next ones, and ends when charts stop being asked for, giving back what
// the libraries hold.

export interface SpendChartDrawerOptions {
  /** From the request to the picture, the libraries' load included on a thread's first chart; then the thread is ended. */
  deadlineMs: number;
  /** A thread with nothing to draw for this long is ended. */
  idleMs: number;
}

/**
 * A first chart on a busy 2-core machine takes 1-3 s (the libraries' load); the deadline leaves the
 * interaction's answer time to say that no chart came. Ten idle minutes keep the thread for a manager
 * who looks again, not all day.
 */
export const SPEND_CHART_DRAWER_OPTIONS: SpendChartDrawerOptions = { deadlineMs: 15_000, idleMs: 10 * 60_000 };

const THREAD_MODULE = new URL('./spend-chart-thread.ts', import.meta.url);

type Settle = (answer: ChartAnswer) => void;

function readAnswer(message: unknown): ChartAnswer | undefined {
  if (!isRecord(message) || typeof message.id !== 'number') return undefined;
  if (message.png instanceof Uint8Array) return { id: message.id, png: message.png };
  return { id: message.id, error: typeof message.error === 'string' ? message.error : 'the chart thread answered without a picture' };
}

export class SpendChartDrawer {
  readonly #options: SpendChartDrawerOptions;
  #thread: Worker | undefined;
  readonly #pending = new Map<number, Settle>();
  #nextId = 0;
  #idleTimer: NodeJS.Timeout | undefined;

  constructor(options: SpendChartDrawerOptions = SPEND_CHART_DRAWER_OPTIONS) {
    this.#options = options;
  }

  /** A PNG of spend per day, as `renderSpendChart()` draws it; rejects with why when none can be had in time. */
  draw(days: readonly SpendDay[], options: SpendChartOptions = {}): Promise<Buffer> {
    clearTimeout(this.#idleTimer);
    const thread = this.#thread ?? this.#start();
    const id = this.#nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        // A thread that misses the deadline may be stuck in a drawing: it is ended, and the next chart starts another.
        this.#end(thread, `the chart was not drawn within ${this.#options.deadlineMs} ms`);
      }, this.#options.deadlineMs);
      this.#pending.set(id, (answer) => {
        clearTimeout(timer);
        this.#pending.delete(id);
        if (this.#pending.size === 0) this.#idleTimer = setTimeout(() => this.close(), this.#options.idleMs).unref();
        if ('png' in answer) resolve(Buffer.from(answer.png.buffer, answer.png.byteOffset, answer.png.byteLength));
        else reject(new Error(answer.error));
      });
      const message: ChartRequest = { id, days: [...days], options };
      thread.postMessage(message);
    });
  }

  /** Ends the thread; a chart asked for later starts another. */
  close(): void {
    clearTimeout(this.#idleTimer);
    if (this.#thread) this.#end(this.#thread, 'the chart thread was closed');
  }

  #start(): Worker {
    const thread = new Worker(THREAD_MODULE);
    // The thread never keeps the process alive: a process that is done exits with it.
    thread.unref();
    thread.on('message', (message: unknown) => {
      const answer = readAnswer(message);
      if (answer) this.#pending.get(answer.id)?.(answer);
    });
    thread.on('error', (error) => this.#end(thread, `the chart thread failed: ${error.message}`));
    thread.on('exit', (code) => this.#end(thread, `the chart thread stopped (exit ${code})`));
    this.#thread = thread;
    return thread;
  }

  /** Every chart still waiting on `thread` is refused with `why`, and the thread is ended. */
  #end(thread: Worker, why: string): void {
    if (this.#thread !== thread) return;
    this.#thread = undefined;
    for (const [id, settle] of [...this.#pending]) settle({ id, error: why });
    void thread.terminate();
  }
}
