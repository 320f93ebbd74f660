import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { VoiceConnectionStatus, entersState, joinVoiceChannel } from '@discordjs/voice';
import OpusScript from 'opusscript';
import { RealtimeClient } from '../src/gateway/realtime/client.ts';
import { parseServerEvent } from '../src/gateway/realtime/events.ts';
import { silentLogger } from '../src/log.ts';
import { FRAME_SAMPLES, bytesToSamples, samplesToBytes } from '../src/voice/audio/format.ts';
import { SpeakerMixer } from '../src/voice/audio/mixer.ts';
import { OpusFrameDecoder } from '../src/voice/audio/opus.ts';
import { InputPump } from '../src/voice/input-pump.ts';
import { SpeechPlayer } from '../src/voice/speech-player.ts';
import { REALTIME_PCM } from '../test/support/discord/audio-format.ts';
import { generateTone } from '../test/support/discord/audio-tone.ts';
import { encodePcmToOpusPackets } from '../test/support/discord/opus-codec.ts';
import { trustCertificateInThisProcess } from '../test/support/discord/tls-trust.ts';
import { InProcessVoiceGateway } from '../test/support/discord/voice-adapter.ts';
import { startVoiceServer } from '../test/support/discord/voice-server.ts';

// Issue 6's benchmarks: CPU per second of continuous two-way audio in one session, against bare
// opusscript decode+encode of the same audio at 48 kHz stereo measured in the same run; and the latency
// the bot adds in each direction.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AUDIO_SECONDS = 60;
const RUNS = 5;
const DELTA_MS = 100;

function cpuMs(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function cpuMsAsync(work: () => Promise<void>): Promise<number> {
  const start = process.cpuUsage();
  await work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Speech-like test audio: a tone with a little noise, so Opus works as hard as on a voice. */
function speechLike48kStereo(seconds: number): Int16Array {
  const tone = generateTone({ hz: 220, ms: seconds * 1000, amplitude: 0.4 });
  let seed = 1;
  for (let i = 0; i < tone.length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    tone[i] = Math.max(-32768, Math.min(32767, tone[i]! + ((seed / 2 ** 31) * 2 - 1) * 2000));
  }
  return tone;
}

function baselineCpuMs(packets: Buffer[], pcm48kStereo: Int16Array): number {
  const decoder = new OpusScript(48_000, 2, OpusScript.Application.AUDIO);
  const encoder = new OpusScript(48_000, 2, OpusScript.Application.AUDIO);
  const frame = 960 * 2;
  const used = cpuMs(() => {
    for (const packet of packets) decoder.decode(packet);
    for (let offset = 0; offset + frame <= pcm48kStereo.length; offset += frame) {
      encoder.encode(Buffer.from(pcm48kStereo.buffer, pcm48kStereo.byteOffset + offset * 2, frame * 2), 960);
    }
  });
  decoder.delete();
  encoder.delete();
  return used;
}

async function startSink(): Promise<{ wsUrl: string; stop(): Promise<void> }> {
  const child = spawn(join(ROOT, 'scripts', 'node'), [join(ROOT, 'bench', 'ws-sink.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
  const { wsUrl } = JSON.parse(line) as { wsUrl: string };
  return {
    wsUrl,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** The realtime deltas the gateway would send for `seconds` of answer, as the JSON text on the wire. */
function answerDeltas(seconds: number): string[] {
  const pcm = generateTone({ hz: 330, ms: seconds * 1000, amplitude: 0.4, format: REALTIME_PCM });
  const perDelta = (REALTIME_PCM.sampleRate * DELTA_MS) / 1000;
  const deltas: string[] = [];
  for (let offset = 0; offset < pcm.length; offset += perDelta) {
    const piece = pcm.subarray(offset, offset + perDelta);
    deltas.push(JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r', item_id: `item_${Math.floor(offset / (perDelta * 50))}`, content_index: 0, delta: samplesToBytes(piece).toString('base64') }));
  }
  return deltas;
}

export interface VoiceBenchReport {
  audioSeconds: number;
  botCpuMs: number;
  baselineCpuMs: number;
  inputLatencyMs: { p50: number; p99: number };
  outputLatencyMs: { p50: number; p99: number };
}

async function measureCpu(packets: Buffer[], deltas: string[], wsUrl: string): Promise<number> {
  const client = await RealtimeClient.connect({ wsBaseUrl: wsUrl, apiKey: 'bench-key-000000', model: 'svc-voice-latest', session: { turnDetection: { type: 'server_vad' } } });
  const mixer = new SpeakerMixer();
  const pump = new InputPump({ mixer, log: silentLogger, silenceTailMs: 0 });
  pump.sink = client;
  const decoder = new OpusFrameDecoder();
  const player = new SpeechPlayer({ prebufferMs: 60, log: silentLogger });
  const deltasPerPacket = deltas.length / packets.length;
  const used = await cpuMsAsync(async () => {
    // Each 20 ms: one packet in (decode, mix, append: base64, JSON, socket) and a fifth of a 100 ms
    // delta out (parse, base64, frame, Opus encode).
    for (let index = 0; index < packets.length; index++) {
      const pcm = decoder.decode(packets[index]!);
      if (pcm) mixer.push('speaker', pcm);
      pump.tick();
      const due = Math.floor((index + 1) * deltasPerPacket);
      for (let delta = Math.floor(index * deltasPerPacket); delta < due; delta++) {
        const event = parseServerEvent(deltas[delta]!);
        if (event?.type === 'response.output_audio.delta') player.append(event.itemId ?? event.responseId ?? 'answer', bytesToSamples(event.audio));
      }
      // Let the socket write what was queued, as the event loop would between 20 ms ticks.
      if (index % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
    }
  });
  player.destroy();
  decoder.delete();
  client.close();
  return used;
}

/** From a user's packet arriving to the append that carries its audio, with the pump on its real timer. */
async function measureInputLatency(packets: Buffer[]): Promise<number[]> {
  const mixer = new SpeakerMixer();
  const arrivals: number[] = [];
  const latencies: number[] = [];
  const pump = new InputPump({
    mixer,
    log: silentLogger,
    silenceTailMs: 0,
    onAppend: (frames, sentAt) => {
      for (let frame = 0; frame < frames && arrivals.length > 0; frame++) latencies.push(sentAt - arrivals.shift()!);
    },
  });
  pump.sink = { bufferedAmount: 0, appendAudio: () => {} };
  const decoder = new OpusFrameDecoder();
  pump.start();
  const start = performance.now();
  for (let index = 0; index < packets.length; index++) {
    // Packets arrive on their own 20 ms clock, with network jitter of up to 5 ms.
    const due = start + index * 20 + Math.random() * 5;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
    const arrivedAt = performance.now();
    const pcm = decoder.decode(packets[index]!);
    if (!pcm) continue;
    arrivals.push(arrivedAt);
    mixer.push('speaker', pcm);
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  pump.stop();
  decoder.delete();
  return latencies;
}

/** From the first audio delta of an answer to the first RTP packet at (the stand-in of) Discord. */
async function measureOutputLatency(responses: number): Promise<number[]> {
  const server = await startVoiceServer();
  const untrust = trustCertificateInThisProcess(server.certPem);
  const gateway = new InProcessVoiceGateway(server, '100000000000000001');
  const connection = joinVoiceChannel({ guildId: '200000000000000001', channelId: '300000000000000001', adapterCreator: gateway.adapterCreator('200000000000000001'), selfDeaf: false });
  const latencies: number[] = [];
  try {
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    await server.waitForBotConnection('200000000000000001');
    const player = new SpeechPlayer({ prebufferMs: 60, log: silentLogger });
    connection.subscribe(player.player);
    const answer = generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM });
    const perDelta = (REALTIME_PCM.sampleRate * DELTA_MS) / 1000;
    for (let response = 0; response < responses; response++) {
      server.clearBotAudio('200000000000000001');
      const itemId = `item_${response}`;
      const sentAt = performance.timeOrigin + performance.now();
      for (let offset = 0; offset < answer.length; offset += perDelta) player.append(itemId, answer.subarray(offset, offset + perDelta));
      player.end(itemId);
      const frames = await server.waitForBotAudio('200000000000000001', (received) => received.length > 0);
      latencies.push(frames[0]!.receivedAt - sentAt);
      await server.waitForBotAudio('200000000000000001', (received) => received.length >= answer.length / FRAME_SAMPLES);
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 40));
    }
    player.destroy();
  } finally {
    connection.destroy();
    await server.close();
    untrust();
  }
  return latencies;
}

export async function benchmarkVoice(): Promise<VoiceBenchReport> {
  const pcm48 = speechLike48kStereo(AUDIO_SECONDS);
  const packets = encodePcmToOpusPackets(pcm48);
  const deltas = answerDeltas(AUDIO_SECONDS);
  const sink = await startSink();
  try {
    // Warm up both (JIT, WebAssembly), then take the median of a few runs measured side by side.
    baselineCpuMs(packets.slice(0, 100), pcm48.subarray(0, 100 * 1920));
    await measureCpu(packets.slice(0, 100), deltas.slice(0, 20), sink.wsUrl);
    const baseline: number[] = [];
    const bot: number[] = [];
    const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
    for (let run = 0; run < RUNS; run++) {
      gc();
      baseline.push(baselineCpuMs(packets, pcm48));
      gc();
      bot.push(await measureCpu(packets, deltas, sink.wsUrl));
    }
    const input = await measureInputLatency(packets.slice(0, 500));
    const output = await measureOutputLatency(30);
    return {
      audioSeconds: AUDIO_SECONDS,
      botCpuMs: median(bot),
      baselineCpuMs: median(baseline),
      inputLatencyMs: { p50: percentile(input, 50), p99: percentile(input, 99) },
      outputLatencyMs: { p50: percentile(output, 50), p99: percentile(output, 99) },
    };
  } finally {
    await sink.stop();
  }
}

export function printVoiceReport(report: VoiceBenchReport): void {
  const share = (ms: number) => (ms / (report.audioSeconds * 1000)) * 100;
  const lines = [
    `voice: ${report.audioSeconds} s of continuous two-way audio in one session`,
    `  bot pipeline CPU     ${share(report.botCpuMs).toFixed(2)}% of one core (target <= 1.0%)`,
    `  bare opusscript      ${share(report.baselineCpuMs).toFixed(2)}% of one core for decode+encode at 48 kHz stereo (same run)`,
    `  ratio                ${(report.botCpuMs / report.baselineCpuMs).toFixed(2)}x the bare baseline (target <= 0.5)`,
    `  in:  last packet -> append   p50 ${report.inputLatencyMs.p50.toFixed(1)} ms, p99 ${report.inputLatencyMs.p99.toFixed(1)} ms (target p99 <= 40 ms)`,
    `  out: first delta -> RTP out  p50 ${report.outputLatencyMs.p50.toFixed(1)} ms, p99 ${report.outputLatencyMs.p99.toFixed(1)} ms (target p99 <= 40 ms)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
