import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { readArray, readNumber, readRecord, readString } from '../src/lib/json.ts';
import { OPUS_CODEC_NAMES } from '../src/voice/audio/opus-codec.ts';
import { summariseProfile, type ProfileSummary } from './cpu-profile.ts';
import {
  USER_ID,
  latencyOf,
  median,
  readPacketProblems,
  startFarEnds,
  startLineChild,
  type FarEnds,
  type Latency,
  type LineChild,
} from './voice-rig.ts';
import { percentile } from '../test/support/percentile.ts';
import type { BotPacketProblems } from 'discord-standin';

// Issue 16's voice capacity: how many two-way conversations one bot process holds within the bounds
// below, on the real pipeline of bench/voice.ts (the bot's VoiceSession on the real @discordjs/voice, DAVE
// on as on Discord), each conversation in its own guild and channel with a user talking without pause and
// answers streaming back. The conversations are raised step by step (a ladder, then bisection between the
// last step within the bounds and the first past them) until the added latency p99 passes 40 ms either way
// or the bot process's CPU passes 90% of one core. Added latency is what passes between the bot's own two
// sockets, both ways alike: in, a user's packet arriving to the append that carries it; out, an answer's
// first delta arriving to its first audio packet leaving the bot. Out as the voice server notes it is
// reported beside it, but not judged: with dozens of calls the far ends' own event loops (processes of the
// rig, doing a member's DAVE decryption of every frame) add their delays to it. Then the same with two bot
// processes, each holding half the conversations, on two cores.
//
// The bot runs in worker processes (bench/voice-capacity-worker.ts) that measure themselves; the far ends
// (voice server and realtime gateway, bench/ws-sink.ts) run in processes of their own, on cores of their
// own when the machine has them (taskset), so that they do not starve the bot, and say how much CPU they
// used. Each worker also measures the bare-opusscript baseline of bench/voice.ts beside its windows: the
// marginal CPU of one more conversation is given as a share of a core and as a ratio to that baseline.
// Finally a window near the one-worker limit is profiled (V8's CPU profiler, as --cpu-prof runs it) and its
// self time summed by module.

export const WINDOW_SECONDS = 10;
const WARM_UP_SECONDS = 2;
export const LATENCY_BOUND_MS = 40;
export const CPU_BOUND_SHARE = 0.9;
/**
 * What the out bound allows on top of LATENCY_BOUND_MS: @discordjs/voice sends every player's packets on
 * one 20 ms clock, and prepares each packet a tick before it sends it. A lone conversation (bench/voice.ts)
 * starts that clock when its answer starts, so its first packet leaves one tick after its first delta; with
 * other conversations playing the clock is already running, and the first packet also waits for the next
 * tick: up to 20 ms more at any load. The literal bound is reported beside it.
 */
export const SHARED_CLOCK_WAIT_MS = 20;
/** Conversations each far-end process hosts at most (it is single-threaded too, and must not be what bounds the bot). */
const CONVERSATIONS_PER_FAR_END = 25;
/** Conversations joined at once while the bot takes more on (each is a TLS websocket, UDP discovery and an MLS group). */
const JOIN_CONCURRENCY = 8;
/** Conversations per worker at each rung of the ladder; past its top, rungs grow by its last step. */
const LADDER = [5, 10, 20, 30, 40, 50, 60, 70, 80];
/** Where each run starts on the ladder: one worker from the bottom; two from 20 each (what one holds easily, to save time). */
const FIRST_RUNG: Record<number, number> = { 1: 0, 2: 2 };
/** The search stops bisecting once the last step within the bounds and the first past them are this close (per worker). */
const RESOLUTION = 5;
/** Other processes using less than this (in cores) leave the machine quiet enough to measure on. */
const QUIET_CORES = 0.3;
/** How long a window waits for a quiet machine before it is measured anyway (and flagged). */
const QUIET_WAIT_MS = 10_000;
/** Never more than this many conversations per worker (the far ends would be the limit long before). */
const MAX_PER_WORKER = 200;

/** One measured window with `conversations` talking at once. */
export interface CapacityStep {
  conversations: number;
  /** Each worker's CPU over the window, as a share of one core. */
  workerShares: number[];
  /** Conversations each worker held. */
  workerConversations: number[];
  /** CPU of all far-end processes over the window, in cores. */
  farEndCores: number;
  /** CPU of everything else on the machine over the window, in cores (undefined where /proc/stat is not there). */
  otherCores: number | undefined;
  input: Latency;
  output: Latency;
  /** Out as the bot sees it: an answer's first delta to the first audio packet its voice library sent (no far-end delay in it). */
  sent: Latency;
  /** The bot's own part of out: an answer's first audio to its play; the rest of out is @discordjs/voice's clock and the network. */
  toPlay: Latency;
  /** Event-loop delay p99 over the window (the worst worker, and the worst far end), the 20 ms sampling interval included; the workers' longest. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  farEndLoopDelayP99Ms: number;
  /** The share of the window a worker's main thread waited for a CPU while it had work (the worst worker; undefined off Linux). */
  waitShare: number | undefined;
  /** The workers' garbage collection over the window: its share of the time (the worst worker), and the longest pause. */
  gcShare: number;
  gcLongestMs: number;
  /** Bare opusscript decode+encode of one conversation's audio, share of one core, measured beside the window (median of the workers). */
  baselineShare: number;
  /** The native codec's floor for the same audio (bench/voice-rig.ts, nativeFloorCpuMs), beside it; undefined without the native build. */
  nativeFloorShare: number | undefined;
  /** What was past the bounds (empty within them). */
  pastBounds: string[];
}

export interface CapacityRun {
  workers: number;
  /** The Opus codec the workers ran (bench/voice-capacity-worker.ts says it when it starts). */
  codec: string;
  /** Where the processes ran: the CPUs each worker and the far ends were given. */
  placement: Placement;
  /** Far-end processes started (one per CONVERSATIONS_PER_FAR_END conversations). */
  farEndProcesses: number;
  /** In the order measured. */
  steps: CapacityStep[];
  /** The most conversations (in all) measured within the bounds; 0 when none was. */
  capacity: number;
  /** Least squares of a worker's CPU share on its conversations, over the steps within the bounds. */
  marginalShare: number | undefined;
  fixedShare: number | undefined;
  problems: BotPacketProblems;
  /** Conversations whose call did not settle on DAVE (target 0). */
  notDave: number;
}

export interface VoiceCapacityReport {
  windowSeconds: number;
  cores: number;
  one: CapacityRun;
  two: CapacityRun;
  profile: { conversations: number; path: string; window: ProfiledWindow; summary: ProfileSummary } | undefined;
  metering: MeteringComparison;
  floor: LibraryFloor;
}

/** The libraries' floor on one worker (bench/naive-voice-bot.ts): its CPU at two counts of conversations, and the slope between them. */
export interface LibraryFloor {
  conversations: readonly number[];
  shares: number[];
  marginalShare: number;
  /** Bare opusscript decode+encode of one conversation's audio, measured beside the windows. */
  baselineShare: number;
}

/**
 * Issue 24: the same number of conversations on one worker, unmetered and then metered (new conversations
 * with the voice part's meter running), each measured over METERING_WINDOWS windows.
 */
export type MeteringComparison = {
  conversations: number;
  /** The worker's CPU over each window, as a share of one core. */
  unmetered: number[];
  metered: number[];
  /** What the meters asked of the spending over the metered conversations' life, and the session time they counted. */
  meters: number;
  meteredMs: number;
};

/** The worker's CPU over the profiled window: in all, in the kernel, and by thread (the profiler samples only the main one). */
export interface ProfiledWindow {
  cpuShare: number;
  systemShare: number;
  threadShares: { name: string; share: number }[];
}

interface Placement {
  workerCpus: (string | undefined)[];
  farEndCpus: string | undefined;
  /** In words, for the report. */
  note: string;
}

function hasTaskset(): boolean {
  return spawnSync('taskset', ['-c', '0', 'true']).status === 0;
}

/** Each worker on a core of its own, the far ends on the cores left (or sharing the workers' when none are). */
export function placeProcesses(workers: number, cores: number): Placement {
  if (!hasTaskset() || cores < workers)
    return {
      workerCpus: Array.from({ length: workers }, () => undefined),
      farEndCpus: undefined,
      note: `no pinning (taskset missing or fewer than ${workers} cores): the scheduler places every process`,
    };
  const workerCpus = Array.from({ length: workers }, (_, index) => String(index));
  if (cores > workers) {
    const farEndCpus = cores - 1 === workers ? String(workers) : `${workers}-${cores - 1}`;
    return {
      workerCpus,
      farEndCpus,
      note: `worker${workers > 1 ? 's' : ''} on CPU ${workerCpus.join(' and ')}, far ends on CPU ${farEndCpus} (taskset)`,
    };
  }
  return {
    workerCpus,
    farEndCpus: undefined,
    note: `workers on CPU ${workerCpus.join(' and ')}; this machine has no core left, so the far ends share the workers' ${cores} (taskset)`,
  };
}

/**
 * A bot worker, with the far ends it may ask things of (the voice handshake goes through here; `farEnds` may
 * grow); `args` for the worker (bench/voice-capacity-worker.ts: `--naive`, `--codec opusscript`).
 */
export async function startWorker(cpus: string | undefined, farEnds: readonly FarEnds[], args: string[] = []): Promise<LineChild> {
  const relay = (message: Record<string, unknown>) => {
    const id = readNumber(message, 'relay');
    const far = farEnds[readNumber(message, 'far') ?? -1];
    const request = readRecord(message, 'message');
    if (id === undefined || !far || !request) return;
    const answer = (body: Record<string, unknown>) => worker.process.stdin?.write(`${JSON.stringify({ relayAnswer: id, ...body })}\n`);
    far.request(request).then(
      (reply) => answer({ answer: reply }),
      (error: unknown) => answer({ error: String(error) }),
    );
  };
  const worker = await startLineChild('voice-capacity-worker.ts', args, {
    cpus,
    nodeFlags: ['--expose-gc'],
    asBot: true,
    onMessage: relay,
  });
  for (const [index, far] of farEnds.entries())
    await worker.request({ op: 'addFarEnd', far: index, endpoint: far.endpoint, wsUrl: far.wsUrl, certPem: far.certPem });
  return worker;
}

interface Seat {
  guildId: string;
  worker: number;
  far: number;
}

async function inBatches<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += size) await Promise.all(items.slice(start, start + size).map(work));
}

/** The machine's busy and total CPU time so far, in jiffies, from /proc/stat (undefined elsewhere). */
async function machineCpu(): Promise<{ busy: number; total: number } | undefined> {
  try {
    const fields = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
    return { busy: total - fields[3]! - fields[4]!, total };
  } catch {
    return undefined;
  }
}

/**
 * Waits, up to `maxMs`, for a moment when the machine is quiet: less than QUIET_CORES busy over half a
 * second while the conversations sit idle (on a shared machine, someone else's build would be measured as
 * the bot's latency). Returns whether it was.
 */
async function untilQuiet(maxMs: number): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  do {
    const before = await machineCpu();
    await sleep(500);
    const after = await machineCpu();
    if (!before || !after) return true;
    if (((after.busy - before.busy) / (after.total - before.total)) * availableParallelism() < QUIET_CORES) return true;
  } while (performance.now() < deadline);
  return false;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const numbers = (values: readonly unknown[] | undefined) => (values ?? []).filter((value): value is number => typeof value === 'number');

/** Workers and far ends for one run, and the conversations joined so far. */
export class CapacityRig {
  readonly seats: Seat[] = [];
  notDave = 0;
  #windows = 0;
  /** Conversations ever joined: each has a guild of its own, also after leaveAll(). */
  #joined = 0;

  readonly workers: LineChild[] = [];
  /** Far-end processes, started as conversations need them. */
  readonly farEnds: FarEnds[] = [];
  readonly #placement: Placement;

  constructor(placement: Placement) {
    this.#placement = placement;
  }

  /** `workerArgs` for every worker (see startWorker). */
  static async start(placement: Placement, workerArgs: string[] = []): Promise<CapacityRig> {
    const rig = new CapacityRig(placement);
    try {
      for (const cpus of placement.workerCpus) rig.workers.push(await startWorker(cpus, rig.farEnds, workerArgs));
    } catch (error) {
      await rig.stop();
      throw error;
    }
    return rig;
  }

  async #addFarEnd(): Promise<void> {
    const far = await startFarEnds({ dave: true, cpus: this.#placement.farEndCpus });
    const index = this.farEnds.push(far) - 1;
    for (const worker of this.workers)
      await worker.request({ op: 'addFarEnd', far: index, endpoint: far.endpoint, wsUrl: far.wsUrl, certPem: far.certPem });
  }

  /**
   * Joins conversations until `count` are held (spread evenly over the workers; far ends filled in turn), and
   * warms the new ones up. `metered`: with the voice part's meter running on each new one (bench/voice-meter.ts).
   */
  async ensure(count: number, metered = false): Promise<void> {
    const fresh: Seat[] = [];
    for (let index = this.seats.length; index < count; index++) {
      const far = Math.floor(index / CONVERSATIONS_PER_FAR_END);
      while (this.farEnds.length <= far) await this.#addFarEnd();
      fresh.push({ guildId: String(500_000_000_000_000_000n + BigInt(this.#joined++)), worker: index % this.workers.length, far });
    }
    await inBatches(fresh, JOIN_CONCURRENCY, async (seat) => {
      const call = await this.workers[seat.worker]!.request({ op: 'join', guildId: seat.guildId, far: seat.far, dave: true, metered });
      if ((readNumber(call, 'daveProtocolVersion') ?? 0) < 1) this.notDave++;
      this.seats.push(seat);
    });
    if (fresh.length > 0) await this.#converse(fresh, WARM_UP_SECONDS);
  }

  /** The first `count` conversations talk for `seconds`, each starting at its own phase of the 20 ms clock. */
  async #converse(seats: Seat[], seconds: number): Promise<Map<string, Record<string, unknown>>> {
    const answerIndex = ++this.#windows * 1000;
    const results = new Map<string, Record<string, unknown>>();
    await Promise.all(
      seats.map(async (seat, index) => {
        await sleep((index * 20) / seats.length);
        results.set(
          seat.guildId,
          await this.farEnds[seat.far]!.request({
            op: 'converse',
            guildId: seat.guildId,
            userId: USER_ID,
            seconds,
            answerIndex,
            preEncoded: true,
          }),
        );
      }),
    );
    return results;
  }

  /**
   * One window with the first `count` conversations talking, the baseline measured just before it;
   * `during`, when given, runs inside the window beside them (the window lasts until both are done).
   */
  async measure(count: number, during?: () => Promise<unknown>): Promise<CapacityStep> {
    await this.ensure(count);
    const seats = this.seats.slice(0, count);
    const baselines: number[] = [];
    const floors: number[] = [];
    for (const worker of this.workers) {
      const answer = await worker.request({ op: 'baseline', seconds: WINDOW_SECONDS });
      baselines.push(readNumber(answer, 'share') ?? 0);
      const floor = readNumber(answer, 'nativeFloorShare');
      if (floor !== undefined) floors.push(floor);
    }
    await untilQuiet(QUIET_WAIT_MS);
    const farCpuBefore = await Promise.all(this.farEnds.map((far) => far.cpu()));
    const machineBefore = await machineCpu();
    const wallStart = performance.now();
    await Promise.all(this.workers.map((worker) => worker.request({ op: 'windowStart' })));
    const [results] = await Promise.all([this.#converse(seats, WINDOW_SECONDS), during?.()]);
    const ends = await Promise.all(
      this.workers.map((worker, index) => {
        const mine = seats.filter((seat) => seat.worker === index).map((seat) => [seat.guildId, results.get(seat.guildId) ?? {}] as const);
        return worker.request({ op: 'windowEnd', results: Object.fromEntries(mine) });
      }),
    );
    const farCpuAfter = await Promise.all(this.farEnds.map((far) => far.cpu()));
    const machineAfter = await machineCpu();
    const wallMs = performance.now() - wallStart;
    const input = ends.flatMap((end) => numbers(readArray(end, 'input')));
    const output = ends.flatMap((end) => numbers(readArray(end, 'output')));
    const sent = ends.flatMap((end) => numbers(readArray(end, 'sent')));
    const toPlay = ends.flatMap((end) => numbers(readArray(end, 'toPlay')));
    const workerShares = ends.map((end) => readNumber(end, 'cpuShare') ?? 0);
    const farEndCores = farCpuAfter.reduce((sum, after, index) => sum + after.cpuMs - farCpuBefore[index]!.cpuMs, 0) / wallMs;
    const machineCores =
      machineBefore && machineAfter
        ? ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * availableParallelism()
        : undefined;
    const step: CapacityStep = {
      conversations: count,
      workerShares,
      workerConversations: this.workers.map((_, index) => seats.filter((seat) => seat.worker === index).length),
      farEndCores,
      otherCores:
        machineCores === undefined
          ? undefined
          : Math.max(0, machineCores - farEndCores - workerShares.reduce((sum, share) => sum + share, 0)),
      input: latencyOf(input),
      output: latencyOf(output),
      sent: latencyOf(sent),
      toPlay: latencyOf(toPlay),
      loopDelayP99Ms: Math.max(...ends.map((end) => readNumber(end, 'loopDelayP99Ms') ?? 0)),
      loopDelayMaxMs: Math.max(...ends.map((end) => readNumber(end, 'loopDelayMaxMs') ?? 0)),
      farEndLoopDelayP99Ms: Math.max(...farCpuAfter.map((far) => far.loopDelayP99Ms)),
      waitShare: ends.some((end) => readNumber(end, 'waitShare') === undefined)
        ? undefined
        : Math.max(...ends.map((end) => readNumber(end, 'waitShare') ?? 0)),
      gcShare: Math.max(...ends.map((end) => readNumber(end, 'gcShare') ?? 0)),
      gcLongestMs: Math.max(...ends.map((end) => readNumber(end, 'gcLongestMs') ?? 0)),
      baselineShare: median(baselines),
      nativeFloorShare: floors.length > 0 ? median(floors) : undefined,
      pastBounds: [],
    };
    if (Math.max(...workerShares) > CPU_BOUND_SHARE) step.pastBounds.push(`CPU ${percent(Math.max(...workerShares))} of a core`);
    if (percentile(input, 99) > LATENCY_BOUND_MS) step.pastBounds.push(`in p99 ${step.input.p99.toFixed(1)} ms`);
    if (percentile(sent, 99) > LATENCY_BOUND_MS + SHARED_CLOCK_WAIT_MS) step.pastBounds.push(`out p99 ${step.sent.p99.toFixed(1)} ms`);
    if (input.length === 0 || sent.length === 0) step.pastBounds.push('no audio measured');
    return step;
  }

  /** A CPU profile of one window with `count` conversations talking, written to `path`; the worker's CPU over it, and its kernel part. */
  async profile(count: number, path: string): Promise<ProfiledWindow> {
    const worker = this.workers[0]!;
    await worker.request({ op: 'profileStart' });
    await this.#converse(this.seats.slice(0, count), WINDOW_SECONDS);
    const answer = await worker.request({ op: 'profileStop', path });
    const threads = readRecord(answer, 'threads') ?? {};
    return {
      cpuShare: readNumber(answer, 'cpuShare') ?? 0,
      systemShare: readNumber(answer, 'systemShare') ?? 0,
      threadShares: Object.entries(threads)
        .flatMap(([name, share]) => (typeof share === 'number' ? [{ name, share }] : []))
        .sort((a, b) => b.share - a.share),
    };
  }

  /** What the far ends found wrong with the bot's packets, over every conversation. */
  async problems(): Promise<BotPacketProblems> {
    const total: BotPacketProblems = { undecryptable: 0, undecodable: 0, unencrypted: 0, daveUndecryptable: 0 };
    for (const seat of this.seats) {
      const problems = readPacketProblems(
        await this.farEnds[seat.far]!.request({ op: 'botPacketProblems', guildId: seat.guildId, userId: USER_ID }),
      );
      total.undecryptable += problems.undecryptable;
      total.undecodable += problems.undecodable;
      total.unencrypted += problems.unencrypted;
      total.daveUndecryptable += problems.daveUndecryptable;
    }
    return total;
  }

  /** Every conversation leaves; the workers and far ends stay for the next ones. */
  async leaveAll(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.request({ op: 'leaveAll' })));
    this.seats.length = 0;
  }

  /** What the metered conversations' meters asked of the spending, over every worker. */
  async meterCounts(): Promise<{ meters: number; meteredMs: number }> {
    const counts = await Promise.all(this.workers.map((worker) => worker.request({ op: 'meterCounts' })));
    return {
      meters: counts.reduce((sum, count) => sum + (readNumber(count, 'meters') ?? 0), 0),
      meteredMs: counts.reduce((sum, count) => sum + (readNumber(count, 'meteredMs') ?? 0), 0),
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.request({ op: 'leaveAll' }).catch(() => undefined)));
    await Promise.all([...this.workers, ...this.farEnds].map((child) => child.stop()));
  }
}

/** Up the ladder until a step is past the bounds, then bisect between the last within them and that one. */
async function searchCapacity(rig: CapacityRig, log: (line: string) => void): Promise<CapacityStep[]> {
  const workers = rig.workers.length;
  const steps: CapacityStep[] = [];
  const run = async (perWorker: number) => {
    let step = await rig.measure(perWorker * workers);
    // Past the bounds while other processes took a core's share: measured again once, in case it was them.
    if (step.pastBounds.length > 0 && (step.otherCores ?? 0) >= QUIET_CORES) {
      log(`${stepLine(step)}  (others were busy: measured again)`);
      step = await rig.measure(perWorker * workers);
    }
    steps.push(step);
    log(stepLine(step));
    return step.pastBounds.length === 0;
  };
  let within = 0;
  let past: number | undefined;
  for (let rung = FIRST_RUNG[workers] ?? 0; past === undefined; rung++) {
    const top = LADDER[LADDER.length - 1]!;
    const perWorker = LADDER[rung] ?? top + (rung - LADDER.length + 1) * (top - LADDER[LADDER.length - 2]!);
    if (perWorker > MAX_PER_WORKER) break;
    if (await run(perWorker)) within = perWorker;
    else past = perWorker;
  }
  while (past !== undefined && past - within > RESOLUTION) {
    const middle = Math.round((within + past) / 2 / RESOLUTION) * RESOLUTION;
    if (middle <= within || middle >= past) break;
    if (await run(middle)) within = middle;
    else past = middle;
  }
  return steps;
}

/** Least squares of a worker's CPU share on the conversations it held, over the steps within the bounds. */
function fitCpu(steps: CapacityStep[]): { slope: number; intercept: number } | undefined {
  const points = steps
    .filter((step) => step.pastBounds.length === 0)
    .flatMap((step) => step.workerShares.map((share, index) => [step.workerConversations[index]!, share] as const));
  if (new Set(points.map(([x]) => x)).size < 2) return undefined;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  const slope = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0) / points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return { slope, intercept: meanY - slope * meanX };
}

async function capacityRun(
  workers: number,
  cores: number,
  log: (line: string) => void,
  profilePath?: string,
): Promise<{ run: CapacityRun; profiled: { conversations: number; window: ProfiledWindow } | undefined }> {
  const placement = placeProcesses(workers, cores);
  log(
    `voice capacity, ${workers} worker${workers > 1 ? 's' : ''}: ${placement.note}; a far-end process per ${CONVERSATIONS_PER_FAR_END} conversations`,
  );
  const rig = await CapacityRig.start(placement);
  try {
    const steps = await searchCapacity(rig, log);
    const capacity = Math.max(0, ...steps.filter((step) => step.pastBounds.length === 0).map((step) => step.conversations));
    let profiled: { conversations: number; window: ProfiledWindow } | undefined;
    // Near the limit: the most within the bounds (or the first step, if none was).
    const near = capacity > 0 ? capacity : steps[0]?.conversations;
    if (profilePath !== undefined && near !== undefined) {
      log(`  profiling one window with ${near} conversations`);
      profiled = { conversations: near, window: await rig.profile(near, profilePath) };
    }
    const fit = fitCpu(steps);
    return {
      run: {
        workers,
        codec: codecName(rig.workers[0]?.hello),
        placement,
        farEndProcesses: rig.farEnds.length,
        steps,
        capacity,
        marginalShare: fit?.slope,
        fixedShare: fit?.intercept,
        problems: await rig.problems(),
        notDave: rig.notDave,
      },
      profiled,
    };
  } finally {
    await rig.stop();
  }
}

/** The libraries' floor is measured at these two counts of conversations: its marginal CPU is the slope between them. */
const FLOOR_CONVERSATIONS = [10, 60] as const;

/**
 * What one more conversation costs a bot that does no audio work at all on @discordjs/voice and ws (the
 * libraries' floor of bench/naive-voice-bot.ts), on one worker placed as the bot's is: no bot's marginal CPU
 * can be below it plus its codec's.
 */
export async function benchmarkLibraryFloor(
  cores = availableParallelism(),
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<LibraryFloor> {
  log(`voice capacity, the libraries' floor on one worker: ${FLOOR_CONVERSATIONS.join(' and ')} conversations`);
  const rig = await CapacityRig.start(placeProcesses(1, cores), ['--floor']);
  try {
    const shares: number[] = [];
    const baselines: number[] = [];
    for (const count of FLOOR_CONVERSATIONS) {
      const step = await rig.measure(count);
      shares.push(step.workerShares[0] ?? 0);
      baselines.push(step.baselineShare);
      log(`  the libraries' floor, ${count} conversations: CPU ${percent(shares.at(-1)!)} of a core`);
    }
    const [fewer, more] = FLOOR_CONVERSATIONS;
    return {
      conversations: FLOOR_CONVERSATIONS,
      shares,
      marginalShare: (shares[1]! - shares[0]!) / (more - fewer),
      baselineShare: median(baselines),
    };
  } finally {
    await rig.stop();
  }
}

/** Conversations of the metered comparison: the issue's figure. */
export const METERED_CONVERSATIONS = 50;
/** Windows of each kind: the spread between windows of one kind is the noise a difference is judged against. */
const METERING_WINDOWS = 2;
/** A difference smaller than this share of the unmetered CPU is not measurable on any machine. */
const METERING_FLOOR = 0.02;

/**
 * One worker with METERED_CONVERSATIONS conversations, measured unmetered, then again with new, metered ones.
 * Part of the capacity benchmark, and on its own with `--only voice-metering`.
 */
export async function benchmarkVoiceMetering(
  cores = availableParallelism(),
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<MeteringComparison> {
  const placement = placeProcesses(1, cores);
  log(`voice metering: ${METERED_CONVERSATIONS} conversations on one worker, unmetered and then metered (${placement.note})`);
  const rig = await CapacityRig.start(placement);
  try {
    const shares = async (metered: boolean) => {
      await rig.ensure(METERED_CONVERSATIONS, metered);
      const measured: number[] = [];
      for (let window = 0; window < METERING_WINDOWS; window++) {
        const step = await rig.measure(METERED_CONVERSATIONS);
        log(`${stepLine(step)}  (${metered ? 'metered' : 'unmetered'})`);
        measured.push(step.workerShares[0] ?? 0);
      }
      return measured;
    };
    const unmetered = await shares(false);
    await rig.leaveAll();
    const metered = await shares(true);
    return { conversations: METERED_CONVERSATIONS, unmetered, metered, ...(await rig.meterCounts()) };
  } finally {
    await rig.stop();
  }
}

export async function benchmarkVoiceCapacity(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<VoiceCapacityReport> {
  const cores = availableParallelism();
  const profilePath = join(tmpdir(), `voice-capacity-${Date.now()}.cpuprofile`);
  const one = await capacityRun(1, cores, log, profilePath);
  const two = await capacityRun(2, cores, log);
  const profile = one.profiled && {
    ...one.profiled,
    path: profilePath,
    summary: summariseProfile(JSON.parse(await readFile(profilePath, 'utf8'))),
  };
  const metering = await benchmarkVoiceMetering(cores, log);
  const floor = await benchmarkLibraryFloor(cores, log);
  return { windowSeconds: WINDOW_SECONDS, cores, one: one.run, two: two.run, profile, metering, floor };
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
/** For the marginal CPU of one conversation, a fraction of a percent. */
const finePercent = (share: number) => `${(share * 100).toFixed(2)}%`;

/** The codec a worker said it runs, in words. */
export function codecName(hello: Record<string, unknown> | undefined): string {
  const codec = readString(hello, 'codec');
  return codec === 'native' || codec === 'opusscript' ? OPUS_CODEC_NAMES[codec] : (codec ?? 'not said');
}

/** A step in two lines: the bot's figures and the verdict, then the machine around it. */
export function stepLine(step: CapacityStep): string {
  const workers = step.workerShares.map((share, index) => `${percent(share)} (${step.workerConversations[index]})`).join(' + ');
  const ms = (latency: Latency) => `${latency.p50.toFixed(0)}/${latency.p99.toFixed(0)} ms`;
  return (
    `  ${String(step.conversations).padStart(4)} conversations: CPU ${workers} of a core; in p50/p99 ${ms(step.input)}; out p50/p99 ${ms(step.sent)} over ${step.sent.samples} answers` +
    ` (to play: ${ms(step.toPlay)}; noted at the voice server: ${ms(step.output)})  ${step.pastBounds.length === 0 ? 'within' : `PAST: ${step.pastBounds.join(', ')}`}\n` +
    `        far ends ${step.farEndCores.toFixed(2)} cores${step.otherCores === undefined ? '' : `, others ${step.otherCores.toFixed(2)} cores`};` +
    (step.waitShare === undefined ? '' : ` the bot waited for a CPU ${percent(step.waitShare)} of the time;`) +
    ` event-loop delay p99 ${step.loopDelayP99Ms.toFixed(0)} ms (max ${step.loopDelayMaxMs.toFixed(0)}), far ends ${step.farEndLoopDelayP99Ms.toFixed(0)} ms; gc ${percent(step.gcShare)} (longest ${step.gcLongestMs.toFixed(0)} ms)`
  );
}

function runLines(run: CapacityRun, cores: number): string[] {
  const baseline = median(run.steps.map((step) => step.baselineShare));
  const floors = run.steps.flatMap((step) => (step.nativeFloorShare === undefined ? [] : [step.nativeFloorShare]));
  const floor = floors.length > 0 ? median(floors) : undefined;
  const within = run.steps.filter((step) => step.pastBounds.length === 0);
  const last = within.find((step) => step.conversations === run.capacity);
  const firstPast = [...run.steps]
    .sort((a, b) => a.conversations - b.conversations)
    .find((step) => step.pastBounds.length > 0 && step.conversations > run.capacity);
  const perCore = run.capacity / run.workers;
  const atCpuBound = run.marginalShare && run.fixedShare !== undefined ? (CPU_BOUND_SHARE - run.fixedShare) / run.marginalShare : undefined;
  const problems = run.problems;
  const literal = Math.max(0, ...within.filter((step) => step.sent.p99 <= LATENCY_BOUND_MS).map((step) => step.conversations));
  return [
    `${run.workers} bot worker${run.workers > 1 ? 's' : ''} on ${run.codec} (${run.placement.note}; the far ends in ${run.farEndProcesses} process${run.farEndProcesses === 1 ? '' : 'es'} of their own, ${CONVERSATIONS_PER_FAR_END} conversations each at most)`,
    ...[...run.steps].sort((a, b) => a.conversations - b.conversations).map(stepLine),
    `  within the bounds: ${run.capacity} conversations in all, ${perCore.toFixed(1)} per core (target >= 50)` +
      (firstPast ? `; ${firstPast.conversations} is past them (${firstPast.pastBounds.join(', ')})` : '; no step went past them'),
    `  with out p99 held to ${LATENCY_BOUND_MS} ms itself (no allowance for the shared clock): ${literal} conversations`,
    last
      ? `  far ends at ${last.conversations} conversations: ${last.farEndCores.toFixed(2)} cores (of ${cores} on this machine)`
      : '  no step within the bounds',
    run.marginalShare !== undefined && run.fixedShare !== undefined
      ? `  marginal CPU of one more conversation ${finePercent(run.marginalShare)} of a core, ${(run.marginalShare / baseline).toFixed(2)}x the bare opusscript baseline of one conversation (${percent(baseline)}),` +
        ` over ${run.fixedShare >= 0 ? '' : 'an intercept of '}${percent(run.fixedShare)} fixed; at that slope 90% of a core holds ${atCpuBound?.toFixed(0)} per worker;\n` +
        (floor === undefined
          ? '    the native codec floor: not measured (no native build)'
          : `    ${(run.marginalShare / floor).toFixed(2)}x the native codec's floor (${percent(floor)}: native libopus decoding and encoding that audio at 24 kHz mono, the least any bot spends on it)`)
      : '  marginal CPU: too few steps within the bounds to fit',
    `  bot's frames at the far ends, every conversation: ${problems.unencrypted} in the clear, ${problems.daveUndecryptable} not DAVE-decryptable, ${problems.undecryptable} failing transport decryption, ${problems.undecodable} not Opus; ${run.notDave} calls not on DAVE (target 0 each)`,
  ];
}

/** The libraries' floor beside the bot's marginal CPU on one worker. */
function floorLines(floor: LibraryFloor, one?: CapacityRun): string[] {
  const shares = floor.shares.map((share, index) => `${percent(share)} at ${floor.conversations[index]}`).join(', ');
  const ofBaseline = (share: number) => `${(share / floor.baselineShare).toFixed(2)}x bare opusscript`;
  return [
    `the libraries' floor on one worker (no audio work: @discordjs/voice's receiver and player, ws, DAVE; bench/naive-voice-bot.ts): CPU ${shares} of a core;`,
    `  one more conversation costs it ${finePercent(floor.marginalShare)} of a core = ${ofBaseline(floor.marginalShare)} (${percent(floor.baselineShare)}), which no bot on these libraries saves` +
      (one?.marginalShare === undefined
        ? ''
        : `; the bot's ${finePercent(one.marginalShare)} is ${finePercent(one.marginalShare - floor.marginalShare)} over it = ${ofBaseline(one.marginalShare - floor.marginalShare)}`),
  ];
}

/** Metered against unmetered: the difference of the medians, judged against the spread between windows of one kind. */
function meteringLines(metering: MeteringComparison): string[] {
  const { unmetered, metered } = metering;
  const spread = (shares: number[]) => Math.max(...shares) - Math.min(...shares);
  const noise = Math.max(spread(unmetered), spread(metered), METERING_FLOOR * median(unmetered));
  const added = median(metered) - median(unmetered);
  const shares = (values: number[]) => values.map(percent).join(', ');
  return [
    `metered conversations (issue 24), ${metering.conversations} on one worker: CPU ${shares(unmetered)} of a core unmetered, ${shares(metered)} metered` +
      ` = ${(median(metered) / median(unmetered)).toFixed(3)}x (${added >= 0 ? '+' : ''}${percent(added)} of a core)`,
    `  ${Math.abs(added) <= noise ? 'nothing measurable' : 'MEASURABLE'}: windows of one kind differ by up to ${percent(noise)} of a core` +
      ` (or ${percent(METERING_FLOOR)} of the figure, whichever is more); the meters asked the spending ${metering.meters} times, for ${(metering.meteredMs / 1000).toFixed(0)} s of sessions`,
  ];
}

export function printLibraryFloorReport(floor: LibraryFloor): void {
  process.stdout.write(`${floorLines(floor).join('\n')}\n`);
}

export function printVoiceMeteringReport(metering: MeteringComparison): void {
  process.stdout.write(`${meteringLines(metering).join('\n')}\n`);
}

export function printVoiceCapacityReport(report: VoiceCapacityReport): void {
  const lines = [
    `voice capacity: concurrent two-way conversations (DAVE on), each in its own guild and channel, windows of ${report.windowSeconds} s;`,
    `  bounds: latency p99 in (packet -> append) <= ${LATENCY_BOUND_MS} ms, out (first delta -> audio packet sent) <= ${LATENCY_BOUND_MS} ms + ${SHARED_CLOCK_WAIT_MS} ms for @discordjs/voice's shared 20 ms clock,`,
    `  each worker's CPU <= ${percent(CPU_BOUND_SHARE)} of one core; ${report.cores} cores on this machine. Both ways are measured between the bot's own sockets; "noted at the voice server"`,
    `  adds the far end's own delays (not judged). "to play" is the bot's own part of out, the first audio to the player starting (the rest is the library's clock: the next`,
    `  20 ms tick, where it prepares the packet, and the tick after, where it sends it). "others": the rest of the machine's CPU over the window. Event-loop delays include the 20 ms sampling interval.`,
    ...runLines(report.one, report.cores),
    ...runLines(report.two, report.cores),
    `  two workers against one: ${(report.two.capacity / Math.max(1, report.one.capacity)).toFixed(2)}x the conversations`,
    ...floorLines(report.floor, report.one),
    ...meteringLines(report.metering),
  ];
  if (report.profile) {
    const { summary, window } = report.profile;
    const threads = window.threadShares.map((thread) => `${thread.name} ${percent(thread.share)}`).join(', ');
    lines.push(
      `profile of one worker with ${report.profile.conversations} conversations talking (${report.profile.path}):`,
      `  the worker's CPU over it ${percent(window.cpuShare)} of a core (kernel ${percent(window.systemShare)}); by thread: ${threads || 'not known here'}`,
      `  (v8:ProfEvntProc is the profiler itself; the profile samples the main thread: ${summary.busyMs.toFixed(0)} ms busy of ${summary.wallMs.toFixed(0)} ms)`,
      '  main thread self time by module:',
      ...summary.modules.map((module) => `  ${percent(module.share).padStart(6)}  ${module.name}`),
      '  top functions by self time:',
      ...summary.functions.map((fn) => `  ${percent(fn.share).padStart(6)}  ${fn.name}  (${fn.module}; ${fn.where})`),
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
