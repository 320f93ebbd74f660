import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { RealtimeClient, RealtimeConnectionError } from '../../src/gateway/realtime/client.ts';
import type { RealtimeServerEvent } from '../../src/gateway/realtime/events.ts';
import { REALTIME_PCM } from '../support/discord/audio-format.ts';
import { generateSilence, generateTone } from '../support/discord/audio-tone.ts';

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
      session: { voice: 'eve', instructions: 'Be brief.', turnDetection: { type: 'server_vad', silenceDurationMs: 200, prefixPaddingMs: 0 } },
    });
    const events = collect(client);
    const { session: emulated, event: first } = await emulator.realtime.waitForClientEvent((event) => event.type === 'session.update');
    expect(emulated.clientEvents[0]?.event).toBe(first.event);
    expect(first.event).toMatchObject({
      session: { voice: 'eve', instructions: 'Be brief.', turn_detection: { type: 'server_vad', silence_duration_ms: 200 }, audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } } },
    });

    const speech = generateTone({ hz: 500, ms: 300, format: REALTIME_PCM });
    const done = until(client, 'response.done');
    for (const part of [speech, generateSilence(300, REALTIME_PCM)]) {
      for (let offset = 0; offset < part.length; offset += 480) client.appendAudio(part.subarray(offset, offset + 480));
    }
    expect(await done).toMatchObject({ status: 'completed' });
    const audio = Buffer.concat(events.flatMap((event) => (event.type === 'response.output_audio.delta' ? [event.audio] : [])));
    expect(Array.from(new Int16Array(audio.buffer, audio.byteOffset, audio.length / 2))).toEqual(Array.from(speech));
    expect(events.map((event) => event.type)).toContain('input_audio_buffer.speech_started');
    expect(events.find((event) => event.type === 'conversation.item.input_audio_transcription.completed')).toMatchObject({ transcript: '(0.3 s of speech)' });
    client.close();
  });

  it('sends force messages, cancels and truncates', async () => {
    emulator.realtime.options.paceFactor = 1;
    const client = await RealtimeClient.connect({ wsBaseUrl: emulator.wsUrl, apiKey: 'emulator-key', model: 'svc-voice-latest', session: { turnDetection: null } });
    const delta = until(client, 'response.output_audio.delta');
    client.forceMessage('Your video is ready in #general.', { interruptible: true });
    const first = await delta;
    if (first.type !== 'response.output_audio.delta') throw new Error('expected audio');
    const done = until(client, 'response.done');
    client.cancelResponse();
    expect(await done).toMatchObject({ status: 'cancelled' });
    const truncated = until(client, 'conversation.item.truncated');
    client.truncate(first.itemId, first.contentIndex, 60);
    expect(await truncated).toMatchObject({ itemId: first.itemId, audioEndMs: 60 });
    const force = await emulator.realtime.waitForClientEvent((event) => event.type === 'conversation.item.create');
    expect(force.event.event).toMatchObject({ item: { type: 'force_message', role: 'assistant', interruptible: true, content: [{ type: 'output_text', text: 'Your video is ready in #general.' }] } });
    expect(force.session.clientEvents.some((entry) => entry.event.type === 'response.create')).toBe(false);
    emulator.realtime.options.paceFactor = 20;
    client.close();
  });

  it.each([
    ['a wrong key', { apiKey: 'not-a-key-123456', model: 'svc-voice-latest' }, 401, 'invalid_api_key'],
    ['an unknown model', { apiKey: 'emulator-key', model: 'svc-voice-nope' }, 404, 'model_not_found'],
  ])('reports %s with the status and code of the refused upgrade, never the key', async (_label, options, status, code) => {
    const error = await RealtimeClient.connect({ wsBaseUrl: emulator.wsUrl, session: { turnDetection: null }, ...options }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RealtimeConnectionError);
    expect(error).toMatchObject({ status, code });
    expect(String((error as Error).message)).not.toContain(options.apiKey);
  });

  it('hears why a session ends at its time limit (session_expired), then the close', async () => {
    const short = await startEmulator({ config: { timing: { realtime_session_max_ms: 200 } } });
    try {
      const client = await RealtimeClient.connect({ wsBaseUrl: short.wsUrl, apiKey: 'emulator-key', model: 'svc-voice-latest', session: { turnDetection: null } });
      const events = collect(client);
      const [code] = await new Promise<[number, string]>((resolve) => client.once('close', (...args) => resolve(args)));
      expect(code).toBe(1000);
      expect(client.open).toBe(false);
      // Filtered after the close: the reason arrived before it, as an error event the bot can act on.
      expect(events.filter((event) => event.type === 'error')).toEqual([
        { type: 'error', code: 'session_expired', message: expect.stringContaining('maximum duration'), errorType: 'invalid_request_error', param: undefined, clientEventId: undefined },
      ]);
    } finally {
      await short.close();
    }
  });
});
