import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  appendInFrames,
  base64,
  collectAudio,
  connectRealtime,
  REALTIME_MODEL,
  type ConnectOptions,
  type Connection,
} from './realtime-socket.ts';
import { encodeAudio } from '../../src/emulator/realtime/audio-format.ts';
import { BUILT_IN_VOICES } from '../../src/gateway/spec.ts';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { rawHttp } from '../support/raw-http.ts';
import { websocketText } from '../../src/lib/websocket-text.ts';
import { analyzeTone, generateSilence, generateTone, REALTIME_PCM } from 'discord-standin';

// The emulator's realtime endpoint, spoken to with a plain websocket.

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({
    config: {
      keys: { 'text-only-key-1': { group: 'video', quota_usd: 5 } },
      groups: { video: { models: ['svc-imagine-video-1.5'] } },
    },
  });
  emulator.realtime.options.paceFactor = 20;
});
afterAll(() => emulator.close());

const MODEL = REALTIME_MODEL;

function connect(options: ConnectOptions = {}): Promise<Connection> {
  return connectRealtime(emulator.wsUrl, options);
}

async function configured(session: Record<string, unknown>, options: ConnectOptions = {}): Promise<Connection> {
  const connection = await connect(options);
  connection.send({ type: 'session.update', session });
  await connection.next('session.updated');
  return connection;
}

describe('realtime authentication', () => {
  it('accepts the API key in the Authorization header', async () => {
    const connection = await configured({ voice: 'eve' });
    expect(connection.events.map((event) => event.type)).toEqual(['session.created', 'conversation.created', 'session.updated']);
    connection.socket.close();
  });

  it('accepts a client secret in the subprotocol and echoes the subprotocol back', async () => {
    const response = await fetch(`${emulator.baseUrl}/native/v1/realtime/client_secrets`, {
      method: 'POST',
      headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
      body: JSON.stringify({ expires_after: { seconds: 60 } }),
    });
    const secret = (await response.json()) as { value: string; expires_at: number };
    expect(secret.expires_at).toBeGreaterThan(Date.now() / 1000);
    const connection = await connect({ headers: {}, protocols: [`svc-client-secret.${secret.value}`] });
    expect(connection.socket.protocol).toBe(`svc-client-secret.${secret.value}`);
    connection.socket.close();
  });

  it('accepts the key in the compat-insecure-api-key subprotocol', async () => {
    const connection = await connect({ headers: {}, protocols: ['compat-insecure-api-key.emulator-key'] });
    expect(connection.socket.protocol).toBe('compat-insecure-api-key.emulator-key');
    connection.socket.close();
  });

  it.each([
    [{ headers: { Authorization: 'Bearer wrong-key-000' } }, 401],
    [{ headers: {}, protocols: ['svc-client-secret.made-up'] }, 401],
    [{ headers: { Authorization: 'Bearer text-only-key-1' } }, 403],
    [{ model: 'svc-voice-nonexistent' }, 404],
  ])('refuses %j with HTTP %i before any websocket exists, with a request id', async (options, status) => {
    await expect(connect(options)).rejects.toMatchObject({ status, requestId: expect.stringMatching(/^req_/) });
  });

  it.each([
    [['realtime'], 'realtime'],
    // What the openai SDK offers from a runtime WebSocket: a credential and routing subprotocols besides realtime.
    [['realtime', 'compat-insecure-api-key.emulator-key', 'openai-organization.org_1'], 'realtime'],
    [['compat-insecure-api-key.emulator-key', 'openai-agents-sdk.0.20.0'], 'openai-agents-sdk.0.20.0'],
  ])('with the Authorization header, picks a subprotocol without a credential from %j: %s', async (protocols, chosen) => {
    const connection = await configured({}, { protocols });
    expect(connection.socket.protocol).toBe(chosen);
    connection.socket.close();
  });

  it('with the Authorization header, refuses an upgrade that offers only credential subprotocols, rather than echo one', async () => {
    await expect(connect({ protocols: ['compat-insecure-api-key.emulator-key'] })).rejects.toMatchObject({
      status: 400,
      requestId: expect.stringMatching(/^req_/),
    });
  });

  it('keeps echoing the credential subprotocol that authorised, when it is offered with realtime', async () => {
    const connection = await connect({ headers: {}, protocols: ['realtime', 'compat-insecure-api-key.emulator-key'] });
    expect(connection.socket.protocol).toBe('compat-insecure-api-key.emulator-key');
    connection.socket.close();
  });

  it('opens for the runtime WebSocket (undici) with the Authorization header and the realtime subprotocol, as the openai SDK connects to Azure', async () => {
    // Node's WebSocket, like every browser's, fails a handshake that offered subprotocols and got none back.
    const RuntimeWebSocket = globalThis.WebSocket as unknown as new (
      url: string,
      init: { protocols: string[]; headers: Record<string, string> },
    ) => globalThis.WebSocket;
    const socket = new RuntimeWebSocket(`${emulator.wsUrl}/native/v1/realtime?model=${MODEL}`, {
      protocols: ['realtime'],
      headers: { Authorization: 'Bearer emulator-key' },
    });
    const opened = await new Promise<boolean>((resolve) => {
      socket.addEventListener('open', () => resolve(true));
      socket.addEventListener('error', () => resolve(false));
    });
    expect(opened).toBe(true);
    expect(socket.protocol).toBe('realtime');
    socket.close();
  });

  it.each([
    ['a wrong key', `GET /native/v1/realtime?model=${MODEL}`, 'Authorization: Bearer wrong-key-000\r\n', 401],
    ['no model', 'GET /native/v1/realtime', 'Authorization: Bearer emulator-key\r\n', 400],
    ['an unknown model', 'GET /native/v1/realtime?model=svc-voice-nonexistent', 'Authorization: Bearer emulator-key\r\n', 404],
    [
      'a bad Sec-WebSocket-Version',
      `GET /native/v1/realtime?model=${MODEL}`,
      'Authorization: Bearer emulator-key\r\nSec-WebSocket-Version: 7\r\n',
      400,
    ],
  ])('refuses an upgrade with %s in the native error body, usage included', async (_label, requestLine, headers, status) => {
    const answer = await rawHttp(
      emulator.port,
      `${requestLine} HTTP/1.1\r\nHost: emulator\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
        `${headers.includes('Sec-WebSocket-Version') ? '' : 'Sec-WebSocket-Version: 13\r\n'}${headers}\r\n`,
    );
    expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    const body: unknown = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ code: expect.any(String), error: expect.any(String), usage: { cost_in_usd_ticks: 0 } });
  });

  it('answers the accepted upgrade (101) with a request id', async () => {
    const socket = new WebSocket(`${emulator.wsUrl}/native/v1/realtime?model=${MODEL}`, {
      headers: { Authorization: 'Bearer emulator-key' },
    });
    const [response] = (await once(socket, 'upgrade')) as [{ statusCode: number; headers: Record<string, string | undefined> }];
    expect(response.statusCode).toBe(101);
    expect(response.headers['x-request-id']).toMatch(/^req_/);
    socket.close();
  });
});

/** A websocket upgrade written by hand (what the ws library refuses to send); resolves with the status line. */
async function rawUpgrade(target: string): Promise<string> {
  return rawHttp(
    emulator.port,
    `GET ${target} HTTP/1.1\r\nHost: emulator\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer emulator-key\r\n\r\n',
  );
}

describe('realtime upgrades that are not what the spec expects', () => {
  it('refuses an upgrade whose target is not a URL with 400, and stays up', async () => {
    const answer = await rawUpgrade('//[');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/X-Request-Id: req_/i);
    expect(answer).toContain('"code":"invalid_request_error"');
    const connection = await configured({});
    connection.socket.close();
  });
});

describe('a realtime session', () => {
  it('requires session.update first, and answers bad events with error events without closing', async () => {
    const connection = await connect();
    connection.send({ type: 'input_audio_buffer.append', audio: '' });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'session_not_configured' } });
    connection.send({ type: 'session.update', session: {} });
    await connection.next('session.updated');
    connection.socket.send('not json');
    expect(await connection.next('error')).toMatchObject({ error: { code: 'invalid_json' } });
    connection.send({ type: 'input_audio_buffer.append', audio: '***' });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'invalid_audio', param: 'audio' } });
    connection.send({ type: 'dance' });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'unknown_event' } });
    connection.send({ type: 'conversation.item.truncate', item_id: 'item_nope', content_index: 0, audio_end_ms: 10 });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'item_not_found' } });
    expect(connection.socket.readyState).toBe(WebSocket.OPEN);
    connection.socket.close();
  });

  it("hears a turn by its energy and echoes the speaker's own audio back", async () => {
    const connection = await configured({
      turn_detection: { type: 'server_vad', threshold: 0.5, silence_duration_ms: 200, prefix_padding_ms: 0 },
    });
    const speech = generateTone({ hz: 440, ms: 400, amplitude: 0.4, format: REALTIME_PCM });
    appendInFrames(connection, generateSilence(100, REALTIME_PCM));
    appendInFrames(connection, speech);
    appendInFrames(connection, generateSilence(300, REALTIME_PCM));
    expect(await connection.next('input_audio_buffer.speech_started')).toMatchObject({ audio_start_ms: 100 });
    expect(await connection.next('input_audio_buffer.speech_stopped')).toMatchObject({ audio_end_ms: 700 });
    await connection.next('input_audio_buffer.committed');
    expect(await connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.4 s of speech)',
    });
    await connection.next('response.created');
    const { pcm, done } = await collectAudio(connection);
    expect(Array.from(pcm)).toEqual(Array.from(speech));
    expect(done).toMatchObject({ response: { status: 'completed' } });
    expect(connection.events.some((event) => event.type === 'response.output_audio_transcript.delta')).toBe(true);
    connection.socket.close();
  });

  it('waits for commit and response.create in manual mode', async () => {
    const connection = await configured({ turn_detection: null });
    const speech = generateTone({ hz: 300, ms: 200, format: REALTIME_PCM });
    appendInFrames(connection, speech);
    connection.send({ type: 'input_audio_buffer.commit' });
    await connection.next('input_audio_buffer.committed');
    expect(connection.events.some((event) => event.type === 'response.created')).toBe(false);
    connection.send({ type: 'response.create' });
    const { pcm } = await collectAudio(connection);
    expect(Array.from(pcm)).toEqual(Array.from(speech));
    connection.socket.close();
  });

  it('speaks a force_message as a tone whose length follows the text, as its own response', async () => {
    const connection = await configured({});
    const text = 'Your video is ready.';
    connection.send({
      type: 'conversation.item.create',
      item: { type: 'force_message', role: 'assistant', content: [{ type: 'output_text', text }] },
    });
    await connection.next('response.created');
    const { pcm } = await collectAudio(connection);
    expect((pcm.length / 24_000) * 1000).toBeCloseTo(text.length * 60, -1);
    expect(analyzeTone(pcm, { format: REALTIME_PCM }).dominantHz).toBeCloseTo(880, -1);
    expect(connection.events.find((event) => event.type === 'response.output_audio_transcript.done')).toMatchObject({ transcript: text });
    connection.socket.close();
  });

  it.each([
    [false, "drops the caller's audio while it plays, then listens again"],
    [true, 'lets the caller talk over it'],
  ])('a force_message with interruptible %s %s', async (interruptible, _what) => {
    emulator.realtime.options.paceFactor = 4;
    try {
      const connection = await configured({ turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 } });
      const text = 'Your video is ready in the general channel.';
      connection.send({
        type: 'conversation.item.create',
        item: { type: 'force_message', role: 'assistant', interruptible, content: [{ type: 'output_text', text }] },
      });
      await connection.next('response.output_audio.delta');
      const speech = generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM });
      appendInFrames(connection, speech);
      appendInFrames(connection, generateSilence(300, REALTIME_PCM));
      const forced = await connection.next('response.done');
      const heardDuringPlayback = connection.events
        .slice(0, connection.events.indexOf(forced))
        .some((event) => event.type === 'input_audio_buffer.speech_started');
      expect(heardDuringPlayback).toBe(interruptible);
      if (!interruptible) {
        appendInFrames(connection, speech);
        appendInFrames(connection, generateSilence(300, REALTIME_PCM));
        await connection.next('conversation.item.input_audio_transcription.completed');
      }
      const heard = connection.events.find((event) => event.type === 'conversation.item.input_audio_transcription.completed');
      expect(heard).toMatchObject({ transcript: '(0.3 s of speech)' });
      connection.socket.close();
    } finally {
      emulator.realtime.options.paceFactor = 20;
    }
  });

  it('cancels a response and records a truncation of what was played', async () => {
    emulator.realtime.options.paceFactor = 1;
    const connection = await configured({});
    connection.send({
      type: 'conversation.item.create',
      item: {
        type: 'force_message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'a long line to be interrupted by the listener' }],
      },
    });
    const delta = await connection.next('response.output_audio.delta');
    connection.send({ type: 'response.cancel' });
    expect(await connection.next('response.done')).toMatchObject({ response: { status: 'cancelled' } });
    connection.send({ type: 'conversation.item.truncate', item_id: delta.item_id, content_index: 0, audio_end_ms: 80 });
    expect(await connection.next('conversation.item.truncated')).toMatchObject({ item_id: delta.item_id, audio_end_ms: 80 });
    const { session } = await emulator.realtime.waitForClientEvent(
      (event) => event.type === 'conversation.item.truncate' && event.item_id === delta.item_id,
    );
    expect(session.truncations).toEqual([{ itemId: delta.item_id, audioEndMs: 80 }]);
    emulator.realtime.options.paceFactor = 20;
    connection.socket.close();
  });

  it('refuses a force_message or a response.create while a response is active, as realtime services refuse a second response, and takes them once it is over', async () => {
    emulator.realtime.options.paceFactor = 4;
    try {
      const connection = await configured({ turn_detection: null });
      const forced = (text: string, eventId: string) => ({
        type: 'conversation.item.create',
        event_id: eventId,
        item: { type: 'force_message', role: 'assistant', content: [{ type: 'output_text', text }] },
      });
      connection.send(forced('The first line, long enough to still be playing.', 'first'));
      await connection.next('response.output_audio.delta');
      connection.send(forced('A second line.', 'second'));
      connection.send({ type: 'response.create', event_id: 'create' });
      for (const eventId of ['second', 'create']) {
        expect(await connection.next('error')).toEqual({
          type: 'error',
          event_id: expect.any(String),
          error: {
            type: 'invalid_request_error',
            code: 'conversation_already_has_active_response',
            message: 'A response is already in progress.',
            param: null,
            event_id: eventId,
          },
        });
      }
      // Neither was queued: the one response in progress ends, and nothing follows it.
      expect(await connection.next('response.done')).toMatchObject({ response: { status: 'completed' } });
      expect(connection.events.filter((event) => event.type === 'response.created')).toHaveLength(1);

      // Once it is over, the same force_message is spoken; cancelled, it no longer blocks the next one.
      connection.send(forced('A second line.', 'second_again'));
      await connection.next('response.output_audio.delta');
      connection.send({ type: 'response.cancel' });
      connection.send(forced('A third line.', 'third'));
      expect(await connection.next('response.done')).toMatchObject({ response: { status: 'cancelled' } });
      const done = await connection.next('response.done');
      expect(connection.events.filter((event) => event.type === 'response.output_audio_transcript.done').at(-1)).toMatchObject({
        transcript: 'A third line.',
      });
      expect(done).toMatchObject({ response: { status: 'completed' } });
      expect(connection.events.filter((event) => event.type === 'error')).toHaveLength(2);
      connection.socket.close();
    } finally {
      emulator.realtime.options.paceFactor = 20;
    }
  });

  it('closes the session at its time limit, after saying why', async () => {
    const short = await startEmulator({ config: { timing: { realtime_session_max_ms: 150 } } });
    try {
      const socket = new WebSocket(`${short.wsUrl}/native/v1/realtime?model=${MODEL}`, {
        headers: { Authorization: 'Bearer emulator-key' },
      });
      const messages: string[] = [];
      socket.on('message', (data) => messages.push(websocketText(data)));
      await once(socket, 'open');
      socket.send(JSON.stringify({ type: 'session.update', session: {} }));
      const [code] = (await once(socket, 'close')) as [number];
      expect(code).toBe(1000);
      expect(messages.some((message) => message.includes('session_expired'))).toBe(true);
    } finally {
      await short.close();
    }
  });
});

describe('audio formats and session settings', () => {
  it.each([
    ['input rate 0', { audio: { input: { format: { type: 'audio/pcm', rate: 0 } } } }, 'session.audio.input.format.rate'],
    ['a negative input rate', { audio: { input: { format: { type: 'audio/pcm', rate: -24000 } } } }, 'session.audio.input.format.rate'],
    ['a fractional input rate', { audio: { input: { format: { type: 'audio/pcm', rate: 22050.5 } } } }, 'session.audio.input.format.rate'],
    ['output rate 0', { audio: { output: { format: { type: 'audio/pcm', rate: 0 } } } }, 'session.audio.output.format.rate'],
    ['an absurd output rate', { audio: { output: { format: { type: 'audio/pcm', rate: 1e15 } } } }, 'session.audio.output.format.rate'],
    ['an unknown encoding', { audio: { input: { format: { type: 'audio/opus', rate: 48000 } } } }, 'session.audio.input.format.type'],
    ['G.711 at 16 kHz', { audio: { output: { format: { type: 'audio/pcmu', rate: 16000 } } } }, 'session.audio.output.format.rate'],
    [
      'a negative silence',
      { turn_detection: { type: 'server_vad', silence_duration_ms: -1 } },
      'session.turn_detection.silence_duration_ms',
    ],
    ['a threshold above 1', { turn_detection: { type: 'server_vad', threshold: 7 } }, 'session.turn_detection.threshold'],
  ])('refuses %s with an error event naming the param, and keeps the previous settings', async (_label, bad, param) => {
    const connection = await configured({ turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 } });
    connection.send({ type: 'session.update', event_id: 'evt_bad', session: bad });
    expect(await connection.next('error')).toMatchObject({
      type: 'error',
      event_id: expect.any(String),
      error: { type: 'invalid_request_error', code: 'invalid_value', param, message: expect.stringContaining(param), event_id: 'evt_bad' },
    });

    // Still 24 kHz PCM in and out, with the same VAD: a spoken turn comes back whole.
    const speech = generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM });
    appendInFrames(connection, speech);
    appendInFrames(connection, generateSilence(300, REALTIME_PCM));
    expect(await connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.3 s of speech)',
    });
    expect(Array.from((await collectAudio(connection)).pcm)).toEqual(Array.from(speech));
    // And a forced line is a tone at the old output rate.
    const text = 'Still here.';
    connection.send({
      type: 'conversation.item.create',
      item: { type: 'force_message', role: 'assistant', content: [{ type: 'output_text', text }] },
    });
    const { pcm } = await collectAudio(connection);
    expect(pcm.length).toBe((text.length * 60 * 24_000) / 1000);
    expect(connection.socket.readyState).toBe(WebSocket.OPEN);
    connection.socket.close();
  });

  it.each(['audio/pcmu', 'audio/pcma'] as const)('hears and echoes %s at 8 kHz', async (type) => {
    const format = { type, rate: 8000 };
    const connection = await configured({
      audio: { input: { format }, output: { format } },
      turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 },
    });
    expect(connection.events.find((event) => event.type === 'session.updated')).toMatchObject({
      session: { audio: { input: { format }, output: { format } } },
    });
    const pcm8k = { sampleRate: 8000, channels: 1 } as const;
    const speech = encodeAudio(generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: pcm8k }), format);
    const silence = encodeAudio(generateSilence(300, pcm8k), format);
    for (const part of [speech, silence]) {
      for (let offset = 0; offset < part.length; offset += 160)
        connection.send({ type: 'input_audio_buffer.append', audio: part.subarray(offset, offset + 160).toString('base64') });
    }
    expect(await connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.3 s of speech)',
    });
    const done = await connection.next('response.done');
    const responseId = (done.response as { id: string }).id;
    const echoed = Buffer.concat(
      connection.events
        .filter((event) => event.type === 'response.output_audio.delta' && event.response_id === responseId)
        .map((event) => Buffer.from(String(event.delta), 'base64')),
    );
    expect(echoed.equals(speech)).toBe(true);
    connection.socket.close();
  });
});

describe('changing settings during a session', () => {
  it('keeps the VAD in step with the input when turn detection is sent again', async () => {
    const vad = { type: 'server_vad', threshold: 0.5, silence_duration_ms: 200, prefix_padding_ms: 0 };
    const connection = await configured({ turn_detection: vad });
    appendInFrames(connection, generateSilence(500, REALTIME_PCM));
    connection.send({ type: 'session.update', session: { instructions: 'Now be brief.', turn_detection: { ...vad, threshold: 0.4 } } });
    await connection.next('session.updated');

    const speech = generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM });
    appendInFrames(connection, speech);
    appendInFrames(connection, generateSilence(300, REALTIME_PCM));
    expect(await connection.next('input_audio_buffer.speech_started')).toMatchObject({ audio_start_ms: 500 });
    expect(await connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.3 s of speech)',
    });
    expect(Array.from((await collectAudio(connection)).pcm)).toEqual(Array.from(speech));
    connection.socket.close();
  });

  const WEATHER_TOOL = {
    type: 'function',
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  };

  it('describes the whole session in session.updated after a partial session.update', async () => {
    const vad = { type: 'server_vad', threshold: 0.4, silence_duration_ms: 300, prefix_padding_ms: 100 };
    const format = { type: 'audio/pcm', rate: 16000 };
    const connection = await configured({
      voice: 'ara',
      instructions: 'Be brief.',
      turn_detection: vad,
      audio: { input: { format }, output: { format } },
      tools: [WEATHER_TOOL],
    });
    const whole = { voice: 'ara', turn_detection: vad, audio: { input: { format }, output: { format } }, tools: [WEATHER_TOOL] };
    connection.send({ type: 'session.update', session: { instructions: 'Now be chatty.' } });
    const first = await connection.next('session.updated');
    expect(first.session).toMatchObject({ id: expect.stringMatching(/^sess_/), model: MODEL, instructions: 'Now be chatty.', ...whole });
    connection.send({ type: 'session.update', session: { voice: 'leo' } });
    const second = await connection.next('session.updated');
    expect(second.session).toMatchObject({ instructions: 'Now be chatty.', ...whole, voice: 'leo' });
    connection.socket.close();
  });

  it('refuses an unknown voice with an error naming session.voice and listing the voices, and keeps the previous voice', async () => {
    const connection = await configured({ voice: 'eve', instructions: 'Be brief.' });
    connection.send({ type: 'session.update', event_id: 'evt_voice', session: { voice: 'nobody', instructions: 'Never applied.' } });
    const error = await connection.next('error');
    expect(error).toMatchObject({
      error: { type: 'invalid_request_error', code: 'invalid_value', param: 'session.voice', event_id: 'evt_voice' },
    });
    const message = String((error.error as { message: string }).message);
    expect(message).toContain('nobody');
    for (const voice of BUILT_IN_VOICES) expect(message).toContain(voice);
    connection.send({ type: 'session.update', session: { turn_detection: null } });
    expect((await connection.next('session.updated')).session).toMatchObject({
      voice: 'eve',
      instructions: 'Be brief.',
      turn_detection: null,
    });
    connection.socket.close();
  });

  it('takes a voice id in any letter case', async () => {
    const connection = await configured({ voice: 'Ara' });
    expect(connection.events.find((event) => event.type === 'session.updated')).toMatchObject({ session: { voice: 'ara' } });
    expect(connection.events.some((event) => event.type === 'error')).toBe(false);
    connection.socket.close();
  });

  it('places turns right after switching from manual mode to server VAD', async () => {
    const connection = await configured({ turn_detection: null });
    appendInFrames(connection, generateSilence(400, REALTIME_PCM));
    connection.send({ type: 'input_audio_buffer.clear' });
    connection.send({
      type: 'session.update',
      session: { turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 } },
    });
    await connection.next('session.updated');
    const speech = generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM });
    appendInFrames(connection, speech);
    appendInFrames(connection, generateSilence(300, REALTIME_PCM));
    expect(await connection.next('input_audio_buffer.speech_started')).toMatchObject({ audio_start_ms: 400 });
    expect(Array.from((await collectAudio(connection)).pcm)).toEqual(Array.from(speech));
    connection.socket.close();
  });
});

describe('memory over a long session', () => {
  it('journals a run of audio by its first event, not every chunk', async () => {
    const connection = await configured({ turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 } });
    appendInFrames(connection, generateSilence(1000, REALTIME_PCM));
    appendInFrames(connection, generateTone({ hz: 440, ms: 2000, amplitude: 0.4, format: REALTIME_PCM }));
    appendInFrames(connection, generateSilence(300, REALTIME_PCM));
    const { done } = await collectAudio(connection);
    const sentDeltas = connection.events.filter((event) => event.type === 'response.output_audio.delta').length;
    const session = emulator.realtime.sessions.find((candidate) =>
      candidate.serverEvents.some((entry) => entry.event.event_id === done.event_id),
    )!;
    // 3.3 s of audio in 165 appends: one journal entry; the echo's 20 deltas: a few, not all.
    expect(session.clientEvents.filter((entry) => entry.event.type === 'input_audio_buffer.append')).toHaveLength(1);
    expect(sentDeltas).toBe(20);
    expect(session.serverEvents.filter((entry) => entry.event.type === 'response.output_audio.delta').length).toBeLessThan(8);
    expect(session.serverEvents.some((entry) => entry.event.type === 'input_audio_buffer.speech_started')).toBe(true);
    connection.socket.close();
  });

  const NARROWBAND = { sampleRate: 8000, channels: 1 };
  /** The uncommitted input a session keeps (README, "The gateway emulator"). */
  const MAX_BUFFERED_SECONDS = 180;

  function appendSeconds(connection: Connection, pcm: Int16Array, secondsPerEvent: number): void {
    const step = secondsPerEvent * NARROWBAND.sampleRate;
    for (let offset = 0; offset < pcm.length; offset += step)
      connection.send({ type: 'input_audio_buffer.append', audio: base64(pcm.subarray(offset, offset + step)) });
  }

  it('keeps at most 3 minutes of uncommitted audio in manual mode, answering what does not fit with an error', async () => {
    const connection = await configured({
      turn_detection: null,
      audio: { input: { format: { type: 'audio/pcm', rate: NARROWBAND.sampleRate } } },
    });
    // Four minutes in one-minute appends: the fourth does not fit.
    appendSeconds(connection, generateSilence(240_000, NARROWBAND), 60);
    connection.send({ type: 'input_audio_buffer.append', audio: base64(generateSilence(1000, NARROWBAND)), event_id: 'one_more' });
    expect(await connection.next('error')).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', code: 'input_audio_buffer_full', param: 'audio' },
    });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'input_audio_buffer_full', event_id: 'one_more' } });
    connection.send({ type: 'input_audio_buffer.commit' });
    expect(await connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: `(${MAX_BUFFERED_SECONDS.toFixed(1)} s of speech)`,
    });
    // Committed, the buffer has room again.
    connection.send({ type: 'input_audio_buffer.append', audio: base64(generateSilence(1000, NARROWBAND)) });
    connection.send({ type: 'input_audio_buffer.commit' });
    expect(await connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(1.0 s of speech)',
    });
    expect(connection.events.filter((event) => event.type === 'error')).toHaveLength(2);
    connection.socket.close();
  });

  it('keeps the last 3 minutes of a turn that never pauses with server VAD, saying so once', async () => {
    const connection = await configured({
      turn_detection: { type: 'server_vad', silence_duration_ms: 500, prefix_padding_ms: 0 },
      audio: { input: { format: { type: 'audio/pcm', rate: NARROWBAND.sampleRate } } },
    });
    appendSeconds(connection, generateTone({ hz: 440, ms: 200_000, amplitude: 0.4, format: NARROWBAND }), 10);
    appendSeconds(connection, generateSilence(1000, NARROWBAND), 1);
    expect(await connection.next('error')).toMatchObject({ error: { code: 'input_audio_buffer_full' } });
    const transcript = String((await connection.next('conversation.item.input_audio_transcription.completed')).transcript);
    const seconds = Number(/^\((\d+\.\d) s of speech\)$/.exec(transcript)?.[1]);
    expect(seconds).toBeGreaterThan(MAX_BUFFERED_SECONDS - 1);
    expect(seconds).toBeLessThanOrEqual(MAX_BUFFERED_SECONDS);
    expect(connection.events.filter((event) => event.type === 'error')).toHaveLength(1);
    connection.socket.close();
  });

  it('bounds its journals by size: at most 1 MiB of events each, an event over 16 KiB kept by its type alone', async () => {
    const connection = await configured({});
    const filler = 'x'.repeat(12 * 1024);
    for (let index = 0; index < 200; index++) connection.send({ type: 'nonsense', event_id: `junk_${index}`, filler });
    connection.send({ type: 'nonsense.huge', event_id: 'huge', filler: 'y'.repeat(1024 * 1024) });
    const { session } = await emulator.realtime.waitForClientEvent((event) => event.event_id === 'huge');
    const journaled = session.clientEvents.reduce((sum, entry) => sum + JSON.stringify(entry.event).length, 0);
    expect(journaled).toBeLessThanOrEqual(1024 * 1024);
    expect(session.clientEvents.at(-1)?.event).toEqual({ type: 'nonsense.huge', event_id: 'huge' });
    expect(session.clientEvents.at(-2)?.event).toEqual({ type: 'nonsense', event_id: 'junk_199', filler });
    // The server's journal holds the 201 error events, each small.
    await connection.next('error');
    connection.socket.close();
  });

  it('refuses a force_message over 4096 characters', async () => {
    const connection = await configured({});
    connection.send({
      type: 'conversation.item.create',
      event_id: 'too_long',
      item: { type: 'force_message', role: 'assistant', content: [{ type: 'output_text', text: 'x'.repeat(4097) }] },
    });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'invalid_force_message', event_id: 'too_long' } });
    connection.socket.close();
  });

  it('queues at most 8 turns its VAD answers behind the one playing, and drops the rest with conversation_already_has_active_response', async () => {
    // Slow enough that no answer finishes while the ten turns arrive.
    emulator.realtime.options.paceFactor = 0.05;
    try {
      const connection = await configured({ turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 } });
      for (let turn = 0; turn < 10; turn++) {
        appendInFrames(connection, generateTone({ hz: 440, ms: 100, amplitude: 0.4, format: REALTIME_PCM }));
        appendInFrames(connection, generateSilence(300, REALTIME_PCM));
      }
      expect(await connection.next('error')).toMatchObject({
        error: { code: 'conversation_already_has_active_response', event_id: null },
      });
      expect(connection.events.filter((event) => event.type === 'input_audio_buffer.committed')).toHaveLength(10);
      connection.socket.close();
    } finally {
      emulator.realtime.options.paceFactor = 20;
    }
  });

  it('forgets closed sessions once their retention has passed', async () => {
    const short = await startEmulator({ config: { timing: { realtime_session_max_ms: 100 } } });
    short.realtime.options.closedSessionRetentionMs = 0;
    try {
      const open = () =>
        new WebSocket(`${short.wsUrl}/native/v1/realtime?model=${MODEL}`, { headers: { Authorization: 'Bearer emulator-key' } });
      const first = open();
      await once(first, 'open');
      const [firstSession] = short.realtime.sessions;
      await once(first, 'close');
      const second = open();
      await once(second, 'open');
      expect(short.realtime.sessions).not.toContain(firstSession);
      expect(short.realtime.sessions).toHaveLength(1);
      second.close();
    } finally {
      await short.close();
    }
  });
});
