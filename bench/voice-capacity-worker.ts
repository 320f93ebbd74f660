import { readFile, readdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { registerHooks } from 'node:module';
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { resolveLocale } from '../src/i18n/index.ts';
import { isRecord, readNumber, readRecord, readString } from '../src/lib/json.ts';
import { SpendChartDrawer } from '../src/settings/spend-chart-drawer.ts';
import { encodePcmToOpusPackets, speechLikeTone, trustCertificateInThisProcess } from 'discord-standin';
import { chooseOpusCodec, type OpusCodecKind } from '../src/voice/audio/opus-codec.ts';
import { CountingVoiceSpending, voiceMeterStarter } from './voice-meter.ts';
import { openLibraryFloorConversation, openNaiveConversation } from './naive-voice-bot.ts';
import { baselineCpuMs, gc, nativeFloorCpuMs, openConversation, type FarEndControl } from './voice-rig.ts';

// One bot worker of the voice capacity benchmark (bench/voice-capacity.ts): a process holding many
// conversations at once, each the bot's real VoiceSession on the real @discordjs/voice in its own guild,
// joined to far ends (bench/ws-sink.ts) that run in processes of their own. It measures itself: its CPU
// time over a window, the latencies its probes saw, the bare-opusscript baseline beside it, and on request
// a V8 CPU profile of a window (the profiler --cpu-prof runs, here started and stopped around the window).
//
// Driven over stdin/stdout, one JSON object per line, as the far ends are: it says it is ready, then each
// request `{id, op, ...}` gets `{id, ...}` back. What it asks of the far ends (the voice handshake) goes
// to the parent as `{relay, far, message}` and comes back as `{relayAnswer, answer}` or `{relayAnswer, error}`.
//
// `--codec opusscript` runs the bot on opusscript where the native build is there (OPUS_CODEC=opusscript);
// `--naive` holds issue 38's naive bot (bench/naive-voice-bot.ts) in place of the bot's conversations, with
// the native build hidden from prism-media so that its player encodes with opusscript whatever is installed;
// `--floor` holds the libraries' floor of the same file (no codec at all).

const { values: flags } = parseArgs({
  options: {
    naive: { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    codec: { type: 'string', default: 'auto' },
  },
});
if (flags.codec !== 'auto' && flags.codec !== 'opusscript') throw new Error(`--codec must be auto or opusscript, got ${flags.codec}`);
const codec: OpusCodecKind | 'naive' | 'none' = flags.naive ? 'naive' : flags.floor ? 'none' : chooseOpusCodec(flags.codec).codec;
if (flags.naive)
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === '@discordjs/opus')
        throw Object.assign(new Error(`${specifier} is hidden from the naive bot`), { code: 'MODULE_NOT_FOUND' });
      return nextResolve(specifier, context);
    },
  });

/** The one Opus packet the libraries' floor plays for every 20 ms of answer (speech, encoded once). */
let floorOpusPacket: Buffer | undefined;
const floorPacket = () => (floorOpusPacket ??= encodePcmToOpusPackets(speechLikeTone(1))[25]!);

const farEnds = new Map<number, FarEndControl>();
/** What the metered conversations' meters asked, and how to start one. */
const spending = new CountingVoiceSpending();
const startMeter = voiceMeterStarter(spending);
/** What the window and the teardown need of a conversation, the bot's or the naive bot's. */
interface HeldConversation {
  resetProbes(): void;
  takeInputLatencies(): number[];
  takePlayWaits(): number[];
  outputLatencies(converse: Record<string, unknown>): number[];
  sentLatencies(converse: Record<string, unknown>): number[];
  leave(): void;
}
const conversations = new Map<string, HeldConversation>();
const relays = new Map<number, { resolve(answer: Record<string, unknown>): void; reject(error: Error): void }>();
let nextRelay = 0;
let window:
  | {
      cpu: NodeJS.CpuUsage;
      wallStart: number;
      loopDelay: ReturnType<typeof monitorEventLoopDelay>;
      gc: GcWatch;
      runDelayNs: number | undefined;
    }
  | undefined;

/** Garbage collection pauses over a window: their total and the longest. */
interface GcWatch {
  totalMs: number;
  longestMs: number;
  observer: PerformanceObserver;
}

function watchGc(): GcWatch {
  const watch: GcWatch = {
    totalMs: 0,
    longestMs: 0,
    observer: new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        watch.totalMs += entry.duration;
        watch.longestMs = Math.max(watch.longestMs, entry.duration);
      }
    }),
  };
  watch.observer.observe({ entryTypes: ['gc'] });
  return watch;
}
let profiler: { session: Session; cpu: NodeJS.CpuUsage; threads: Map<string, number>; wallStart: number } | undefined;
/** The audio the baseline decodes and encodes, made once per length. */
const baselineAudio = new Map<number, { pcm: Int16Array; packets: Buffer[] }>();

/** Coarse, so that the monitor's own timer adds few wake-ups to the CPU measured; stalls longer than this show. */
const LOOP_DELAY_RESOLUTION_MS = 20;
/** Linux's clock ticks per second, in which /proc reports CPU time. */
const TICKS_PER_SECOND = 100;

/**
 * CPU ms of each of this process's threads so far, by thread name (the main thread as "main"), from
 * /proc; empty where there is none. The profiler samples only the main thread: this says what else runs.
 */
async function threadCpuMs(): Promise<Map<string, number>> {
  const byName = new Map<string, number>();
  try {
    for (const tid of await readdir('/proc/self/task')) {
      const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => undefined);
      if (stat === undefined) continue;
      const name = Number(tid) === process.pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
      byName.set(name, (byName.get(name) ?? 0) + ms);
    }
  } catch {
    // Not Linux: no per-thread figures.
  }
  return byName;
}

/** Nanoseconds the main thread has spent waiting for a CPU while it had work (Linux's schedstat), or undefined. */
async function mainThreadRunDelayNs(): Promise<number | undefined> {
  try {
    const fields = (await readFile(`/proc/self/task/${process.pid}/schedstat`, 'utf8')).trim().split(' ');
    return Number(fields[1]);
  } catch {
    return undefined;
  }
}

function threadShares(before: Map<string, number>, after: Map<string, number>, wallMs: number): Record<string, number> {
  const shares: Record<string, number> = {};
  for (const [name, ms] of after) {
    const share = (ms - (before.get(name) ?? 0)) / wallMs;
    if (share > 0) shares[name] = share;
  }
  return shares;
}

/** A month of a server's spend, as a manager's /usage draws it. */
const CHART_DAYS = Array.from({ length: 30 }, (_, index) => ({
  day: new Date(Date.UTC(2026, 10, 1 + index)).toISOString().slice(0, 10),
  videoUsd: (index % 7) * 1.5,
  voiceUsd: (index % 3) * 0.8,
}));
const charts = new SpendChartDrawer();

/**
 * This process's first chart, as the bot draws it (on a thread of its own) or as it drew it before (on the
 * event loop, its libraries loaded there); how long it took. Each way once per process: the first is the one that loads.
 */
async function drawChart(onLoop: boolean): Promise<number> {
  const started = performance.now();
  const locale = resolveLocale('en-US', undefined, 'member');
  if (onLoop) {
    const { renderSpendChart } = await import('../src/settings/usage-chart.ts');
    renderSpendChart(CHART_DAYS, { title: 'Spend', locale });
  } else {
    await charts.draw(CHART_DAYS, { title: 'Spend', locale });
  }
  return performance.now() - started;
}

function send(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function relayTo(far: number): FarEndControl['request'] {
  return (message) =>
    new Promise((resolve, reject) => {
      const relay = ++nextRelay;
      relays.set(relay, { resolve, reject });
      send({ relay, far, message });
    });
}

async function handle(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  switch (readString(request, 'op')) {
    case 'addFarEnd': {
      const far = readNumber(request, 'far') ?? 0;
      trustCertificateInThisProcess(readString(request, 'certPem') ?? '');
      farEnds.set(far, {
        endpoint: readString(request, 'endpoint') ?? '',
        wsUrl: readString(request, 'wsUrl') ?? '',
        request: relayTo(far),
      });
      return {};
    }
    case 'join': {
      const guildId = readString(request, 'guildId') ?? '';
      const far = farEnds.get(readNumber(request, 'far') ?? -1);
      if (!far) throw new Error('join: unknown far end');
      const metered = request.metered === true;
      if (flags.naive || flags.floor) {
        const baseline = flags.naive
          ? await openNaiveConversation(far, guildId)
          : await openLibraryFloorConversation(far, guildId, floorPacket());
        // The baselines have no probes: their latencies are not measured.
        const none = () => [];
        conversations.set(guildId, {
          resetProbes() {},
          takeInputLatencies: none,
          takePlayWaits: none,
          outputLatencies: none,
          sentLatencies: none,
          leave: () => baseline.leave(),
        });
        return baseline.call;
      }
      if (metered && !startMeter) throw new Error('join: a metered conversation, but no voice meter is wired (bench/voice-meter.ts)');
      const conversation = await openConversation(far, {
        guildId,
        dave: request.dave === true,
        watchSending: true,
        ...(metered && startMeter ? { meter: startMeter } : {}),
        onError: (error) => process.stderr.write(`voice connection error (guild ${guildId}): ${error.message}\n`),
      });
      conversations.set(guildId, conversation);
      return conversation.call;
    }
    case 'baseline': {
      // Measured while the conversations sit idle, as bench/voice.ts measures it between its windows.
      const seconds = readNumber(request, 'seconds') ?? 10;
      let audio = baselineAudio.get(seconds);
      if (!audio) {
        const pcm = speechLikeTone(seconds);
        audio = { pcm, packets: encodePcmToOpusPackets(pcm) };
        baselineAudio.set(seconds, audio);
        baselineCpuMs(audio.packets.slice(0, 100), audio.pcm.subarray(0, 100 * 1920));
        nativeFloorCpuMs(audio.packets.slice(0, 100), audio.pcm.subarray(0, 100 * 1920));
      }
      gc();
      const share = baselineCpuMs(audio.packets, audio.pcm) / (seconds * 1000);
      // The native codec's floor: the bot's own codec work on the same audio, natively (where it built).
      gc();
      const floor = nativeFloorCpuMs(audio.packets, audio.pcm);
      return { share, ...(floor === undefined ? {} : { nativeFloorShare: floor / (seconds * 1000) }) };
    }
    case 'windowStart': {
      gc();
      for (const conversation of conversations.values()) conversation.resetProbes();
      const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
      loopDelay.enable();
      window = {
        cpu: process.cpuUsage(),
        wallStart: performance.now(),
        loopDelay,
        gc: watchGc(),
        runDelayNs: await mainThreadRunDelayNs(),
      };
      return {};
    }
    case 'windowEnd': {
      if (!window) throw new Error('windowEnd without windowStart');
      const used = process.cpuUsage(window.cpu);
      const wallMs = performance.now() - window.wallStart;
      window.loopDelay.disable();
      const loopDelayP99Ms = window.loopDelay.percentile(99) / 1e6;
      const loopDelayMaxMs = window.loopDelay.max / 1e6;
      window.gc.observer.disconnect();
      const runDelayNs = await mainThreadRunDelayNs();
      // The share of the window the main thread spent runnable but waiting for a CPU another process held.
      const waitShare =
        runDelayNs === undefined || window.runDelayNs === undefined ? undefined : (runDelayNs - window.runDelayNs) / 1e6 / wallMs;
      const gc = { gcShare: window.gc.totalMs / wallMs, gcLongestMs: window.gc.longestMs };
      window = undefined;
      // The far ends' answers to `converse`, by guild: the output latencies are read against them.
      const results = readRecord(request, 'results') ?? {};
      const input: number[] = [];
      const output: number[] = [];
      const sent: number[] = [];
      const toPlay: number[] = [];
      for (const [guildId, conversation] of conversations) {
        input.push(...conversation.takeInputLatencies());
        toPlay.push(...conversation.takePlayWaits());
        const result = results[guildId];
        if (!isRecord(result)) continue;
        output.push(...conversation.outputLatencies(result));
        sent.push(...conversation.sentLatencies(result));
      }
      return {
        cpuShare: (used.user + used.system) / 1000 / wallMs,
        input,
        output,
        sent,
        toPlay,
        loopDelayP99Ms,
        loopDelayMaxMs,
        waitShare,
        ...gc,
      };
    }
    case 'profileStart': {
      const session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      profiler = { session, cpu: process.cpuUsage(), threads: await threadCpuMs(), wallStart: performance.now() };
      return {};
    }
    case 'profileStop': {
      if (!profiler) throw new Error('profileStop without profileStart');
      const used = process.cpuUsage(profiler.cpu);
      const wallMs = performance.now() - profiler.wallStart;
      const threads = threadShares(profiler.threads, await threadCpuMs(), wallMs);
      const { profile } = await profiler.session.post('Profiler.stop');
      profiler.session.disconnect();
      profiler = undefined;
      const path = readString(request, 'path') ?? 'voice-capacity.cpuprofile';
      await writeFile(path, JSON.stringify(profile));
      return { path, cpuShare: (used.user + used.system) / 1000 / wallMs, systemShare: used.system / 1000 / wallMs, threads };
    }
    case 'drawChart':
      return { drawnMs: await drawChart(request.onLoop === true) };
    case 'meterCounts':
      return { starts: spending.starts, meters: spending.meters, meteredMs: spending.meteredMs };
    case 'leaveAll':
      for (const conversation of conversations.values()) conversation.leave();
      conversations.clear();
      return {};
    default:
      throw new Error(`unknown op ${String(request.op)}`);
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const message: unknown = JSON.parse(line);
  if (!isRecord(message)) return;
  const relay = readNumber(message, 'relayAnswer');
  if (relay !== undefined) {
    const waiter = relays.get(relay);
    relays.delete(relay);
    if (typeof message.error === 'string') waiter?.reject(new Error(message.error));
    else waiter?.resolve(readRecord(message, 'answer') ?? {});
    return;
  }
  handle(message).then(
    (answer) => send({ id: message.id, ...answer }),
    (error: unknown) => send({ id: message.id, error: String(error) }),
  );
});

process.on('SIGTERM', () => {
  for (const conversation of conversations.values()) conversation.leave();
  process.exit(0);
});

send({ ready: true, codec });
