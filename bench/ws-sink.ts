import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { WebSocketServer, type WebSocket } from 'ws';
import { isRecord, readNumber, readRecord, readString } from '../src/lib/json.ts';
import { websocketText } from '../src/lib/websocket-text.ts';
import { samplesToBytes } from '../src/voice/audio/format.ts';
import {
  type BotAudioFrame,
  type BotPacketProblems,
  encodePcmToOpusPackets,
  generateTone,
  OPUS_SILENCE_FRAME,
  REALTIME_PCM,
  speechLikeTone,
  startVoiceServer,
} from 'discord-standin';

// The far ends of the voice benchmark, in their own process so that their work is not counted as the
// bot's: the gateway's realtime socket (it configures the session, swallows the bot's audio and streams
// spoken answers back in real time, in deltas of uneven sizes) and Discord's voice server (a user who
// talks without pause, and a listener that records when each of the bot's RTP packets arrives).
// `--dave` (the default, as on Discord) runs the voice channel end-to-end encrypted with DAVE: the user's
// frames are DAVE frames and a member opens each frame the bot plays; `--no-dave` runs it without.
//
// It hosts any number of conversations, each in its own guild: the bot's realtime socket names its guild
// in its URL (`<wsUrl>/guild/<id>/...`). Driven over stdin/stdout, one JSON object per line: it first says
// where it listens; then each request `{id, op, ...}` gets `{id, ...}` back.

const { values: flags } = parseArgs({ options: { dave: { type: 'boolean', default: true } }, allowNegative: true });
const voice = await startVoiceServer({ speakingLeadMs: 40, dave: flags.dave });
// It offers compression, as a gateway may: the bot should decline it (zlib on every append is costly).
const realtime = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: true });
await new Promise((resolve) => realtime.once('listening', resolve));
/** Each conversation's realtime socket, by the guild its URL names (see realtimeUrlOf in voice-rig.ts). */
const sockets = new Map<string, WebSocket>();
realtime.on('connection', (connection, request) => {
  const guildId = /^\/guild\/(\d+)\//.exec(request.url ?? '')?.[1];
  if (guildId === undefined) {
    connection.close(1008, 'no guild in the URL');
    return;
  }
  sockets.set(guildId, connection);
  connection.on('close', () => {
    if (sockets.get(guildId) === connection) sockets.delete(guildId);
  });
  connection.on('message', (data) => {
    const text = websocketText(data);
    // Appends (fifty a second) are swallowed unread; only the configuration is answered.
    if (!text.startsWith('{"type":"input_audio_buffer.append"') && text.includes('"session.update"')) {
      connection.send(JSON.stringify({ type: 'session.updated', event_id: 'e1', session: {} }));
    }
  });
});

/** How late this process runs (a far end running late notes the bot's packets late). */
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();

function reply(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

const address = realtime.address();
reply({
  wsUrl: `ws://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`,
  endpoint: voice.endpoint,
  certPem: voice.certPem,
});

/**
 * The bot's packet problems over the whole call. clearBotAudio() starts the voice server's counts over,
 * so each window's counts are added here before it clears them.
 */
const problemsBeforeLastClear = new Map<string, BotPacketProblems>();

function problemsOverTheCall(guildId: string): BotPacketProblems {
  const since = voice.botPacketProblems(guildId);
  const before = problemsBeforeLastClear.get(guildId);
  if (!before) return since;
  return {
    undecryptable: before.undecryptable + since.undecryptable,
    undecodable: before.undecodable + since.undecodable,
    unencrypted: before.unencrypted + since.unencrypted,
    daveUndecryptable: before.daveUndecryptable + since.daveUndecryptable,
  };
}

function clearBotAudio(guildId: string): void {
  problemsBeforeLastClear.set(guildId, problemsOverTheCall(guildId));
  voice.clearBotAudio(guildId);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const between = (low: number, high: number) => low + Math.random() * (high - low);

interface StreamedAnswer {
  responseId: string;
  /** Date.now() when its first delta was sent. */
  firstDeltaSentAt: number;
}

/** The longest answer streamed. */
const MAX_ANSWER_SECONDS = 3;
/** Answer tones by pitch, made once at the longest length (many conversations share them). */
const answerTones = new Map<number, Int16Array>();

/** `seconds` of a 24 kHz mono tone at `hz`. */
function answerTone(hz: number, seconds: number): Int16Array {
  let tone = answerTones.get(hz);
  if (!tone) {
    tone = generateTone({ hz, ms: MAX_ANSWER_SECONDS * 1000, amplitude: 0.4, format: REALTIME_PCM });
    answerTones.set(hz, tone);
  }
  return tone.subarray(0, Math.min(tone.length, Math.round(seconds * REALTIME_PCM.sampleRate)));
}

/**
 * One spoken answer as a gateway streams it: deltas of 20 to 200 ms, sent as they are due in real time
 * with up to 100 ms of lead and a few ms of jitter.
 */
async function streamAnswer(ws: WebSocket, index: number, seconds: number): Promise<StreamedAnswer> {
  const responseId = `resp_${index}`;
  const itemId = `item_${index}`;
  const pcm = answerTone(330 + (index % 5) * 40, seconds);
  const samplesPerMs = REALTIME_PCM.sampleRate / 1000;
  ws.send(JSON.stringify({ type: 'response.created', response: { id: responseId, status: 'in_progress' } }));
  ws.send(
    JSON.stringify({
      type: 'response.output_item.added',
      response_id: responseId,
      output_index: 0,
      item: { id: itemId, role: 'assistant' },
    }),
  );
  const start = Date.now();
  let sentMs = 0;
  let firstDeltaSentAt = 0;
  for (let offset = 0; offset < pcm.length;) {
    const ms = Math.round(between(2, 20)) * 10;
    const piece = pcm.subarray(offset, offset + ms * samplesPerMs);
    await sleep(start + sentMs - 100 - Date.now() + between(0, 5));
    ws.send(
      JSON.stringify({
        type: 'response.output_audio.delta',
        response_id: responseId,
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        delta: samplesToBytes(piece).toString('base64'),
      }),
    );
    firstDeltaSentAt ||= Date.now();
    offset += piece.length;
    sentMs += piece.length / samplesPerMs;
  }
  ws.send(JSON.stringify({ type: 'response.output_audio.done', response_id: responseId, item_id: itemId }));
  ws.send(JSON.stringify({ type: 'response.done', response: { id: responseId, status: 'completed' } }));
  // The answer plays until about now + the lead; a pause follows it before the next one.
  await sleep(start + sentMs - Date.now());
  return { responseId, firstDeltaSentAt };
}

/** The user's speech for `seconds`, as PCM and as Opus packets, made once per length (many conversations share it). */
const speeches = new Map<number, { pcm: Int16Array; packets: Buffer[] }>();

function speechOf(seconds: number): { pcm: Int16Array; packets: Buffer[] } {
  let speech = speeches.get(seconds);
  if (!speech) {
    const pcm = speechLikeTone(seconds);
    speech = { pcm, packets: encodePcmToOpusPackets(pcm) };
    speeches.set(seconds, speech);
  }
  return speech;
}

/**
 * `seconds` of two-way audio: the user talks all along while answers of 1 to 3 s follow each other with
 * pauses of 300 to 500 ms. Returns when each answer's first delta went out and its first RTP packet came in.
 * Conversations asked at once do not keep step: the user starts within one 20 ms frame of the request and
 * the first answer after a pause like the others, as people in different calls are not in phase (in step,
 * every conversation's packets and first answers would reach the bot in the same millisecond).
 * With `preEncoded` the user's speech is Opus-encoded once for every conversation rather than frame by
 * frame as it is said (the packets are the same): many conversations at once would otherwise spend this
 * process's CPU on encoders.
 */
async function converse(
  guildId: string,
  userId: string,
  seconds: number,
  answerIndex: number,
  preEncoded: boolean,
): Promise<Record<string, unknown>> {
  const ws = sockets.get(guildId);
  if (!ws) throw new Error(`the bot has no realtime socket in guild ${guildId}`);
  clearBotAudio(guildId);
  await sleep(between(0, 20));
  const speech = preEncoded ? speechOf(seconds) : undefined;
  const speaking = speech
    ? voice.speak(guildId, userId, speech.pcm, { opusPackets: speech.packets })
    : voice.speak(guildId, userId, speechLikeTone(seconds));
  const until = Date.now() + seconds * 1000;
  const answers: StreamedAnswer[] = [];
  let streamedMs = 0;
  for (;;) {
    await sleep(between(300, 500));
    if (Date.now() + 1500 >= until) break;
    const answerSeconds = between(1, Math.min(MAX_ANSWER_SECONDS, (until - Date.now()) / 1000 - 0.5));
    answers.push(await streamAnswer(ws, answerIndex + answers.length, answerSeconds));
    streamedMs += answerSeconds * 1000;
  }
  const spoken = await speaking;
  const frames = voice.botAudio(guildId).filter((frame) => !frame.opus.equals(OPUS_SILENCE_FRAME));
  const firstRtp = (after: number): BotAudioFrame | undefined => frames.find((frame) => frame.receivedAt >= after);
  return {
    answers: answers.map((answer) => ({ ...answer, firstRtpAt: firstRtp(answer.firstDeltaSentAt)?.receivedAt })),
    userPackets: spoken.audioPackets,
    answeredMs: Math.round(streamedMs),
  };
}

async function handle(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  const guildId = readString(request, 'guildId') ?? '';
  switch (readString(request, 'op')) {
    case 'expectBot': {
      const session = readRecord(request, 'session');
      return voice.expectBot({
        guildId,
        channelId: readString(session, 'channelId') ?? '',
        userId: readString(session, 'userId') ?? '',
        sessionId: readString(session, 'sessionId') ?? '',
      });
    }
    case 'botLeft':
      voice.botLeft(guildId);
      return {};
    case 'userJoined':
      voice.userJoined(guildId, readString(request, 'channelId') ?? '', readString(request, 'userId') ?? '');
      return {};
    case 'waitForBotConnection': {
      // With DAVE on this also waits for the bot's call to settle: the bot's session holds the group's keys.
      const connection = await voice.waitForBotConnection(guildId, 10_000);
      return { daveProtocolVersion: connection.dave?.protocolVersion ?? 0, daveGroupMembers: connection.dave?.groupMembers.length ?? 0 };
    }
    case 'botPacketProblems': {
      const member = flags.dave ? voice.dave.member(guildId, readString(request, 'userId') ?? '') : undefined;
      return {
        ...problemsOverTheCall(guildId),
        botFramesOpenedByMember: member?.stats.decrypted ?? 0,
        userFramesWithoutKey: member?.stats.droppedWithoutKey ?? 0,
      };
    }
    case 'converse':
      return converse(
        guildId,
        readString(request, 'userId') ?? '',
        readNumber(request, 'seconds') ?? 10,
        readNumber(request, 'answerIndex') ?? 0,
        request.preEncoded === true,
      );
    case 'cpu': {
      // Its CPU so far, and its event loop's delay p99 since the last time it was asked.
      const used = process.cpuUsage();
      const loopDelayP99Ms = loopDelay.percentile(99) / 1e6;
      loopDelay.reset();
      return { cpuMs: (used.user + used.system) / 1000, loopDelayP99Ms };
    }
    default:
      throw new Error(`unknown op ${String(request.op)}`);
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const request: unknown = JSON.parse(line);
  if (!isRecord(request)) return;
  handle(request).then(
    (answer) => reply({ id: request.id, ...answer }),
    (error: unknown) => reply({ id: request.id, error: String(error) }),
  );
});

process.on('SIGTERM', () => {
  realtime.close();
  void voice.close().then(() => process.exit(0));
});
