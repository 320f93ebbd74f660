// An answer that does not end (issue 25): a realtime gateway floods a conversation with audio deltas,
// 10,000 of them (500 s of garbage) as fast as its socket takes them. The real voice path (VoiceSession
// on the real @discordjs/voice, the Discord stand-in's voice server listening in the channel) keeps what
// waits to be played within a minute, cuts the answer as a barge-in would, says so in the log, and the
// conversations beside it keep their audio on time.

import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Base64Audio } from '../../src/gateway/realtime/events.ts';
import { createLogger, type LogFields } from '../../src/lib/log.ts';
import { samplesToBytes } from '../../src/voice/audio/format.ts';
import { OpusFrameEncoder } from '../../src/voice/audio/opus.ts';
import type { VoiceSession } from '../../src/voice/session.ts';
import type { VoiceSessionMetrics } from '../../src/voice/session-options.ts';
import { MAX_QUEUED_ANSWERS, MAX_QUEUED_MS } from '../../src/voice/speech-player.ts';
import { audible, byTone, generateTone, REALTIME_PCM, type BotAudioFrame, type VoiceServer } from 'discord-standin';
import type { ScriptedRealtime, ScriptedSocket } from '../support/scripted-realtime.ts';
import { startScriptedSession, startScriptedVoice, type ScriptedVoice } from '../support/scripted-voice.ts';
import { percentile } from '../support/percentile.ts';
import { cpuWaitMs } from '../support/cpu-wait.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { word } from '../../src/wording/notice.ts';

const BOT_ID = '100000000000000001';
const FLOODED = { guildId: '200000000000000011', channelId: '300000000000000011', userId: '400000000000000011' };
const CALM = [
  { guildId: '200000000000000012', channelId: '300000000000000012', userId: '400000000000000012' },
  { guildId: '200000000000000013', channelId: '300000000000000013', userId: '400000000000000013' },
];

const FLOOD_DELTAS = 10_000;
const FLOOD_DELTA_MS = 50;
/** The flood's length, and how often its sender writes what is due. */
const FLOOD_MS = 2000;
const FLOOD_TICK_MS = 10;
/**
 * The bound the voice session tests hold an answer's latency out to (test/voice/session.test.ts: first
 * audio to playing), for the conversations beside the flood.
 */
const LATENCY_BOUND_S = 0.5;
/** What a listener hears of a calm answer may lack a late or lost packet or two. */
const LOST_FRAMES = 2;

/** How far the truncate may be from what the channel was sent: the frame in flight at the cut, a lost silence frame. */
const TRUNCATE_TOLERANCE_MS = 60;
const RTP_SEQUENCES = 0x10000;

let rig: ScriptedVoice;
let voice: VoiceServer;
let realtime: ScriptedRealtime;
const sessions: VoiceSession[] = [];
const logged: LogFields[] = [];
const log = createLogger({
  level: 'warn',
  write: (line) => {
    const fields: unknown = JSON.parse(line);
    if (typeof fields === 'object' && fields !== null) logged.push({ ...fields });
  },
});

beforeAll(async () => {
  rig = await startScriptedVoice({ botId: BOT_ID, ...FLOODED });
  ({ voice, realtime } = rig);
});

afterEach(() => {
  for (const session of sessions.splice(0)) session.stop();
  vi.restoreAllMocks();
  logged.length = 0;
  for (const guild of [FLOODED, ...CALM]) voice.clearBotAudio(guild.guildId);
});

afterAll(async () => {
  await rig.close();
  expect(rig.connectionErrors).toEqual([]);
});

interface Conversation {
  guildId: string;
  session: VoiceSession;
  socket: ScriptedSocket;
  problems: string[];
  latency: { in: number[]; out: number[] };
}

async function converse(guild: typeof FLOODED): Promise<Conversation> {
  const connection = guild === FLOODED ? rig.connection : await rig.join(guild);
  const problems: string[] = [];
  const latency = { in: [] as number[], out: [] as number[] };
  const metrics: VoiceSessionMetrics = {
    voiceFrames: () => {},
    voiceDecryptFailures: () => {},
    realtimeRenewal: () => {},
    voiceLatency: (direction, seconds) => latency[direction].push(seconds),
  };
  const { session, socket } = await startScriptedSession(rig, {
    guildId: guild.guildId,
    connection,
    log,
    metrics,
    onProblem: (problem) => {
      problems.push(word(ENGLISH, problem));
      realtime.changed();
    },
  });
  sessions.push(session);
  return { guildId: guild.guildId, session, socket, problems, latency };
}

/** 24 kHz mono PCM as base64 deltas of 100 ms. */
function toneDeltas(hz: number, ms: number): string[] {
  const pcm = generateTone({ hz, ms, amplitude: 0.4, format: REALTIME_PCM });
  const chunk = REALTIME_PCM.sampleRate / 10;
  const parts: string[] = [];
  for (let offset = 0; offset < pcm.length; offset += chunk)
    parts.push(samplesToBytes(pcm.subarray(offset, offset + chunk)).toString('base64'));
  return parts;
}

/** A whole answer at once, as a fast gateway sends it. */
function answer(socket: ScriptedSocket, id: string, hz: number, ms: number): void {
  socket.send({ type: 'response.created', response: { id: `resp_${id}` } });
  for (const delta of toneDeltas(hz, ms))
    socket.send({ type: 'response.output_audio.delta', response_id: `resp_${id}`, item_id: `item_${id}`, delta });
  socket.send({ type: 'response.output_audio.done', response_id: `resp_${id}`, item_id: `item_${id}` });
  socket.send({ type: 'response.done', response: { id: `resp_${id}`, status: 'completed' } });
}

/**
 * 10,000 deltas of 50 ms of noise in one answer that never ends, within two seconds as the issue saw it
 * (a gateway's traffic, paced by the clock: each turn sends what is due by then, so a slow machine sends
 * bigger batches rather than a slower flood); then a marker the session reports in the channel, so the
 * test knows every delta before it was handled. Returns the most audio the bot held waiting to be
 * played, looked at between batches.
 */
async function flood(conversation: Conversation): Promise<number> {
  const { socket, session } = conversation;
  socket.send({ type: 'response.created', response: { id: 'resp_flood' } });
  socket.send({ type: 'response.output_item.added', response_id: 'resp_flood', item: { id: 'item_flood', role: 'assistant' } });
  const noise = Array.from({ length: 16 }, () => randomBytes((REALTIME_PCM.sampleRate / 1000) * FLOOD_DELTA_MS * 2).toString('base64'));
  const startedAt = performance.now();
  let mostQueuedMs = 0;
  for (let sent = 0; sent < FLOOD_DELTAS;) {
    const due = Math.min(FLOOD_DELTAS, Math.ceil(((performance.now() - startedAt) / FLOOD_MS) * FLOOD_DELTAS));
    for (; sent < due; sent++)
      socket.send({
        type: 'response.output_audio.delta',
        response_id: 'resp_flood',
        item_id: 'item_flood',
        delta: noise[sent % noise.length],
      });
    await setTimeout(FLOOD_TICK_MS);
    mostQueuedMs = Math.max(mostQueuedMs, session.queuedAudioMs);
  }
  socket.send({ type: 'error', error: { type: 'server_error', message: 'end of the flood' } });
  await realtime.waitFor(
    () => conversation.problems.find((problem) => problem.includes('end of the flood')),
    'the end of the flood',
    30_000,
  );
  return Math.max(mostQueuedMs, session.queuedAudioMs);
}

/**
 * The flood as the bot sent it into the channel, in ms: by RTP sequence numbers, from its first frame to the
 * silence the cut sent after it, so that a packet lost on the way (UDP on a busy machine, as on a real
 * network) still counts. Not by tone: a frame of noise can pass for the next answer's tone.
 */
function floodSentMs(frames: readonly BotAudioFrame[]): number {
  const isAudible = (frame: BotAudioFrame) => audible([frame]).length > 0;
  const start = frames.findIndex(isAudible);
  // The silence the cut sent; were it lost, the quiet first frame of the next answer's fade-in, one later.
  const after = start < 0 ? undefined : frames.slice(start).find((frame) => !isAudible(frame));
  if (!after) return 0;
  return ((after.sequence - frames[start]!.sequence + RTP_SEQUENCES) % RTP_SEQUENCES) * 20;
}

describe('an answer that does not end', () => {
  it('is cut at a minute of waiting audio as a barge-in cuts it: cancelled, truncated to what was heard, logged, and not decoded or encoded past it', async () => {
    const flooded = await converse(FLOODED);
    const decodes = vi.spyOn(Base64Audio.prototype, 'decode');
    const encodes = vi.spyOn(OpusFrameEncoder.prototype, 'encode');

    const mostQueuedMs = await flood(flooded);

    // What waited to be played never passed the bound, and nothing of the flood waits any more.
    expect(mostQueuedMs).toBeLessThanOrEqual(MAX_QUEUED_MS);
    expect(flooded.session.queuedAudioMs).toBe(0);
    // Cut once, as a barge-in cuts: the response cancelled, the item truncated to what was played.
    expect(flooded.socket.sent('response.cancel')).toHaveLength(1);
    const truncates = flooded.socket.sent('conversation.item.truncate');
    expect(truncates).toMatchObject([{ item_id: 'item_flood', content_index: 0 }]);
    const playedMs = Number(truncates[0]!.audio_end_ms);
    // The operator is told, naming the server and how much was dropped: the rest of the minute held.
    const warnings = logged.filter((line) => line.level === 'warn' && line.msg !== 'realtime error event');
    expect(warnings).toMatchObject([{ msg: 'answer audio past its bound; the answers were cut off', guild: FLOODED.guildId, playedMs }]);
    expect(Number(warnings[0]!.droppedMs)).toBeGreaterThanOrEqual(MAX_QUEUED_MS);
    expect(Number(warnings[0]!.droppedMs)).toBeLessThanOrEqual(MAX_QUEUED_MS + 2 * FLOOD_DELTA_MS);
    // The work the flood cost: decoded, only the minute that waited and what played meanwhile (the rest
    // was dropped as it came); encoded, only what was heard (a frame ahead).
    expect(decodes.mock.calls.length).toBeLessThanOrEqual((MAX_QUEUED_MS + playedMs + 20) / FLOOD_DELTA_MS + 1);
    const encoded = encodes.mock.calls.length;

    // The next answer is heard at once, not after 500 s of noise; of the flood, what the truncate says.
    answer(flooded.socket, 'next', 880, 400);
    const frames = await voice.waitForBotAudio(FLOODED.guildId, (received) => byTone(received, 880, 440).length >= 18, 10_000);
    const sentMs = floodSentMs(frames);
    expect(Math.abs(playedMs - sentMs)).toBeLessThanOrEqual(TRUNCATE_TOLERANCE_MS);
    expect(encoded).toBeLessThanOrEqual(playedMs / 20 + 5);
    expect(flooded.problems).toEqual(['The voice model reported a problem: end of the flood']);
  });

  it('cuts a gateway that opens answer after answer, at the most answers that may wait', async () => {
    const flooded = await converse(FLOODED);
    // Short answers, each a response of its own, none of them ever done: the ninth has no room.
    for (let index = 1; index <= MAX_QUEUED_ANSWERS + 1; index++) {
      flooded.socket.send({ type: 'response.created', response: { id: `resp_${index}` } });
      flooded.socket.send({
        type: 'response.output_item.added',
        response_id: `resp_${index}`,
        item: { id: `item_${index}`, role: 'assistant' },
      });
      flooded.socket.send({
        type: 'response.output_audio.delta',
        response_id: `resp_${index}`,
        item_id: `item_${index}`,
        delta: toneDeltas(440, 100)[0],
      });
    }
    const truncates = await realtime.waitFor(
      () =>
        flooded.socket.sent('conversation.item.truncate').length > MAX_QUEUED_ANSWERS
          ? flooded.socket.sent('conversation.item.truncate')
          : undefined,
      'the truncates',
    );
    expect(truncates.map((truncate) => truncate.item_id)).toEqual(
      Array.from({ length: MAX_QUEUED_ANSWERS + 1 }, (_, index) => `item_${index + 1}`),
    );
    expect(flooded.socket.sent('response.cancel')).toHaveLength(1);
    expect(logged).toMatchObject([
      { msg: 'answer audio past its bound; the answers were cut off', guild: FLOODED.guildId, answers: MAX_QUEUED_ANSWERS + 1 },
    ]);
    expect(flooded.session.speaking).toBe(false);
  });

  it('does not delay the audio of the conversations beside it', async () => {
    const flooded = await converse(FLOODED);
    // One after the other: each session takes the scripted server's next socket.
    const calm = [await converse(CALM[0]!), await converse(CALM[1]!)];

    // While the flood runs, a member talks in each calm channel and each gets a 2 s answer.
    const speaking = calm.map((conversation, index) =>
      voice.speakTone(conversation.guildId, CALM[index]!.userId, { hz: 300, ms: 2000, amplitude: 0.3 }),
    );
    const flooding = flood(flooded);
    for (const conversation of calm) answer(conversation.socket, 'calm', 880, 2000);
    // How long this thread had waited for a CPU when each calm frame reached the channel: the stand-in
    // checks the predicate as it records each frame, in the same turn of the event loop.
    const waitedAt = new Map<BotAudioFrame, number>();
    const heard = await Promise.all(
      calm.map((conversation) =>
        voice.waitForBotAudio(
          conversation.guildId,
          (frames) => {
            const waited = cpuWaitMs();
            for (const frame of frames) if (!waitedAt.has(frame)) waitedAt.set(frame, waited);
            return byTone(frames, 880, 440).length >= 100 - LOST_FRAMES;
          },
          20_000,
        ),
      ),
    );
    await Promise.all([flooding, ...speaking]);

    for (const [index, conversation] of calm.entries()) {
      // Each calm answer started playing within the bound of its first audio…
      expect(conversation.latency.out).toHaveLength(1);
      expect(conversation.latency.out[0]).toBeLessThan(LATENCY_BOUND_S);
      // …and each of its frames reached the channel within the bound of its place in the answer, counted
      // from its first frame heard: heard whole, at the pace it was spoken (a starved player stretches it,
      // late by a second and more). A late packet or two is what a real network does too: the bound holds
      // for all but the latest 5%. The time this thread waited for a CPU meanwhile is the machine's, not
      // the bot's (at load 8 on 2 cores, 1 to 1.7 s of these 2 s): it is not counted.
      const frames = byTone(heard[index]!, 880, 440).filter((frame) => waitedAt.has(frame));
      const first = frames[0]!;
      const lateness = frames.map(
        (frame, at) => frame.receivedAt - (first.receivedAt + at * 20) - (waitedAt.get(frame)! - waitedAt.get(first)!),
      );
      expect(percentile(lateness, 95)).toBeLessThan(LATENCY_BOUND_S * 1000);
      // What the member said reached the gateway within the same bound.
      expect(conversation.latency.in.length).toBeGreaterThan(0);
      expect(percentile(conversation.latency.in, 95)).toBeLessThan(LATENCY_BOUND_S);
      expect(conversation.socket.sent('response.cancel')).toEqual([]);
      expect(conversation.problems).toEqual([]);
    }
    expect(flooded.socket.sent('response.cancel')).toHaveLength(1);
  });
});
