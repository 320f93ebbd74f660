import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { GatewayClient } from '../../src/gateway/client.ts';
import { RealtimeClient, RealtimeConnectionError } from '../../src/gateway/realtime/client.ts';
import type { RealtimeServerEvent } from '../../src/gateway/realtime/events.ts';
import { generateSilence, generateTone, REALTIME_PCM } from 'discord-standin';
import { ScriptedRealtime } from '../support/scripted-realtime.ts';

// The bot's realtime client against the emulator, over a real websocket.

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
  emulator.realtime.options.paceFactor = 20;
});
afterAll(() => emulator.close());

function collect(client: RealtimeClient): RealtimeServerEvent[] {
  const events: RealtimeServerEvent[] = [];
  client.on('event', (event) => events.push(event));
  return events;
}

function until(client: RealtimeClient, type: RealtimeServerEvent['type']): Promise<RealtimeServerEvent> {
  return new Promise((resolve) => {
    const listener = (event: RealtimeServerEvent) => {
      if (event.type !== type) return;
      client.off('event', listener);
      resolve(event);
    };
    client.on('event', listener);
  });
}

describe('the realtime client', () => {
  it('configures the session first and hears the echo of a spoken turn', async () => {
    const client = await RealtimeClient.connect({
      wsBaseUrl: emulator.wsUrl,
      apiKey: 'emulator-key',
      model: 'svc-voice-latest',
      session: {
        voice: 'eve',
        instructions: 'Be brief.',
        turnDetection: { type: 'server_vad', silenceDurationMs: 200, prefixPaddingMs: 0 },
      },
    });
    const events = collect(client);
    const { session: emulated, event: first } = await emulator.realtime.waitForClientEvent((event) => event.type === 'session.update');
    expect(emulated.clientEvents[0]?.event).toBe(first.event);
    expect(first.event).toMatchObject({
      session: {
        voice: 'eve',
        instructions: 'Be brief.',
        turn_detection: { type: 'server_vad', silence_duration_ms: 200 },
        audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } },
      },
    });

    const speech = generateTone({ hz: 500, ms: 300, format: REALTIME_PCM });
    const done = until(client, 'response.done');
    for (const part of [speech, generateSilence(300, REALTIME_PCM)]) {
      for (let offset = 0; offset < part.length; offset += 480) client.appendAudio(part.subarray(offset, offset + 480));
    }
    expect(await done).toMatchObject({ status: 'completed' });
    const audio = Buffer.concat(events.flatMap((event) => (event.type === 'response.output_audio.delta' ? [event.audio.decode()] : [])));
    expect(Array.from(new Int16Array(audio.buffer, audio.byteOffset, audio.length / 2))).toEqual(Array.from(speech));
    expect(events.map((event) => event.type)).toContain('input_audio_buffer.speech_started');
    expect(events.find((event) => event.type === 'conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.3 s of speech)',
    });
    client.close();
  });

  it('sends force messages, cancels and truncates', async () => {
    emulator.realtime.options.paceFactor = 1;
    const client = await RealtimeClient.connect({
      wsBaseUrl: emulator.wsUrl,
      apiKey: 'emulator-key',
      model: 'svc-voice-latest',
      session: { turnDetection: null },
    });
    const delta = until(client, 'response.output_audio.delta');
    client.forceMessage('Your video is ready in #general.', { interruptible: true });
    const first = await delta;
    if (first.type !== 'response.output_audio.delta' || first.itemId === undefined) throw new Error('expected audio of a named item');
    const done = until(client, 'response.done');
    client.cancelResponse();
    expect(await done).toMatchObject({ status: 'cancelled' });
    const truncated = until(client, 'conversation.item.truncated');
    client.truncate(first.itemId, first.contentIndex ?? 0, 60);
    expect(await truncated).toMatchObject({ itemId: first.itemId, audioEndMs: 60 });
    const force = await emulator.realtime.waitForClientEvent((event) => event.type === 'conversation.item.create');
    expect(force.event.event).toMatchObject({
      item: {
        type: 'force_message',
        role: 'assistant',
        interruptible: true,
        content: [{ type: 'output_text', text: 'Your video is ready in #general.' }],
      },
    });
    expect(force.session.clientEvents.some((entry) => entry.event.type === 'response.create')).toBe(false);
    emulator.realtime.options.paceFactor = 20;
    client.close();
  });

  it.each([
    ['a wrong key', { apiKey: 'not-a-key-123456', model: 'svc-voice-latest' }, 401, 'invalid_api_key'],
    ['an unknown model', { apiKey: 'emulator-key', model: 'svc-voice-nope' }, 404, 'model_not_found'],
  ])('reports %s with the status and code of the refused upgrade, never the key', async (_label, options, status, code) => {
    const error = await RealtimeClient.connect({ wsBaseUrl: emulator.wsUrl, session: { turnDetection: null }, ...options }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(RealtimeConnectionError);
    expect(error).toMatchObject({ status, code });
    expect(String((error as Error).message)).not.toContain(options.apiKey);
  });

  it('hears why a session ends at its time limit (session_expired), then the close', async () => {
    const short = await startEmulator({ config: { timing: { realtime_session_max_ms: 200 } } });
    try {
      const client = await RealtimeClient.connect({
        wsBaseUrl: short.wsUrl,
        apiKey: 'emulator-key',
        model: 'svc-voice-latest',
        session: { turnDetection: null },
      });
      const events = collect(client);
      const [code] = await new Promise<[number, string]>((resolve) => client.once('close', (...args) => resolve(args)));
      expect(code).toBe(1000);
      expect(client.open).toBe(false);
      // Filtered after the close: the reason arrived before it, as an error event the bot can act on.
      expect(events.filter((event) => event.type === 'error')).toEqual([
        {
          type: 'error',
          code: 'session_expired',
          message: expect.stringContaining('maximum duration'),
          errorType: 'invalid_request_error',
          param: undefined,
          clientEventId: undefined,
        },
      ]);
    } finally {
      await short.close();
    }
  });

  describe('against a gateway that behaves otherwise than the emulator', () => {
    let scripted: ScriptedRealtime;
    beforeAll(async () => {
      scripted = await ScriptedRealtime.start();
    });
    afterAll(() => scripted.close());
    // Tests that hold back the confirmation turn it off; a failing one must not leave it off for the next.
    afterEach(() => {
      scripted.configure = true;
    });
    const connect = (timeoutMs = 5000) =>
      RealtimeClient.connect({
        wsBaseUrl: scripted.url,
        apiKey: 'scripted-key-0001',
        model: 'svc-voice-latest',
        session: { turnDetection: null },
        timeoutMs,
      });
    /** The next socket to open, once its session.update arrived. */
    const nextConfiguring = () => {
      const index = scripted.sockets.length;
      return scripted.waitFor(
        () => (scripted.sockets[index]?.sent('session.update')[0] ? scripted.sockets[index] : undefined),
        'the session.update',
      );
    };

    it('fails clearly, after a bounded wait, when the session is never confirmed', async () => {
      scripted.configure = false;
      const error = await connect(300).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RealtimeConnectionError);
      expect(String(error)).toContain('did not confirm the session (no session.updated within 300 ms)');
    });

    it('is refused at once by an error that names its session.update', async () => {
      scripted.configure = false;
      const configuring = nextConfiguring();
      const connecting = connect().catch((caught: unknown) => caught);
      const socket = await configuring;
      const update = socket.sent('session.update')[0]!;
      socket.send({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code: 'invalid_value',
          message: 'Unknown voice.',
          param: 'session.voice',
          event_id: update.event_id,
        },
      });
      const error = await connecting;
      expect(error).toBeInstanceOf(RealtimeConnectionError);
      expect(error).toMatchObject({ code: 'invalid_value', message: 'the realtime session refused its configuration: Unknown voice.' });
    });

    it('comes up despite an unrelated error before the confirmation, and says which event an error answers', async () => {
      scripted.configure = false;
      const configuring = nextConfiguring();
      const connecting = connect();
      const socket = await configuring;
      socket.send({ type: 'error', error: 'Rate limits are being updated.', code: 'notice' });
      socket.send({ type: 'session.updated', session: {} });
      const client = await connecting;
      const error = until(client, 'error');
      client.cancelResponse();
      const cancel = await scripted.waitFor(() => socket.sent('response.cancel')[0], 'the cancel');
      socket.send({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code: 'whatever_it_is_called',
          message: 'Nothing to cancel.',
          param: null,
          event_id: cancel.event_id,
        },
      });
      expect(await error).toMatchObject({ type: 'error', clientEventType: 'response.cancel', message: 'Nothing to cancel.' });
      client.close();
    });

    it('closes the connection on an event too big to be one, rather than holding it', async () => {
      const configuring = nextConfiguring();
      const client = await connect();
      const socket = await configuring;
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      socket.send({ type: 'response.output_audio.delta', delta: 'A'.repeat(9 * 1024 * 1024) });
      // Without a bound it would be read, all 12 MB of it, as an answer's audio; with one the socket goes.
      await closed;
      expect(client.open).toBe(false);
    });
  });

  describe('realtime auth both ways', () => {
    const base = { model: 'svc-voice-latest', session: { turnDetection: null } };
    let gateway: GatewayClient;
    let scripted: ScriptedRealtime;
    beforeAll(async () => {
      gateway = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: 'emulator-key', layer: 'native' });
      scripted = await ScriptedRealtime.start();
    });
    afterAll(async () => {
      await gateway.close();
      await scripted.close();
    });

    it.each([
      ['the Authorization header', (wsBaseUrl: string) => RealtimeClient.connect({ ...base, wsBaseUrl, apiKey: 'emulator-key' })],
      [
        'a client secret from the gateway, as a subprotocol',
        (wsBaseUrl: string) => RealtimeClient.connectWithClientSecret(gateway, { ...base, wsBaseUrl }),
      ],
      [
        'the key as the compat-insecure-api-key subprotocol',
        (wsBaseUrl: string) => RealtimeClient.connect({ ...base, wsBaseUrl, apiKey: 'emulator-key', keyIn: 'subprotocol' }),
      ],
    ])('opens a session authorised by %s', async (_label, open) => {
      const client = await open(emulator.wsUrl);
      const session = emulator.realtime.sessions.at(-1)!;
      expect(session.keyId).toBe(emulator.keyIdOf('emulator-key'));
      expect(session.clientEvents[0]?.event.type).toBe('session.update');
      client.close();
    });

    it('puts each credential where the spec says, and offers no compression', async () => {
      const secrets = {
        vendor: 'acme',
        createClientSecret: () => Promise.resolve({ value: 'ephemeral-secret-1234', expiresAt: new Date(Date.now() + 60_000) }),
      };
      const opened = [
        await RealtimeClient.connect({ ...base, wsBaseUrl: scripted.url, apiKey: 'long-lived-key-5678' }),
        await RealtimeClient.connectWithClientSecret(secrets, { ...base, wsBaseUrl: scripted.url }),
        await RealtimeClient.connect({ ...base, wsBaseUrl: scripted.url, apiKey: 'long-lived-key-5678', keyIn: 'subprotocol' }),
      ];
      // No permessage-deflate either: base64 audio hardly compresses, and zlib on every message costs CPU.
      expect(scripted.sockets.slice(-3).map((socket) => socket.handshake)).toEqual([
        { authorization: 'Bearer long-lived-key-5678', protocols: undefined, extensions: undefined },
        { authorization: undefined, protocols: 'acme-client-secret.ephemeral-secret-1234', extensions: undefined },
        { authorization: undefined, protocols: 'compat-insecure-api-key.long-lived-key-5678', extensions: undefined },
      ]);
      for (const client of opened) client.close();
    });

    it('is refused with a secret the gateway did not issue', async () => {
      const error = await RealtimeClient.connect({ ...base, wsBaseUrl: emulator.wsUrl, clientSecret: 'never-issued-secret-00' }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(RealtimeConnectionError);
      expect(error).toMatchObject({ status: 401 });
      expect(String(error)).not.toContain('never-issued-secret-00');
    });
  });
});
