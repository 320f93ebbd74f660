// The voice session against a scripted realtime server (a local websocket that answers what each test
// tells it to, the way a spec-faithful gateway may) and the real @discordjs/voice connected to the
// Discord stand-in's voice server in this process: what the session sends to the gateway, and what a
// listener in the channel really hears.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { samplesToBytes } from '../../src/voice/audio/format.ts';
import type { VoiceSettings } from '../../src/ports/voice-settings.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import type { VoiceSession } from '../../src/voice/session.ts';
import type { VoiceSessionMetrics, VoiceSessionOptions } from '../../src/voice/session-options.ts';
import {
  analyzeTone,
  audible,
  type BotAudioFrame,
  byTone,
  generateTone,
  joinFramePcm,
  REALTIME_PCM,
  type VoiceServer,
} from 'discord-standin';
import type { ScriptedRealtime, ScriptedSocket } from '../support/scripted-realtime.ts';
import { startScriptedSession, startScriptedVoice, type ScriptedVoice } from '../support/scripted-voice.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { notice, word, type Phrase } from '../../src/wording/notice.ts';

/** What the text channel reads when a conversation gives up for `reason`. */
function stoppedBecause(reason: Phrase): string {
  return word(ENGLISH, notice('voice.stopped', { channel: '<#voice>', reason }));
}

const BOT_ID = '100000000000000001';
const USER_ID = '400000000000000001';
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';

let rig: ScriptedVoice;
let voice: VoiceServer;
let realtime: ScriptedRealtime;
let session: VoiceSession | undefined;

beforeAll(async () => {
  rig = await startScriptedVoice({ botId: BOT_ID, userId: USER_ID, guildId: GUILD_ID, channelId: CHANNEL_ID });
  ({ voice, realtime } = rig);
});

afterEach(() => {
  session?.stop();
  session = undefined;
  realtime.configure = true;
  realtime.sessionExpiresInMs = undefined;
  realtime.refusals.length = 0;
  voice.clearBotAudio(GUILD_ID);
});

afterAll(async () => {
  await rig.close();
  expect(rig.connectionErrors).toEqual([]);
});

interface Started {
  session: VoiceSession;
  socket: ScriptedSocket;
  problems: string[];
}

async function startSession(overrides: Partial<VoiceSessionOptions> = {}, settings: Partial<VoiceSettings> = {}): Promise<Started> {
  const problems: string[] = [];
  const started = await startScriptedSession(rig, {
    settings: { ...defaultVoiceSettings('svc'), ...settings },
    onProblem: (problem) => {
      problems.push(word(ENGLISH, problem));
      realtime.changed();
    },
    ...overrides,
  });
  session = started.session;
  return { ...started, problems };
}

/** 24 kHz mono PCM as base64 deltas of `chunkMs` each. */
function deltas(pcm: Int16Array, chunkMs = 100): string[] {
  const chunk = (REALTIME_PCM.sampleRate / 1000) * chunkMs;
  const parts: string[] = [];
  for (let offset = 0; offset < pcm.length; offset += chunk) {
    const piece = pcm.subarray(offset, offset + chunk);
    parts.push(samplesToBytes(piece).toString('base64'));
  }
  return parts;
}

function tone(hz: number, ms: number): Int16Array {
  return generateTone({ hz, ms, amplitude: 0.4, format: REALTIME_PCM });
}

/**
 * Frames of the 440 Hz answer (the one talked over) and of the 880 Hz one after it; the fade-in of a
 * tone, or a codec transient between answers, counts for neither.
 */
function split(frames: readonly BotAudioFrame[]): { first: BotAudioFrame[]; second: BotAudioFrame[] } {
  return { first: byTone(frames, 440, 880), second: byTone(frames, 880, 440) };
}

function heard(minimumFrames: number): Promise<readonly BotAudioFrame[]> {
  return voice.waitForBotAudio(GUILD_ID, (frames) => audible(frames).length >= minimumFrames, 10_000);
}

describe('a voice session against a spec-faithful gateway', () => {
  it('plays audio deltas that carry nothing but `delta`, under either name', async () => {
    const { socket } = await startSession();
    socket.send({ type: 'response.created' });
    deltas(tone(440, 300)).forEach((delta, index) =>
      socket.send({ type: index % 2 === 0 ? 'response.output_audio.delta' : 'response.audio.delta', delta }),
    );
    socket.send({ type: 'response.output_audio.done' });
    socket.send({ type: 'response.done' });
    const frames = await heard(14);
    expect(analyzeTone(joinFramePcm(audible(frames))).dominantHz).toBeCloseTo(440, -1);
  });

  it('plays deltas that cut samples in two (the spec promises only base64 audio, not whole samples)', async () => {
    const { socket } = await startSession();
    const pcm = tone(440, 300);
    const bytes = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    socket.send({ type: 'response.created' });
    for (let offset = 0; offset < bytes.length; offset += 4801) {
      socket.send({ type: 'response.output_audio.delta', delta: bytes.subarray(offset, offset + 4801).toString('base64') });
    }
    socket.send({ type: 'response.output_audio.done' });
    socket.send({ type: 'response.done' });
    const frames = await heard(14);
    const analysis = analyzeTone(joinFramePcm(audible(frames)));
    expect(analysis.dominantHz).toBeCloseTo(440, -1);
    // Every other delta read from a half sample would be loud noise, not the tone.
    expect(analysis.purity).toBeGreaterThan(0.8);
  });

  it('tells the channel about errors people should know of, once, and keeps routine ones to the log', async () => {
    const { socket, problems } = await startSession();
    socket.send({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        code: 'session_expired',
        message: 'The session reached its maximum duration.',
        param: null,
        event_id: null,
      },
    });
    socket.send({ type: 'error', error: 'You exceeded your current quota.', code: 'insufficient_quota' });
    socket.send({ type: 'error', error: 'You exceeded your current quota.', code: 'insufficient_quota' });
    socket.send({
      type: 'error',
      error: { type: 'server_error', code: 'server_error', message: 'The server had an error.', param: null, event_id: null },
    });
    await realtime.waitFor(() => (problems.length >= 2 ? true : undefined), 'the problems told');
    expect(problems).toEqual([
      'The voice model reported a problem: You exceeded your current quota.',
      'The voice model reported a problem: The server had an error.',
    ]);
  });

  it('posts an expired API key in the channel: it is not a session reaching its time limit', async () => {
    const { socket, problems } = await startSession();
    socket.send({
      type: 'error',
      error: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'API key expired.', param: null, event_id: null },
    });
    await realtime.waitFor(() => (problems.length >= 1 ? true : undefined), 'the problem posted');
    expect(problems).toEqual(['The voice model reported a problem: API key expired.']);
  });

  it('on a barge-in after a fast gateway delivered the whole answer: cancels, truncates to what was heard, and plays the next answer', async () => {
    const { socket } = await startSession();
    socket.send({ type: 'response.created', response: { id: 'resp_1' } });
    socket.send({ type: 'response.output_item.added', response_id: 'resp_1', item: { id: 'item_1', role: 'assistant' } });
    // The whole answer and its end arrive at once, long before they can be played: no item_id on the deltas.
    for (const delta of deltas(tone(440, 2000)))
      socket.send({ type: 'response.output_audio.delta', response_id: 'resp_1', content_index: 1, delta });
    socket.send({ type: 'response.output_audio.done', response_id: 'resp_1' });
    socket.send({ type: 'response.done', response: { id: 'resp_1', status: 'completed' } });
    await heard(15);
    socket.send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 0 });
    const truncate = await realtime.waitFor(() => socket.sent('conversation.item.truncate')[0], 'the truncate');
    // The cancel goes out although response.done came: the gateway said nothing was active, which is fine.
    const cancel = socket.sent('response.cancel')[0];
    expect(cancel).toBeDefined();
    socket.send({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        code: 'response_cancel_not_active',
        message: 'There is no active response to cancel.',
        param: null,
        event_id: cancel?.event_id,
      },
    });

    socket.send({ type: 'response.created', response: { id: 'resp_2' } });
    for (const delta of deltas(tone(880, 300)))
      socket.send({ type: 'response.output_audio.delta', response_id: 'resp_2', item_id: 'item_2', delta });
    socket.send({ type: 'response.output_audio.done', response_id: 'resp_2', item_id: 'item_2' });
    const frames = await voice.waitForBotAudio(GUILD_ID, (received) => split(received).second.length >= 14, 10_000);
    const { first, second } = split(frames);
    expect(truncate).toMatchObject({ item_id: 'item_1', content_index: 1 });
    // What the gateway is told was heard is what a listener in the channel heard, to a frame or two.
    expect(Math.abs(Number(truncate.audio_end_ms) - first.length * 20)).toBeLessThanOrEqual(40);
    // Nothing of the cut-off answer is heard after the next one starts.
    expect(first.every((frame) => frame.receivedAt <= second[0]!.receivedAt)).toBe(true);
    expect(first.length).toBeLessThan(50);
  });

  it('drops the late deltas and the done events of an answer that was talked over', async () => {
    const { socket, problems } = await startSession();
    const answer = deltas(tone(440, 2000));
    socket.send({ type: 'response.created', response: { id: 'resp_1' } });
    for (const delta of answer.slice(0, 6))
      socket.send({ type: 'response.output_audio.delta', response_id: 'resp_1', item_id: 'item_1', content_index: 0, delta });
    await heard(5);
    socket.send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 0 });
    await realtime.waitFor(() => socket.sent('conversation.item.truncate')[0], 'the truncate');
    // Still in flight when the cancel crossed them: a delta alone fills the pre-buffer if it is let through.
    for (const delta of answer.slice(6, 12))
      socket.send({ type: 'response.output_audio.delta', response_id: 'resp_1', item_id: 'item_1', content_index: 0, delta });
    socket.send({ type: 'response.output_audio.done', response_id: 'resp_1', item_id: 'item_1' });
    socket.send({ type: 'response.done', response: { id: 'resp_1', status: 'cancelled' } });
    socket.send({ type: 'response.created', response: { id: 'resp_2' } });
    for (const delta of deltas(tone(880, 300)))
      socket.send({ type: 'response.output_audio.delta', response_id: 'resp_2', item_id: 'item_2', delta });
    socket.send({ type: 'response.output_audio.done', response_id: 'resp_2', item_id: 'item_2' });
    const frames = await voice.waitForBotAudio(GUILD_ID, (received) => split(received).second.length >= 14, 10_000);
    const { first, second } = split(frames);
    expect(first.every((frame) => frame.receivedAt <= second[0]!.receivedAt)).toBe(true);
    expect(first.length).toBeLessThanOrEqual(30);
    expect(problems).toEqual([]);
  });

  it('gives up at once when the gateway refuses the key on reconnecting, saying why', async () => {
    const reasons: string[] = [];
    const onGiveUp = (reason: Phrase) => {
      reasons.push(stoppedBecause(reason));
      realtime.changed();
    };
    const { session: started, socket } = await startSession({ onGiveUp });
    const refusedBefore = realtime.refused;
    realtime.refusals.push(401, 401, 401);
    socket.close(1011, 'restarting');
    await realtime.waitFor(() => reasons[0], 'giving up');
    expect(reasons).toEqual([
      "Stopped listening in <#voice>. The gateway refused the server's key (401 invalid_api_key): a server admin can set a working one with `/config key`.",
    ]);
    expect(realtime.refused - refusedBefore).toBe(1);
    expect(started.state).toBe('closed');
  });

  it('gives up after a bounded number of failed attempts, saying why', async () => {
    const reasons: string[] = [];
    const onGiveUp = (reason: Phrase) => {
      reasons.push(stoppedBecause(reason));
      realtime.changed();
    };
    const { session: started, socket } = await startSession({ onGiveUp, reconnect: { baseMs: 5, maxMs: 10, maxAttempts: 3 } });
    const refusedBefore = realtime.refused;
    realtime.refusals.push(503, 503, 503, 503, 503);
    socket.close(1011, 'restarting');
    await realtime.waitFor(() => reasons[0], 'giving up');
    expect(reasons[0]).toMatch(
      /^Stopped listening in <#voice>\. The voice model could not be reached after 3 attempts \(last: the gateway refused the realtime connection with HTTP 503/,
    );
    expect(realtime.refused - refusedBefore).toBe(3);
    expect(started.state).toBe('closed');
  });

  describe('renewal before the session limit', () => {
    /** The socket opened after this one. */
    function renewedBefore(socket: ScriptedSocket): ScriptedSocket {
      const next = realtime.sockets[realtime.sockets.indexOf(socket) + 1];
      if (!next) throw new Error('no later socket');
      return next;
    }

    it('waits for the answer to finish playing, then renews without the channel noticing (and counts both)', async () => {
      const states: string[] = [];
      const counted = { renewals: 0, framesOut: 0, latenciesOut: [] as number[] };
      const metrics: VoiceSessionMetrics = {
        voiceFrames: (direction, count) => {
          if (direction === 'out') counted.framesOut += count;
        },
        voiceDecryptFailures: () => {},
        realtimeRenewal: () => counted.renewals++,
        voiceLatency: (direction, seconds) => {
          if (direction === 'out') counted.latenciesOut.push(seconds);
        },
      };
      // The window opens 1 s into a 3 s session; the renewal is forced 100 ms before its end.
      const { session: started, socket } = await startSession({
        sessionLimitMs: 3000,
        renewal: { windowMs: 2000, marginMs: 100 },
        metrics,
      });
      started.on('state', (state) => states.push(state));
      socket.send({ type: 'response.created', response: { id: 'resp_1' } });
      for (const delta of deltas(tone(440, 1600)))
        socket.send({ type: 'response.output_audio.delta', response_id: 'resp_1', item_id: 'item_1', delta });
      socket.send({ type: 'response.output_audio.done', response_id: 'resp_1', item_id: 'item_1' });
      socket.send({ type: 'response.done', response: { id: 'resp_1', status: 'completed' } });
      await realtime.waitFor(() => socket.closedWith, 'the renewal', 5000);
      const fresh = renewedBefore(socket);
      expect(socket.closedWith).toMatchObject({ code: 1000, reason: 'renewed' });
      // The whole answer was heard before the old session was let go.
      const frames = audible(voice.botAudio(GUILD_ID));
      expect(frames.length).toBeGreaterThanOrEqual(78);
      expect(fresh.openedAt).toBeGreaterThanOrEqual(frames.at(-1)!.receivedAt);
      expect(states).toEqual([]);
      expect(fresh.sent('session.update')).toHaveLength(1);
      // 1.6 s of answer is 80 frames played (and the silence after it); it waited for its pre-buffer only.
      expect(counted).toMatchObject({ renewals: 1 });
      expect(counted.framesOut).toBeGreaterThanOrEqual(80);
      expect(counted.latenciesOut).toHaveLength(1);
      expect(counted.latenciesOut[0]).toBeLessThan(0.5);
    });

    it('renews at the safety margin when the channel is never quiet', async () => {
      const { session: started, socket } = await startSession({ sessionLimitMs: 1500, renewal: { windowMs: 1000, marginMs: 300 } });
      // A turn the gateway heard start and never answers: never a quiet moment.
      socket.send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 0 });
      await realtime.waitFor(() => socket.closedWith, 'the forced renewal', 5000);
      expect(socket.closedWith).toMatchObject({ code: 1000, reason: 'renewed' });
      expect(renewedBefore(socket).open).toBe(true);
      expect(started.state).toBe('live');
    });

    it('learns a shorter limit from a gateway that ends a session early, and renews before it next time', async () => {
      const { socket } = await startSession();
      socket.send({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code: 'session_expired',
          message: 'Your session hit the maximum duration.',
          param: null,
          event_id: null,
        },
      });
      socket.close(1000, 'session expired');
      // Reopened at once; that session is renewed by the bot before the same lifetime runs out.
      const second = await realtime.waitFor(() => realtime.sockets[realtime.sockets.indexOf(socket) + 1], 'the reopened session');
      await realtime.waitFor(() => second.closedWith, 'the renewal of the reopened session', 5000);
      expect(second.closedWith).toMatchObject({ code: 1000, reason: 'renewed' });
    });

    it('believes a gateway that says when the session expires', async () => {
      realtime.sessionExpiresInMs = 1500;
      const { socket } = await startSession();
      await realtime.waitFor(() => socket.closedWith, 'the renewal', 5000);
      expect(socket.closedWith).toMatchObject({ code: 1000, reason: 'renewed' });
      expect(socket.closedWith!.at - socket.openedAt).toBeLessThan(1500);
    });
  });
});
