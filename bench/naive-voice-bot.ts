import { PassThrough } from 'node:stream';
import {
  AudioPlayerStatus,
  EndBehaviorType,
  StreamType,
  VoiceConnectionStatus,
  createAudioPlayer,
  createAudioResource,
  entersState,
  joinVoiceChannel,
} from '@discordjs/voice';
import { OpusScriptCodec } from 'opusscript-codec';
import WebSocket from 'ws';
import { websocketText } from '../src/lib/websocket-text.ts';
import { CHANNEL_ID, USER_ID, adapterFor, realtimeUrlOf, type FarEndControl } from './voice-rig.ts';

// Issue 38's baseline: the simplest voice bot these libraries allow, with no care for speed, on the same
// rig as the bot (bench/voice-rig.ts). @discordjs/voice's receiver hands it each speaker's Opus packets,
// decoded by an opusscript decoder at 24 kHz mono per speaker (OpusScriptCodec: opusscript's own decode()
// writes outside its buffers, the same libopus calls otherwise); every 60 ms it mixes what it has, or
// silence while nobody speaks, and appends it; each answer's deltas are upsampled to 48 kHz stereo and
// handed to @discordjs/voice's player, which encodes them (prism-media's encoder: opusscript, as the
// worker that runs it hides the native build). It declines websocket compression, as the bot does, so
// that what is compared is the audio path.

const APPEND_EVERY_MS = 60;
const SAMPLES_PER_APPEND = 24 * APPEND_EVERY_MS;

export interface NaiveConversation {
  readonly call: { daveProtocolVersion: number };
  leave(): void;
}

export async function openNaiveConversation(far: FarEndControl, guildId: string): Promise<NaiveConversation> {
  const connection = joinVoiceChannel({ guildId, channelId: CHANNEL_ID, adapterCreator: adapterFor(far, guildId), selfDeaf: false });
  const ws = new WebSocket(`${realtimeUrlOf(far, guildId)}/v1/realtime?model=svc-voice-latest`, {
    headers: { Authorization: 'Bearer bench-key-000000' },
    perMessageDeflate: false,
  });
  const heard = new Map<string, Int16Array[]>();
  connection.receiver.speaking.on('start', (userId) => {
    if (heard.has(userId)) return;
    const decoder = new OpusScriptCodec(24_000, 1, 'voip');
    const queue: Int16Array[] = [];
    heard.set(userId, queue);
    const packets = connection.receiver.subscribe(userId, { end: { behavior: EndBehaviorType.Manual } });
    packets.on('data', (packet: Buffer) => queue.push(decoder.decode(packet)));
  });
  const appends = setInterval(() => {
    const mix = new Int16Array(SAMPLES_PER_APPEND);
    for (const queue of heard.values()) {
      const pcm = Int16Array.from(queue.splice(0).flatMap((frame) => Array.from(frame)));
      for (let i = 0; i < Math.min(pcm.length, mix.length); i++) mix[i] = Math.max(-32768, Math.min(32767, mix[i]! + pcm[i]!));
    }
    const audio = Buffer.from(mix.buffer).toString('base64');
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio }));
  }, APPEND_EVERY_MS);
  const player = createAudioPlayer();
  connection.subscribe(player);
  let answer: PassThrough | undefined;
  ws.on('message', (data) => {
    const event = JSON.parse(websocketText(data)) as { type: string; delta?: string };
    if (event.type === 'response.output_audio.delta' && event.delta) {
      if (!answer) {
        answer = new PassThrough();
        player.play(createAudioResource(answer, { inputType: StreamType.Raw }));
      }
      const mono = new Int16Array(Uint8Array.from(Buffer.from(event.delta, 'base64')).buffer);
      const stereo48 = new Int16Array(mono.length * 4);
      for (let i = 0; i < mono.length; i++) stereo48.fill(mono[i]!, i * 4, i * 4 + 4);
      answer.write(Buffer.from(stereo48.buffer));
    } else if (event.type === 'response.output_audio.done') {
      answer?.end();
      answer = undefined;
    }
  });
  player.on(AudioPlayerStatus.Idle, () => {
    answer?.end();
    answer = undefined;
  });
  const leave = () => {
    clearInterval(appends);
    ws.close();
    player.stop(true);
    connection.destroy();
  };
  try {
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send(
      JSON.stringify({
        type: 'session.update',
        session: { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad' } } } },
      }),
    );
    await far.request({ op: 'userJoined', guildId, channelId: CHANNEL_ID, userId: USER_ID });
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    const settled = await far.request({ op: 'waitForBotConnection', guildId });
    return { call: { daveProtocolVersion: typeof settled.daveProtocolVersion === 'number' ? settled.daveProtocolVersion : 0 }, leave };
  } catch (error) {
    leave();
    throw error;
  }
}
