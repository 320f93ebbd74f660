import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { VoiceConnectionStatus, entersState, joinVoiceChannel, type DiscordGatewayAdapterCreator } from '@discordjs/voice';
import OpusScript from 'opusscript';
import { RealtimeClient } from '../src/gateway/realtime/client.ts';
import { REALTIME_SESSION_MAX_MS } from '../src/gateway/spec.ts';
import { isRecord, readArray, readNumber, readString } from '../src/lib/json.ts';
import { silentLogger } from '../src/lib/log.ts';
import { parseServerEvent } from '../src/gateway/realtime/events.ts';
import { bytesToSamples, samplesToBytes } from '../src/voice/audio/format.ts';
import { Framer } from '../src/voice/audio/framer.ts';
import { SpeakerMixer } from '../src/voice/audio/mixer.ts';
import { OpusFrameDecoder, OpusFrameEncoder } from '../src/voice/audio/opus.ts';
import { VoiceSession } from '../src/voice/session.ts';
import { defaultVoiceSettings } from '../src/voice/settings.ts';
import { REALTIME_PCM } from '../test/support/discord/audio-format.ts';
import { generateTone, speechLikeTone } from '../test/support/discord/audio-tone.ts';
import { encodePcmToOpusPackets } from '../test/support/discord/opus-codec.ts';
import { trustCertificateInThisProcess } from '../test/support/discord/tls-trust.ts';
import { parseVoiceStateRequest } from '../test/support/discord/voice-adapter.ts';

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

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WINDOW_SECONDS = 20;
const WARM_UP_SECONDS = 4;
const RUNS = 3;
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';
const BOT_ID = '100000000000000001';
const USER_ID = '400000000000000001';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** CPU ms of bare opusscript decoding and encoding this audio at 48 kHz stereo, the way a naive bot would. */
function baselineCpuMs(packets: Buffer[], pcm48kStereo: Int16Array): number {
  const decoder = new OpusScript(48_000, 2, OpusScript.Application.AUDIO);
  const encoder = new OpusScript(48_000, 2, OpusScript.Application.AUDIO);
  const frame = 960 * 2;
  const start = process.cpuUsage();
  for (const packet of packets) decoder.decode(packet);
  for (let offset = 0; offset + frame <= pcm48kStereo.length; offset += frame) {
    encoder.encode(Buffer.from(pcm48kStereo.buffer, pcm48kStereo.byteOffset + offset * 2, frame * 2), 960);
  }
  const used = process.cpuUsage(start);
  decoder.delete();
  encoder.delete();
  return (used.user + used.system) / 1000;
}

/** 24 kHz mono answer audio as the far end sends it: delta events of 20 to 200 ms, as JSON text. */
function answerDeltas(seconds: number): string[] {
  const pcm = generateTone({ hz: 330, ms: seconds * 1000, amplitude: 0.4, format: REALTIME_PCM });
  const deltas: string[] = [];
  for (let offset = 0, index = 0; offset < pcm.length; index++) {
    const piece = pcm.subarray(offset, offset + (20 + (index % 10) * 20) * 24);
    deltas.push(JSON.stringify({ type: 'response.output_audio.delta', response_id: 'resp_1', item_id: 'item_1', content_index: 0, delta: samplesToBytes(piece).toString('base64') }));
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
    for (const frame of framer.push(bytesToSamples(event.audio))) appended += encoder.encode(frame).length;
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

interface FarEnds {
  wsUrl: string;
  endpoint: string;
  certPem: string;
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

async function startFarEnds(): Promise<FarEnds> {
  const child = spawn(join(ROOT, 'scripts', 'node'), [join(ROOT, 'bench', 'ws-sink.ts')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const pending = new Map<number, (answer: Record<string, unknown>) => void>();
  const first = new Promise<Record<string, unknown>>((resolve) => {
    lines.on('line', (line) => {
      const message: unknown = JSON.parse(line);
      if (!isRecord(message)) return;
      const id = readNumber(message, 'id');
      if (id === undefined) return resolve(message);
      pending.get(id)?.(message);
      pending.delete(id);
    });
  });
  const hello = await first;
  let nextId = 0;
  return {
    wsUrl: readString(hello, 'wsUrl') ?? '',
    endpoint: readString(hello, 'endpoint') ?? '',
    certPem: readString(hello, 'certPem') ?? '',
    request(message) {
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        pending.set(id, (answer) => (typeof answer.error === 'string' ? reject(new Error(answer.error)) : resolve(answer)));
        child.stdin.write(`${JSON.stringify({ id, ...message })}\n`);
      });
    },
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** The bot's gateway side of the voice handshake, answered by the far end's voice server. */
function adapterFor(far: FarEnds, guildId: string): DiscordGatewayAdapterCreator {
  const sessionId = randomBytes(16).toString('hex');
  return (methods) => ({
    sendPayload(payload) {
      const request = parseVoiceStateRequest(payload);
      if (!request) return false;
      const state = { guild_id: guildId, channel_id: request.channelId, user_id: BOT_ID, session_id: sessionId, deaf: false, mute: false, self_deaf: false, self_mute: false, self_video: false, suppress: false, request_to_speak_timestamp: null };
      if (request.channelId === null) {
        void far.request({ op: 'botLeft', guildId });
        methods.onVoiceStateUpdate(state);
        return true;
      }
      void far.request({ op: 'expectBot', guildId, session: { channelId: request.channelId, userId: BOT_ID, sessionId } }).then((answer) => {
        methods.onVoiceStateUpdate(state);
        methods.onVoiceServerUpdate({ token: readString(answer, 'token') ?? '', guild_id: guildId, endpoint: far.endpoint });
      });
      return true;
    },
    destroy() {},
  });
}

export interface VoiceBenchReport {
  windowSeconds: number;
  runs: number;
  /** Share of one core per run, and the baseline's share for the same audio measured beside it. */
  botShares: number[];
  baselineShares: number[];
  /** The audio work alone (no sockets, no waiting), per run, for the same audio. */
  audioWorkShares: number[];
  /** Waking as often as the conversation makes the bot wake, doing nothing else, per run. */
  wakeUpFloorShares: number[];
  inputLatencyMs: { p50: number; p99: number; samples: number };
  outputLatencyMs: { p50: number; p99: number; samples: number };
  userPackets: number;
  answeredSeconds: number;
}

export async function benchmarkVoice(): Promise<VoiceBenchReport> {
  const pcm48 = speechLikeTone(WINDOW_SECONDS);
  const packets = encodePcmToOpusPackets(pcm48);
  const deltas = answerDeltas(WINDOW_SECONDS);
  const far = await startFarEnds();
  const untrust = trustCertificateInThisProcess(far.certPem);
  const connection = joinVoiceChannel({ guildId: GUILD_ID, channelId: CHANNEL_ID, adapterCreator: adapterFor(far, GUILD_ID), selfDeaf: false });
  connection.on('error', (error) => process.stderr.write(`voice connection error: ${error.message}\n`));
  const firstDeltaAt = new Map<string, number>();
  const arrivals: number[] = [];
  const input: number[] = [];
  const session = new VoiceSession({
    guildId: GUILD_ID,
    connection,
    settings: defaultVoiceSettings('svc'),
    connectRealtime: async () => {
      const client = await RealtimeClient.connect({ wsBaseUrl: far.wsUrl, apiKey: 'bench-key-000000', model: 'svc-voice-latest', session: { turnDetection: { type: 'server_vad' } } });
      client.on('event', (event) => {
        if (event.type === 'response.output_audio.delta' && event.responseId !== undefined && !firstDeltaAt.has(event.responseId)) firstDeltaAt.set(event.responseId, Date.now());
      });
      return client;
    },
    log: silentLogger,
    sessionLimitMs: REALTIME_SESSION_MAX_MS,
    reconnect: { baseMs: 500, maxMs: 5000, maxAttempts: 3 },
    botUserId: BOT_ID,
    probe: {
      onPacket: (receivedAt) => arrivals.push(receivedAt),
      onAppend: (frames, sentAt) => {
        for (let frame = 0; frame < frames && arrivals.length > 0; frame++) input.push(sentAt - arrivals.shift()!);
      },
    },
  });
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  try {
    await far.request({ op: 'userJoined', guildId: GUILD_ID, channelId: CHANNEL_ID, userId: USER_ID });
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    await far.request({ op: 'waitForBotConnection', guildId: GUILD_ID });
    await session.start();
    // Warm up (JIT, WebAssembly, buffers), then windows of real-time audio with the baseline between them.
    await far.request({ op: 'converse', guildId: GUILD_ID, userId: USER_ID, seconds: WARM_UP_SECONDS, answerIndex: 0 });
    baselineCpuMs(packets.slice(0, 100), pcm48.subarray(0, 100 * 1920));
    audioWorkCpuMs(packets.slice(0, 100), deltas.slice(0, 20));
    const botShares: number[] = [];
    const baselineShares: number[] = [];
    const audioWorkShares: number[] = [];
    const wakeUpFloorShares: number[] = [];
    const output: number[] = [];
    let userPackets = 0;
    let answeredMs = 0;
    input.length = 0;
    for (let run = 0; run < RUNS; run++) {
      gc();
      baselineShares.push(baselineCpuMs(packets, pcm48) / (WINDOW_SECONDS * 1000));
      gc();
      audioWorkShares.push(audioWorkCpuMs(packets, deltas) / (WINDOW_SECONDS * 1000));
      wakeUpFloorShares.push(await wakeUpFloorShare(5));
      gc();
      arrivals.length = 0;
      const cpu = process.cpuUsage();
      const wallStart = performance.now();
      const result = await far.request({ op: 'converse', guildId: GUILD_ID, userId: USER_ID, seconds: WINDOW_SECONDS, answerIndex: (run + 1) * 1000 });
      const used = process.cpuUsage(cpu);
      botShares.push((used.user + used.system) / 1000 / (performance.now() - wallStart));
      userPackets += readNumber(result, 'userPackets') ?? 0;
      answeredMs += readNumber(result, 'answeredMs') ?? 0;
      for (const answer of readArray(result, 'answers') ?? []) {
        const deltaAt = firstDeltaAt.get(readString(answer, 'responseId') ?? '');
        const rtpAt = readNumber(answer, 'firstRtpAt');
        if (deltaAt !== undefined && rtpAt !== undefined) output.push(rtpAt - deltaAt);
      }
    }
    return {
      windowSeconds: WINDOW_SECONDS,
      runs: RUNS,
      botShares,
      baselineShares,
      audioWorkShares,
      wakeUpFloorShares,
      inputLatencyMs: { p50: percentile(input, 50), p99: percentile(input, 99), samples: input.length },
      outputLatencyMs: { p50: percentile(output, 50), p99: percentile(output, 99), samples: output.length },
      userPackets,
      answeredSeconds: answeredMs / 1000,
    };
  } finally {
    session.stop();
    connection.destroy();
    await far.stop();
    untrust();
  }
}

export function printVoiceReport(report: VoiceBenchReport): void {
  const percent = (share: number) => `${(share * 100).toFixed(2)}%`;
  const ratios = report.botShares.map((share, run) => share / report.baselineShares[run]!);
  const audioWorkRatios = report.audioWorkShares.map((share, run) => share / report.baselineShares[run]!);
  const lines = [
    `voice: ${report.runs} windows of ${report.windowSeconds} s of two-way audio in one session, on the real pipeline`,
    `  (${report.userPackets} user packets in, ${report.answeredSeconds.toFixed(1)} s of answers out; far ends in another process)`,
    `  bare opusscript      ${percent(median(report.baselineShares))} of one core for decode+encode at 48 kHz stereo (runs: ${report.baselineShares.map(percent).join(', ')})`,
    `  pipeline work        ${percent(median(report.audioWorkShares))} of one core (target <= 1.0%), ${median(audioWorkRatios).toFixed(2)}x the bare baseline (target <= 0.5)`,
    `                       (runs: ${report.audioWorkShares.map(percent).join(', ')}): decode, mix, base64 and the append event; parse the delta event, frame, encode`,
    `  whole bot process    ${percent(median(report.botShares))} of one core, ${median(ratios).toFixed(2)}x the baseline (runs: ${report.botShares.map(percent).join(', ')}): the pipeline, and`,
    `                       the voice library's UDP, encryption and 20 ms clocks, the websocket, the kernel`,
    `  wake-up floor        ${percent(median(report.wakeUpFloorShares))} of one core for 150 empty wake-ups a second on this machine (runs: ${report.wakeUpFloorShares.map(percent).join(', ')})`,
    `  in:  packet -> append        p50 ${report.inputLatencyMs.p50.toFixed(1)} ms, p99 ${report.inputLatencyMs.p99.toFixed(1)} ms over ${report.inputLatencyMs.samples} packets (target p99 <= 40 ms)`,
    `  out: first delta -> RTP out  p50 ${report.outputLatencyMs.p50.toFixed(1)} ms, p99 ${report.outputLatencyMs.p99.toFixed(1)} ms over ${report.outputLatencyMs.samples} answers (target p99 <= 40 ms)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
