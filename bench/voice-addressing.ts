import { performance } from 'node:perf_hooks';
import { RealtimeClient } from '../src/gateway/realtime/client.ts';
import { addressesBot } from '../src/voice/addressing.ts';
import { defaultVoiceSettings } from '../src/settings/voice-settings.ts';
import { generateTone } from 'discord-standin';
import { startScriptedSession, startScriptedVoice, type ScriptedVoice } from '../test/support/scripted-voice.ts';
import { latencyOf, type Latency } from './voice-rig.ts';

// Issue 17: what answering only when named adds before an answer (target: response.create within
// 300 ms p95 of the transcript's arrival). The real VoiceSession on the real @discordjs/voice, joined
// to the Discord stand-in's voice server in this process, talks to a scripted realtime server that
// plays the gateway: a member speaks a short turn, the session ends it and commits, and the server
// answers the commit at once with the turn's transcript (a real gateway's transcription time is the
// gateway's, not the bot's). Two sessions, in the same run:
// - baseline: answering every turn (manual turns, response.create sent with the commit);
// - gated: two members in the channel, so the session answers only turns that name it, deciding on the
//   transcript; every turn names it, so every turn is answered.
// Per turn: the member's last packet -> response.create at the server (what the member waits for), and
// in the gated session transcript sent -> response.create received (the decision, both socket hops
// included). The added delay is the gated figure against the baseline's.

const BOT_ID = '100000000000000001';
const USER_ID = '400000000000000001';
const OTHER_USER_ID = '400000000000000002';
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';
const WAKE_WORD = 'video-voice-bot';
const TURN_MS = 300;

export interface AddressingModeReport {
  /** The member's last packet -> response.create at the server. */
  speechEndToAnswerMs: Latency;
  /** Gated only: the transcript sent -> response.create received. */
  transcriptToAnswerMs: Latency | undefined;
}

export interface VoiceAddressingReport {
  turns: number;
  baseline: AddressingModeReport;
  gated: AddressingModeReport;
}

/** Runs `turns` turns through a session; every turn's transcript names the bot. */
async function measureTurns(rig: ScriptedVoice, gated: boolean, turns: number): Promise<AddressingModeReport> {
  const { realtime, voice } = rig;
  const { session, socket } = await startScriptedSession(rig, {
    settings: { ...defaultVoiceSettings('svc'), turnDetection: 'discord' },
    connectRealtime: () =>
      RealtimeClient.connect({
        wsBaseUrl: realtime.url,
        apiKey: 'bench-key-0001',
        model: 'svc-voice-latest',
        session: { turnDetection: null },
        timeoutMs: 5000,
      }),
    onlyWhenNamed: gated,
    addressed: (transcript) => addressesBot(transcript, [WAKE_WORD]),
  });
  const speechEnd: number[] = [];
  const decision: number[] = [];
  const pcm = generateTone({ hz: 440, ms: TURN_MS, amplitude: 0.4 });
  try {
    for (let turn = 0; turn < turns; turn++) {
      const commits = socket.sent('input_audio_buffer.commit').length;
      const creates = socket.sent('response.create').length;
      await voice.speak(GUILD_ID, USER_ID, pcm);
      const spokeAt = performance.now();
      await realtime.waitFor(() => socket.sent('input_audio_buffer.commit').length > commits || undefined, 'the turn committed');
      const transcriptAt = performance.now();
      if (gated && socket.sent('response.create').length > creates)
        throw new Error('the session answered before hearing whether it was named');
      socket.send({
        type: 'conversation.item.input_audio_transcription.completed',
        item_id: `item_${turn}`,
        content_index: 0,
        transcript: `Hey ${WAKE_WORD}, tell me something number ${turn}`,
      });
      await realtime.waitFor(() => socket.sent('response.create').length > creates || undefined, 'response.create');
      const answeredAt = performance.now();
      speechEnd.push(answeredAt - spokeAt);
      if (gated) decision.push(answeredAt - transcriptAt);
      socket.send({ type: 'response.created', response: { id: `resp_${turn}`, status: 'in_progress' } });
      socket.send({ type: 'response.done', response: { id: `resp_${turn}`, status: 'completed', output: [] } });
    }
  } finally {
    session.stop();
  }
  return { speechEndToAnswerMs: latencyOf(speechEnd), transcriptToAnswerMs: gated ? latencyOf(decision) : undefined };
}

export async function benchmarkVoiceAddressing({ turns }: { turns: number }): Promise<VoiceAddressingReport> {
  const rig = await startScriptedVoice({ botId: BOT_ID, userId: USER_ID, guildId: GUILD_ID, channelId: CHANNEL_ID });
  try {
    // Warm up (JIT, codecs, sockets) on a few turns that are not counted.
    await measureTurns(rig, false, 3);
    const baseline = await measureTurns(rig, false, turns);
    rig.voice.userJoined(GUILD_ID, CHANNEL_ID, OTHER_USER_ID);
    const gated = await measureTurns(rig, true, turns);
    if (rig.connectionErrors.length > 0) throw new Error(`the voice connection failed: ${rig.connectionErrors[0]!.message}`);
    return { turns, baseline, gated };
  } finally {
    await rig.close();
  }
}

export function printVoiceAddressingReport({ turns, baseline, gated }: VoiceAddressingReport): void {
  const ms = (latency: Latency) => `p50 ${latency.p50.toFixed(1)} ms, p95 ${latency.p95.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms`;
  const decision = gated.transcriptToAnswerMs!;
  const lines = [
    `voice addressing: ${turns} turns of ${TURN_MS} ms per session, the real VoiceSession on the real @discordjs/voice (scripted gateway in this process)`,
    `  answering every turn     last packet -> response.create  ${ms(baseline.speechEndToAnswerMs)}`,
    `  answering when named     last packet -> response.create  ${ms(gated.speechEndToAnswerMs)}`,
    `                           transcript  -> response.create  ${ms(decision)} (target p95 <= 300 ms)`,
    `  added before an addressed answer: p95 ${(gated.speechEndToAnswerMs.p95 - baseline.speechEndToAnswerMs.p95).toFixed(1)} ms,` +
      ` ${(gated.speechEndToAnswerMs.p95 / baseline.speechEndToAnswerMs.p95).toFixed(2)}x the baseline's p95 (plus the gateway's transcription time, which is not the bot's)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
