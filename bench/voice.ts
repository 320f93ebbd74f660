import { NetworkingStatusCode, VoiceConnectionStatus, type VoiceConnection } from '@discordjs/voice';
import { isRecord, readNumber, readString } from '../src/lib/json.ts';
import { parseServerEvent } from '../src/gateway/realtime/events.ts';
import { bytesToSamples, samplesToBytes } from '../src/voice/audio/format.ts';
import { Framer } from '../src/voice/audio/framer.ts';
import { SpeakerMixer } from '../src/voice/audio/mixer.ts';
import { OpusFrameDecoder, OpusFrameEncoder } from '../src/voice/audio/opus.ts';
import { OPUS_CODEC_NAMES, opusCodecInUse } from '../src/voice/audio/opus-codec.ts';
import {
  type BotPacketProblems,
  encodePcmToOpusPackets,
  generateTone,
  REALTIME_PCM,
  speechLikeTone,
  trustCertificateInThisProcess,
} from 'discord-standin';
import { codecName, startWorker } from './voice-capacity.ts';
import {
  USER_ID,
  baselineCpuMs,
  gc,
  latencyOf,
  median,
  openConversation,
  readPacketProblems,
  startFarEnds,
  type BotConversation,
  type FarEnds,
  type Latency,
  type LineChild,
} from './voice-rig.ts';

// Issue 6's benchmarks, on the real pipeline: the bot's VoiceSession in this process, joined with the
// real @discordjs/voice to a voice server and talking over a websocket to a realtime gateway, both in a
// child process (bench/ws-sink.ts) so that only the bot's work is counted. A user talks without pause
// (Opus over UDP, decoded, mixed, appended as base64 over the socket) while answers stream back as
// deltas of uneven sizes (parsed, Opus-encoded, sent as RTP), in real time.
//
// CPU: the process's CPU time over each window, as a share of one core and as a ratio to bare
// opusscript decode+encode of the same length of audio at 48 kHz stereo, measured between the windows;
// and the audio work alone (the same classes in a loop), which is what the pipeline's own code costs.
// Latency in: a user's packet arriving to the append that carries it. Latency out: an answer's first
// delta arriving to its first RTP packet at the voice server.
//
// Issue 15: the same conversation runs twice in one run, on a plain call and on a call end-to-end
// encrypted with DAVE (the user's frames are DAVE frames the bot's @discordjs/voice decrypts; what it
// plays it encrypts, and a member at the far end opens it), each with its own far ends and baselines;
// what DAVE adds is the difference, and the far end counts the bot's frames it could not open.

const WINDOW_SECONDS = 20;
const WARM_UP_SECONDS = 4;
const RUNS = 3;
const PLAIN_GUILD_ID = '200000000000000001';
const DAVE_GUILD_ID = '200000000000000002';

/** 24 kHz mono answer audio as the far end sends it: delta events of 20 to 200 ms, as JSON text. */
function answerDeltas(seconds: number): string[] {
  const pcm = generateTone({ hz: 330, ms: seconds * 1000, amplitude: 0.4, format: REALTIME_PCM });
  const deltas: string[] = [];
  for (let offset = 0, index = 0; offset < pcm.length; index++) {
    const piece = pcm.subarray(offset, offset + (20 + (index % 10) * 20) * 24);
    deltas.push(
      JSON.stringify({
        type: 'response.output_audio.delta',
        response_id: 'resp_1',
        item_id: 'item_1',
        content_index: 0,
        delta: samplesToBytes(piece).toString('base64'),
      }),
    );
    offset += piece.length;
  }
  return deltas;
}

/**
 * CPU ms of the audio work alone, in a loop with no sockets and no waiting: in, decode each packet at
 * 24 kHz mono, mix, base64 the append; out, parse each delta, cut 20 ms frames, Opus-encode them.
 */
function audioWorkCpuMs(packets: Buffer[], deltas: string[]): number {
  const decoder = new OpusFrameDecoder();
  const encoder = new OpusFrameEncoder();
  const mixer = new SpeakerMixer();
  const framer = new Framer();
  const start = process.cpuUsage();
  let appended = 0;
  for (const packet of packets) {
    const pcm = decoder.decode(packet);
    if (pcm) mixer.push('user', pcm, 0);
    const frame = mixer.nextFrame();
    if (frame) appended += `{"type":"input_audio_buffer.append","audio":"${samplesToBytes(frame).toString('base64')}"}`.length;
  }
  for (const text of deltas) {
    const event = parseServerEvent(text);
    if (event?.type !== 'response.output_audio.delta') continue;
    for (const frame of framer.push(bytesToSamples(event.audio.decode()))) appended += encoder.encode(frame).length;
  }
  const used = process.cpuUsage(start);
  decoder.delete();
  encoder.delete();
  if (appended === 0) throw new Error('the audio work produced nothing');
  return (used.user + used.system) / 1000;
}

/**
 * What merely being woken costs on this machine: a process that does nothing but wake as often as a
 * two-way conversation makes the bot wake (packets in and out at 50 a second each, the player's 20 ms
 * clock), for `seconds`. No pipeline can cost less than this here; a VM's wake-ups are far dearer than
 * bare metal's.
 */
async function wakeUpFloorShare(seconds: number): Promise<number> {
  const wakeUpsPerSecond = 150;
  const start = process.cpuUsage();
  const wallStart = performance.now();
  await new Promise<void>((resolve) => {
    let left = seconds * wakeUpsPerSecond;
    const timer = setInterval(() => {
      if (--left <= 0) {
        clearInterval(timer);
        resolve();
      }
    }, 1000 / wakeUpsPerSecond);
  });
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / (performance.now() - wallStart);
}

/** What the bot's DAVE session (davey) counts of its own work, cumulative. */
interface DaveCounts {
  encryptMicros: number;
  decryptMicros: number;
  encrypted: number;
  decrypted: number;
  decryptFailures: number;
  passedThrough: number;
}

/** davey's session: @discordjs/voice types it by the methods it calls, and these are davey's too. */
interface DaveyStatistics {
  getEncryptionStats(): unknown;
  getDecryptionStats(userId: string): unknown;
}

function hasStatistics(session: object): session is DaveyStatistics {
  return (
    'getEncryptionStats' in session &&
    typeof session.getEncryptionStats === 'function' &&
    'getDecryptionStats' in session &&
    typeof session.getDecryptionStats === 'function'
  );
}

/** The bot's DAVE counts for what it sent and what it heard of `userId`; undefined without a DAVE session. */
function daveCountsOf(connection: VoiceConnection, userId: string): DaveCounts | undefined {
  if (connection.state.status !== VoiceConnectionStatus.Ready) return undefined;
  const networking = connection.state.networking.state;
  const session = networking.code === NetworkingStatusCode.Ready ? networking.dave?.session : undefined;
  if (!session || !hasStatistics(session)) return undefined;
  const sent = session.getEncryptionStats();
  const heard = session.getDecryptionStats(userId);
  const read = (stats: unknown, key: string) => (isRecord(stats) ? (readNumber(stats, key) ?? 0) : 0);
  return {
    encryptMicros: read(sent, 'duration'),
    decryptMicros: read(heard, 'duration'),
    encrypted: read(sent, 'successes'),
    decrypted: read(heard, 'successes'),
    decryptFailures: read(heard, 'failures'),
    passedThrough: read(heard, 'passthroughs'),
  };
}

/** What one call measured: its windows, the baselines measured between them, its latencies. */
export interface VoiceCallReport {
  /** Whether the call ran DAVE end-to-end encryption (besides the transport encryption every call has). */
  dave: boolean;
  /** The call once it settled, as the voice server saw it: 1 for DAVE, 0 without; its MLS group's size. */
  daveProtocolVersion: number;
  daveGroupMembers: number;
  /** Share of one core per run, and the baseline's share for the same audio measured beside it. */
  botShares: number[];
  baselineShares: number[];
  /** The audio work alone (no sockets, no waiting), per run, for the same audio. */
  audioWorkShares: number[];
  /** Waking as often as the conversation makes the bot wake, doing nothing else, per run. */
  wakeUpFloorShares: number[];
  inputLatencyMs: Latency;
  outputLatencyMs: Latency;
  userPackets: number;
  /** Appends the bot sent over the windows (each a websocket message), for the user's packets. */
  appends: number;
  answeredSeconds: number;
  /** What the far end found wrong with the bot's packets over the whole call (all 0 when all is well). */
  botPacketProblems: BotPacketProblems;
  /** The bot's frames the simulated member opened end to end (0 without DAVE). */
  botFramesOpenedByMember: number;
  /** The user's frames not sent for want of a DAVE sender key (0 without DAVE). */
  userFramesWithoutKey: number;
  /**
   * The bot's DAVE work over the windows as davey times it (encrypting what it plays, decrypting what it
   * hears), as a share of one core per run, and its counts; undefined without DAVE.
   */
  daveWork: { shares: number[]; encrypted: number; decrypted: number; decryptFailures: number; passedThrough: number } | undefined;
}

export interface VoiceBenchReport {
  /** The Opus codec this process's calls ran. */
  codec: string;
  windowSeconds: number;
  runs: number;
  plain: VoiceCallReport;
  dave: VoiceCallReport;
  naive: NaiveComparison;
}

/** One side of the comparison with the naive bot: a process holding one conversation, and its CPU per window. */
interface NaiveSide {
  name: string;
  codec: string;
  shares: number[];
}

/** Issue 38: the bot and the naive bot, each a process of its own with one DAVE conversation, window by window. */
export interface NaiveComparison {
  naive: NaiveSide;
  /** The libraries' floor (bench/naive-voice-bot.ts): what any bot on @discordjs/voice and ws spends, with no audio work. */
  floor: NaiveSide;
  /** The bot on the codec installed, and (where the native build is there) on opusscript forced. */
  bots: NaiveSide[];
}

/** A worker process with one conversation on far ends of its own, and what its windows measured. */
interface Contender {
  side: NaiveSide;
  worker: LineChild;
  far: FarEnds;
  guildId: string;
}

/**
 * Issue 38's comparison: whole-process CPU of the same two-way conversation held by the bot and by the
 * naive bot (bench/naive-voice-bot.ts), each in a worker process of its own (bench/voice-capacity-worker.ts)
 * on far ends of its own, in windows taken in turn (the order reversed every other run) while the others
 * sit idle. The bot runs the codec installed and, where that is native libopus, opusscript forced too: what
 * the codec gives and what the rest of the bot does are told apart.
 */
async function compareWithNaive(): Promise<NaiveComparison> {
  const contenders: Contender[] = [];
  const stopAll = async () => {
    for (const contender of contenders) {
      await contender.worker.request({ op: 'leaveAll' }).catch(() => undefined);
      await contender.worker.stop();
      await contender.far.stop();
    }
  };
  try {
    const join = async (name: string, args: string[]) => {
      const far = await startFarEnds({ dave: true });
      const worker = await startWorker(undefined, [far], args).catch(async (error: unknown) => {
        await far.stop();
        throw error;
      });
      const guildId = String(600_000_000_000_000_000n + BigInt(contenders.length));
      const contender: Contender = { side: { name, codec: codecName(worker.hello), shares: [] }, worker, far, guildId };
      contenders.push(contender);
      await worker.request({ op: 'join', guildId, far: 0, dave: true });
      await far.request({ op: 'converse', guildId, userId: USER_ID, seconds: WARM_UP_SECONDS, answerIndex: 0 });
      return contender;
    };
    const naive = await join('naive bot', ['--naive']);
    const floor = await join("the libraries' floor", ['--floor']);
    const bot = await join('the bot', []);
    const bots = [bot];
    if (readString(bot.worker.hello, 'codec') === 'native') bots.push(await join('the bot, opusscript forced', ['--codec', 'opusscript']));
    for (let run = 0; run < RUNS; run++) {
      const order = [naive, floor, ...bots];
      for (const contender of run % 2 === 0 ? order : order.reverse()) {
        gc();
        await contender.worker.request({ op: 'windowStart' });
        await contender.far.request({
          op: 'converse',
          guildId: contender.guildId,
          userId: USER_ID,
          seconds: WINDOW_SECONDS,
          answerIndex: (run + 1) * 1000,
          preEncoded: true,
        });
        const end = await contender.worker.request({ op: 'windowEnd', results: {} });
        contender.side.shares.push(readNumber(end, 'cpuShare') ?? 0);
      }
    }
    return { naive: naive.side, floor: floor.side, bots: bots.map((contender) => contender.side) };
  } finally {
    await stopAll();
  }
}

/** The audio every call plays: the user's speech as PCM and as Opus packets, and answers as deltas. */
interface BenchAudio {
  pcm48: Int16Array;
  packets: Buffer[];
  deltas: string[];
}

/** A call the bot is in, on far ends of its own: it converses a window at a time, then reports. */
interface BenchCall {
  /** One window of real-time two-way audio, with the baselines measured just before it. */
  window(run: number): Promise<void>;
  report(): Promise<VoiceCallReport>;
  leave(): Promise<void>;
}

/**
 * The bot joins a call on fresh far ends, in its own guild (with DAVE it waits for the call to settle, so
 * that its session holds the group's keys before anyone talks), starts its session and warms up.
 */
async function joinCall({ dave }: { dave: boolean }, { pcm48, packets, deltas }: BenchAudio): Promise<BenchCall> {
  const guildId = dave ? DAVE_GUILD_ID : PLAIN_GUILD_ID;
  const far = await startFarEnds({ dave });
  const untrust = trustCertificateInThisProcess(far.certPem);
  const stopFarEnds = async () => {
    await far.stop();
    untrust();
  };
  let conversation: BotConversation;
  try {
    conversation = await openConversation(far, {
      guildId,
      dave,
      onError: (error) => process.stderr.write(`voice connection error (${dave ? 'DAVE' : 'plain'} call): ${error.message}\n`),
    });
  } catch (error) {
    await stopFarEnds();
    throw error;
  }
  const { connection, call } = conversation;
  const leave = async () => {
    conversation.leave();
    await stopFarEnds();
  };
  try {
    // Warm up (JIT, WebAssembly, buffers) before the measured windows.
    await far.request({ op: 'converse', guildId, userId: USER_ID, seconds: WARM_UP_SECONDS, answerIndex: 0 });
  } catch (error) {
    await leave();
    throw error;
  }
  baselineCpuMs(packets.slice(0, 100), pcm48.subarray(0, 100 * 1920));
  audioWorkCpuMs(packets.slice(0, 100), deltas.slice(0, 20));
  const botShares: number[] = [];
  const baselineShares: number[] = [];
  const audioWorkShares: number[] = [];
  const wakeUpFloorShares: number[] = [];
  const input: number[] = [];
  const output: number[] = [];
  let userPackets = 0;
  let appends = 0;
  let answeredMs = 0;
  conversation.resetProbes();
  const daveShares: number[] = [];
  const daveAtStart = daveCountsOf(connection, USER_ID);
  let daveAtEnd = daveAtStart;
  return {
    async window(run) {
      gc();
      baselineShares.push(baselineCpuMs(packets, pcm48) / (WINDOW_SECONDS * 1000));
      gc();
      audioWorkShares.push(audioWorkCpuMs(packets, deltas) / (WINDOW_SECONDS * 1000));
      wakeUpFloorShares.push(await wakeUpFloorShare(5));
      gc();
      conversation.resetProbes();
      const cpu = process.cpuUsage();
      const wallStart = performance.now();
      const daveBefore = daveCountsOf(connection, USER_ID);
      const result = await far.request({
        op: 'converse',
        guildId,
        userId: USER_ID,
        seconds: WINDOW_SECONDS,
        answerIndex: (run + 1) * 1000,
      });
      const used = process.cpuUsage(cpu);
      const wallMs = performance.now() - wallStart;
      botShares.push((used.user + used.system) / 1000 / wallMs);
      daveAtEnd = daveCountsOf(connection, USER_ID);
      if (daveBefore && daveAtEnd)
        daveShares.push(
          (daveAtEnd.encryptMicros - daveBefore.encryptMicros + daveAtEnd.decryptMicros - daveBefore.decryptMicros) / 1000 / wallMs,
        );
      userPackets += readNumber(result, 'userPackets') ?? 0;
      answeredMs += readNumber(result, 'answeredMs') ?? 0;
      input.push(...conversation.takeInputLatencies());
      appends += conversation.takeAppends();
      output.push(...conversation.outputLatencies(result));
    },
    async report() {
      const problems = await far.request({ op: 'botPacketProblems', guildId, userId: USER_ID });
      return {
        dave,
        daveProtocolVersion: call.daveProtocolVersion,
        daveGroupMembers: call.daveGroupMembers,
        botShares,
        baselineShares,
        audioWorkShares,
        wakeUpFloorShares,
        inputLatencyMs: latencyOf(input),
        outputLatencyMs: latencyOf(output),
        userPackets,
        appends,
        answeredSeconds: answeredMs / 1000,
        botPacketProblems: readPacketProblems(problems),
        botFramesOpenedByMember: readNumber(problems, 'botFramesOpenedByMember') ?? 0,
        userFramesWithoutKey: readNumber(problems, 'userFramesWithoutKey') ?? 0,
        daveWork: daveAtStart &&
          daveAtEnd && {
            shares: daveShares,
            encrypted: daveAtEnd.encrypted - daveAtStart.encrypted,
            decrypted: daveAtEnd.decrypted - daveAtStart.decrypted,
            decryptFailures: daveAtEnd.decryptFailures - daveAtStart.decryptFailures,
            passedThrough: daveAtEnd.passedThrough - daveAtStart.passedThrough,
          },
      };
    },
    leave,
  };
}

/**
 * The same conversation on a plain call and on a call end-to-end encrypted with DAVE, both joined at
 * once (the one not talking sits idle) and measured in alternating windows, ABBA (plain first in even
 * runs, DAVE first in odd ones), so that the machine's drift and the order weigh on both alike.
 */
async function measureCalls(audio: BenchAudio): Promise<{ plain: VoiceCallReport; dave: VoiceCallReport }> {
  const plainCall = await joinCall({ dave: false }, audio);
  try {
    const daveCall = await joinCall({ dave: true }, audio);
    try {
      for (let run = 0; run < RUNS; run++) {
        for (const call of run % 2 === 0 ? [plainCall, daveCall] : [daveCall, plainCall]) await call.window(run);
      }
      return { plain: await plainCall.report(), dave: await daveCall.report() };
    } finally {
      await daveCall.leave();
    }
  } finally {
    await plainCall.leave();
  }
}

/** The plain and DAVE calls in this process, then the comparison with the naive bot in processes of their own. */
export async function benchmarkVoice(): Promise<VoiceBenchReport> {
  const pcm48 = speechLikeTone(WINDOW_SECONDS);
  const audio: BenchAudio = { pcm48, packets: encodePcmToOpusPackets(pcm48), deltas: answerDeltas(WINDOW_SECONDS) };
  const calls = await measureCalls(audio);
  return {
    codec: OPUS_CODEC_NAMES[opusCodecInUse()],
    windowSeconds: WINDOW_SECONDS,
    runs: RUNS,
    ...calls,
    naive: await compareWithNaive(),
  };
}

const percent = (share: number) => `${(share * 100).toFixed(2)}%`;
const runsOf = (shares: number[]) => `runs: ${shares.map(percent).join(', ')}`;
const ratioToBaseline = (call: VoiceCallReport) => median(call.botShares.map((share, run) => share / call.baselineShares[run]!));

function callLines(call: VoiceCallReport): string[] {
  const audioWorkRatios = call.audioWorkShares.map((share, run) => share / call.baselineShares[run]!);
  const problems = call.botPacketProblems;
  return [
    call.dave
      ? `DAVE call (protocol ${call.daveProtocolVersion}, ${call.daveGroupMembers} members in its MLS group, settled before anyone talked)`
      : 'plain call (DAVE off: transport encryption only)',
    `  (${call.userPackets} user packets in, ${call.answeredSeconds.toFixed(1)} s of answers out; far ends in another process)`,
    `  bare opusscript      ${percent(median(call.baselineShares))} of one core for decode+encode at 48 kHz stereo (${runsOf(call.baselineShares)})`,
    `  pipeline work        ${percent(median(call.audioWorkShares))} of one core (target <= 1.0%), ${median(audioWorkRatios).toFixed(2)}x the bare baseline (target <= 0.5)`,
    `                       (${runsOf(call.audioWorkShares)}): decode, mix, base64 and the append event; parse the delta event, frame, encode`,
    `  whole bot process    ${percent(median(call.botShares))} of one core, ${ratioToBaseline(call).toFixed(2)}x the baseline (${runsOf(call.botShares)}): the pipeline, and`,
    `                       the voice library's UDP, encryption${call.dave ? ' (DAVE too)' : ''} and 20 ms clocks, the websocket, the kernel`,
    `  wake-up floor        ${percent(median(call.wakeUpFloorShares))} of one core for 150 empty wake-ups a second on this machine (${runsOf(call.wakeUpFloorShares)})`,
    `  in:  packet -> append        p50 ${call.inputLatencyMs.p50.toFixed(1)} ms, p99 ${call.inputLatencyMs.p99.toFixed(1)} ms over ${call.inputLatencyMs.samples} packets (target p99 <= 40 ms)`,
    `       ${call.appends} appends for them, ${(call.userPackets / call.appends).toFixed(2)} packets each (each a websocket message)`,
    `  out: first delta -> RTP out  p50 ${call.outputLatencyMs.p50.toFixed(1)} ms, p99 ${call.outputLatencyMs.p99.toFixed(1)} ms over ${call.outputLatencyMs.samples} answers (target p99 <= 40 ms)`,
    ...(call.daveWork
      ? [
          `  DAVE work alone      ${percent(median(call.daveWork.shares))} of one core as davey times it (${runsOf(call.daveWork.shares)}): ${call.daveWork.encrypted} frames encrypted,`,
          `                       ${call.daveWork.decrypted} of the user's decrypted, ${call.daveWork.decryptFailures} failed, ${call.daveWork.passedThrough} passed through in the clear (after the warm-up)`,
        ]
      : []),
    call.dave
      ? `  bot's frames at the far end, whole call: ${problems.unencrypted} in the clear, ${problems.daveUndecryptable} not DAVE-decryptable (target 0 each), ${problems.undecryptable} failing transport decryption, ${problems.undecodable} not Opus; ${call.botFramesOpenedByMember} opened end to end by the member (user frames unsent for want of a key: ${call.userFramesWithoutKey})`
      : `  bot's frames at the far end, whole call: ${problems.undecryptable} failing transport decryption, ${problems.undecodable} not Opus`,
  ];
}

function naiveLines({ naive, floor, bots }: NaiveComparison): string[] {
  const runs = (side: NaiveSide) => side.shares.map(percent).join(', ');
  // Windows of the same run are paired (adjacent in time): medians of the pairs' ratios.
  const toNaive = (side: NaiveSide) => median(side.shares.map((share, run) => share / naive.shares[run]!));
  const overFloor = (side: NaiveSide) => side.shares.map((share, run) => share - floor.shares[run]!);
  const naiveOverFloor = overFloor(naive);
  return [
    `against the naive bot (issue 38): one DAVE conversation of ${WINDOW_SECONDS} s per process, each process on far ends of its own, windows in turn; whole-process CPU`,
    `  naive bot: ${percent(median(naive.shares))} of one core (runs: ${runs(naive)}): @discordjs/voice's receiver and player, an opusscript decoder at`,
    `    24 kHz mono per speaker, appends every 60 ms (silence while nobody speaks), answers upsampled to 48 kHz stereo for the player to encode (opusscript)`,
    `  the libraries' floor: ${percent(median(floor.shares))} of one core = ${toNaive(floor).toFixed(2)}x the naive bot's (runs: ${runs(floor)}): the receiver, the player, the`,
    `    websocket and DAVE with no audio work at all (packets dropped, one prepared append per two of them, one Opus packet played per 20 ms of answer)`,
    ...bots.flatMap((bot) => {
      const own = overFloor(bot);
      return [
        `  ${bot.name}: ${percent(median(bot.shares))} of one core on ${bot.codec} = ${toNaive(bot).toFixed(2)}x the naive bot's (target <= 0.50; runs: ${runs(bot)})`,
        `    over the libraries' floor: ${percent(median(own))} against the naive bot's ${percent(median(naiveOverFloor))} = ${median(own.map((share, run) => share / naiveOverFloor[run]!)).toFixed(2)}x`,
      ];
    }),
  ];
}

export function printVoiceReport(report: VoiceBenchReport): void {
  const { plain, dave } = report;
  // Windows of the same run are paired (adjacent in time); the median of the pairs' differences.
  const added = plain.botShares.map((share, run) => dave.botShares[run]! - share);
  const lines = [
    `voice: ${report.runs} windows of ${report.windowSeconds} s of two-way audio per call, on the real pipeline: a plain call and a DAVE call,`,
    `  one session each, measured in alternating windows (the other call sits idle); Opus codec: ${report.codec}`,
    ...callLines(plain),
    ...callLines(dave),
    `DAVE adds ${percent(median(added))} of one core per session (target <= 0.3%), median of the paired windows' differences (${added.map(percent).join(', ')});`,
    `  whole bot process ${percent(median(plain.botShares))} -> ${percent(median(dave.botShares))}, ${ratioToBaseline(plain).toFixed(2)}x -> ${ratioToBaseline(dave).toFixed(2)}x its baseline;` +
      ` davey's own encrypt and decrypt ${dave.daveWork ? percent(median(dave.daveWork.shares)) : 'not measured'}`,
    `  latency p99 with DAVE: in ${dave.inputLatencyMs.p99.toFixed(1)} ms, out ${dave.outputLatencyMs.p99.toFixed(1)} ms (target <= 40 ms each; plain: in ${plain.inputLatencyMs.p99.toFixed(1)} ms, out ${plain.outputLatencyMs.p99.toFixed(1)} ms)`,
    ...naiveLines(report.naive),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
