import { PassThrough, Readable } from 'node:stream';
import {
  AudioPlayerStatus,
  AudioResource,
  EndBehaviorType,
  StreamType,
  VoiceConnectionStatus,
  createAudioPlayer,
  createAudioResource,
  entersState,
  joinVoiceChannel,
  type AudioPlayer,
  type VoiceConnection,
} from '@discordjs/voice';
import { OpusScriptCodec } from 'opusscript-codec';
import WebSocket from 'ws';
import { websocketText } from '../src/lib/websocket-text.ts';
import { CHANNEL_ID, USER_ID, adapterFor, realtimeUrlOf, type FarEndControl } from './voice-rig.ts';

// Issue 38's baselines, on the same rig as the bot (bench/voice-rig.ts), each joined the same way
// (`joinBareBot`): @discordjs/voice's receiver and player, a websocket to the realtime gateway that
// declines compression as the bot does, so that what is compared is the audio path.
//
// The naive bot is the simplest voice bot these libraries allow, with no care for speed: the receiver
// hands it each speaker's Opus packets, decoded by an opusscript decoder at 24 kHz mono per speaker
// (OpusScriptCodec: opusscript's own decode() writes outside its buffers, the same libopus calls
// otherwise); every 60 ms it mixes what it has, or silence while nobody speaks, and appends it; each
// answer's deltas are upsampled to 48 kHz stereo and handed to the player, which encodes them
// (prism-media's encoder: opusscript, as the worker that runs it hides the native build).
//
// The libraries' floor does what any bot on these libraries must and nothing else: it is subscribed to
// the speaker (each packet received, decrypted and handed over, then dropped), parses every event the
// gateway sends, sends an append for every two packets as the bot does (one prepared message, no audio work), and
// plays one Opus packet, encoded once, per 20 ms of each answer. No codec, no mixing, no base64: what it
// costs no bot can save.

const NAIVE_APPEND_EVERY_MS = 60;
const NAIVE_SAMPLES_PER_APPEND = 24 * NAIVE_APPEND_EVERY_MS;
/** The bot's appends: two 20 ms frames each, sent as the second packet arrives (src/voice/input-pump.ts). */
const FRAMES_PER_APPEND = 2;
/** 20 ms of the model's 24 kHz mono 16-bit audio. */
const BYTES_PER_FRAME = 960;

export interface BareConversation {
  readonly call: { daveProtocolVersion: number };
  leave(): void;
}

interface BareBot {
  connection: VoiceConnection;
  player: AudioPlayer;
  ws: WebSocket;
  /** Added to what leaving stops. */
  onLeave: (stop: () => void) => void;
  /** Once the call is ready and the session configured. */
  joined: Promise<BareConversation>;
}

/** Joins the call and opens the realtime session, as both baselines do; their audio work is theirs. */
function joinBareBot(far: FarEndControl, guildId: string): BareBot {
  const connection = joinVoiceChannel({ guildId, channelId: CHANNEL_ID, adapterCreator: adapterFor(far, guildId), selfDeaf: false });
  const ws = new WebSocket(`${realtimeUrlOf(far, guildId)}/v1/realtime?model=svc-voice-latest`, {
    headers: { Authorization: 'Bearer bench-key-000000' },
    perMessageDeflate: false,
  });
  const player = createAudioPlayer();
  connection.subscribe(player);
  const stops: (() => void)[] = [];
  const leave = () => {
    for (const stop of stops) stop();
    ws.close();
    player.stop(true);
    connection.destroy();
  };
  const joined = (async () => {
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
  })();
  return { connection, player, ws, onLeave: (stop) => stops.push(stop), joined };
}

export async function openNaiveConversation(far: FarEndControl, guildId: string): Promise<BareConversation> {
  const { connection, player, ws, onLeave, joined } = joinBareBot(far, guildId);
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
    const mix = new Int16Array(NAIVE_SAMPLES_PER_APPEND);
    for (const queue of heard.values()) {
      const pcm = Int16Array.from(queue.splice(0).flatMap((frame) => Array.from(frame)));
      for (let i = 0; i < Math.min(pcm.length, mix.length); i++) mix[i] = Math.max(-32768, Math.min(32767, mix[i]! + pcm[i]!));
    }
    const audio = Buffer.from(mix.buffer).toString('base64');
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio }));
  }, NAIVE_APPEND_EVERY_MS);
  onLeave(() => clearInterval(appends));
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
  return joined;
}

/** `packet` (one 20 ms Opus packet, encoded once by the caller) stands for every 20 ms of each answer. */
export async function openLibraryFloorConversation(far: FarEndControl, guildId: string, packet: Buffer): Promise<BareConversation> {
  const { connection, player, ws, joined } = joinBareBot(far, guildId);
  const append = JSON.stringify({
    type: 'input_audio_buffer.append',
    audio: Buffer.alloc(FRAMES_PER_APPEND * BYTES_PER_FRAME).toString('base64'),
  });
  let subscribed = false;
  let received = 0;
  connection.receiver.speaking.on('start', (userId) => {
    if (subscribed) return;
    subscribed = true;
    connection.receiver.subscribe(userId, { end: { behavior: EndBehaviorType.Manual } }).on('data', () => {
      if (++received % FRAMES_PER_APPEND === 0 && ws.readyState === WebSocket.OPEN) ws.send(append);
    });
  });
  let answer: Readable | undefined;
  ws.on('message', (data) => {
    const event = JSON.parse(websocketText(data)) as { type: string; delta?: string };
    if (event.type === 'response.output_audio.delta' && event.delta) {
      if (!answer) {
        answer = new Readable({ objectMode: true, read() {} });
        player.play(new AudioResource([], [answer], undefined, 5));
      }
      const frames = Math.round((event.delta.length * 3) / 4 / BYTES_PER_FRAME);
      for (let frame = 0; frame < frames; frame++) answer.push(packet);
    } else if (event.type === 'response.output_audio.done') {
      answer?.push(null);
      answer = undefined;
    }
  });
  player.on(AudioPlayerStatus.Idle, () => {
    answer?.push(null);
    answer = undefined;
  });
  return joined;
}
