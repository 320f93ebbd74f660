import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { analyzeTone, generateSilence, generateTone, REALTIME_PCM } from 'discord-standin';
import { appendInFrames, collectAudio, connectRealtime, type Connection } from './realtime-socket.ts';

// Function tools, and the script that makes the echo model call one: POST /_emulator/realtime/script
// sets what the next user turn is heard as and how the model answers it (a line of text, or a function
// call whose output the model then speaks).

const OTHER_KEY = 'other-voice-key';
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ config: { keys: { [OTHER_KEY]: { group: 'default', quota_usd: 5 } } } });
  emulator.realtime.options.paceFactor = 20;
});
afterAll(() => emulator.close());

const VAD = { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 };
const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

async function configured(session: Record<string, unknown>, key = 'emulator-key'): Promise<{ connection: Connection; sessionId: string }> {
  const connection = await connectRealtime(emulator.wsUrl, { headers: { Authorization: `Bearer ${key}` } });
  connection.send({ type: 'session.update', session });
  const updated = await connection.next('session.updated');
  return { connection, sessionId: String((updated.session as { id: unknown }).id) };
}

async function postScript(body: unknown, headers: Record<string, string> = { authorization: 'Bearer emulator-key' }, method = 'POST') {
  const response = await fetch(`${emulator.baseUrl}/_emulator/realtime/script`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(method === 'POST' ? { body: JSON.stringify(body) } : {}),
  });
  return {
    status: response.status,
    requestId: response.headers.get('x-request-id'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** What the response said, by its output_audio_transcript.done. */
function transcriptOf(connection: Connection, done: Record<string, unknown>): unknown {
  const responseId = (done.response as { id: string }).id;
  return connection.events.find((event) => event.type === 'response.output_audio_transcript.done' && event.response_id === responseId)
    ?.transcript;
}

/** Speaks one 0.3 s turn (server VAD hears it and answers). */
function speak(connection: Connection): void {
  appendInFrames(connection, generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM }));
  appendInFrames(connection, generateSilence(300, REALTIME_PCM));
}

describe('the script endpoint', () => {
  it("answers in the emulator's error envelope, with a request id: no key, a wrong method, junk fields", async () => {
    expect(await postScript({ transcript: 'hi' }, {})).toMatchObject({
      status: 401,
      requestId: expect.stringMatching(/^req_/),
      body: { error: { code: 'invalid_api_key' } },
    });
    expect(await postScript(undefined, { authorization: 'Bearer emulator-key' }, 'GET')).toMatchObject({
      status: 405,
      body: { error: { code: 'invalid_request_error' } },
    });
    expect(await postScript({ transcrpit: 'typo' })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_request_error', param: 'transcrpit' } },
    });
    expect(await postScript({})).toMatchObject({ status: 400, body: { error: { code: 'invalid_request_error' } } });
    expect(await postScript({ transcript: 42 })).toMatchObject({ status: 400, body: { error: { param: 'transcript' } } });
    expect(await postScript({ response: { text: '' } })).toMatchObject({ status: 400, body: { error: { param: 'response.text' } } });
    expect(await postScript({ response: { function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' } } })).toMatchObject({
      status: 400,
      body: { error: { param: 'response.function_call.arguments' } },
    });
  });

  it("refuses a session it does not know, or another key's, with 404 naming session_id", async () => {
    expect(await postScript({ session_id: 'sess_nope', transcript: 'hi' })).toMatchObject({
      status: 404,
      body: { error: { code: 'not_found', param: 'session_id' } },
    });
    const { connection, sessionId } = await configured({}, OTHER_KEY);
    expect(await postScript({ session_id: sessionId, transcript: 'hi' })).toMatchObject({
      status: 404,
      body: { error: { param: 'session_id' } },
    });
    connection.socket.close();
  });

  it('refuses a function call to a tool the session did not declare, with 400 naming the field', async () => {
    const { connection, sessionId } = await configured({ tools: [WEATHER_TOOL] });
    const pizza = { function_call: { name: 'order_pizza', arguments: {} } };
    const refused = await postScript({ session_id: sessionId, response: pizza });
    expect(refused).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_request_error', param: 'response.function_call.name' } },
    });
    expect(String((refused.body.error as { message: string }).message)).toContain('get_weather');
    // Without a session id, some open session of the key must declare it.
    expect(await postScript({ response: pizza })).toMatchObject({ status: 400, body: { error: { param: 'response.function_call.name' } } });
    connection.socket.close();
  });
});

describe('a scripted turn', () => {
  it('is heard as the scripted transcript, by the next turn of a session of that key only', async () => {
    const other = await configured({ turn_detection: VAD }, OTHER_KEY);
    const mine = await configured({ turn_detection: VAD });
    expect(await postScript({ transcript: 'What is the weather in Paris?' })).toMatchObject({
      status: 200,
      body: { id: expect.any(String), session_id: null },
    });

    speak(other.connection);
    expect(await other.connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.3 s of speech)',
    });
    speak(mine.connection);
    expect(await mine.connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: 'What is the weather in Paris?',
    });
    expect(await mine.connection.next('conversation.item.done')).toMatchObject({
      item: { role: 'user', content: [{ type: 'input_audio', transcript: 'What is the weather in Paris?' }] },
    });
    expect(await mine.connection.next('response.output_audio_transcript.done')).toMatchObject({ transcript: 'Echo of 0.3 seconds.' });
    // Used once: the turn after is the echo's again.
    speak(mine.connection);
    await mine.connection.next('response.done');
    expect(await mine.connection.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: '(0.3 s of speech)',
    });
    other.connection.socket.close();
    mine.connection.socket.close();
  });

  it('is answered with the scripted text, as a tone whose length follows it (manual mode)', async () => {
    const { connection, sessionId } = await configured({ turn_detection: null });
    const text = 'It is sunny in Paris.';
    expect(await postScript({ session_id: sessionId, response: { text } })).toMatchObject({ status: 200, body: { session_id: sessionId } });
    appendInFrames(connection, generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM }));
    connection.send({ type: 'input_audio_buffer.commit' });
    await connection.next('input_audio_buffer.committed');
    connection.send({ type: 'response.create' });
    const { pcm, done } = await collectAudio(connection);
    expect((pcm.length / 24_000) * 1000).toBeCloseTo(text.length * 60, -1);
    expect(analyzeTone(pcm, { format: REALTIME_PCM }).dominantHz).toBeCloseTo(880, -1);
    expect(transcriptOf(connection, done)).toBe(text);
    connection.socket.close();
  });
});

describe('a function call', () => {
  it('follows the tool-call flow, and the model speaks the output it is given', async () => {
    const { connection, sessionId } = await configured({ turn_detection: VAD, tools: [WEATHER_TOOL] });
    const args = { city: 'Paris', unit: 'celsius' };
    expect(
      (
        await postScript({
          session_id: sessionId,
          transcript: 'Weather in Paris?',
          response: { function_call: { name: 'get_weather', arguments: args } },
        })
      ).status,
    ).toBe(200);
    speak(connection);

    const created = await connection.next('response.created');
    const responseId = (created.response as { id: string }).id;
    const added = await connection.next('response.output_item.added');
    expect(added).toMatchObject({
      response_id: responseId,
      output_index: 0,
      item: { type: 'function_call', id: expect.any(String), call_id: expect.any(String), name: 'get_weather', arguments: '' },
    });
    const item = added.item as { id: string; call_id: string };
    const done = await connection.next('response.function_call_arguments.done');
    expect(done).toMatchObject({ response_id: responseId, item_id: item.id, call_id: item.call_id, name: 'get_weather' });
    expect(JSON.parse(String(done.arguments))).toEqual(args);
    const deltas = connection.events.filter((event) => event.type === 'response.function_call_arguments.delta');
    expect(deltas.every((delta) => delta.call_id === item.call_id && delta.item_id === item.id)).toBe(true);
    expect(deltas.map((delta) => delta.delta).join('')).toBe(done.arguments);
    expect(await connection.next('response.output_item.done')).toMatchObject({
      item: { id: item.id, type: 'function_call', status: 'completed', call_id: item.call_id, arguments: done.arguments },
    });
    const responseDone = await connection.next('response.done');
    expect(responseDone).toMatchObject({
      response: {
        id: responseId,
        status: 'completed',
        output: [{ type: 'function_call', call_id: item.call_id, name: 'get_weather', arguments: done.arguments }],
      },
    });
    expect(connection.events.some((event) => event.type === 'response.output_audio.delta')).toBe(false);
    expect(connection.events.find((event) => event.type === 'conversation.item.input_audio_transcription.completed')).toMatchObject({
      transcript: 'Weather in Paris?',
    });

    const output = JSON.stringify({ temperature: 21, sky: 'clear' });
    connection.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: item.call_id, output } });
    expect(await connection.next('conversation.item.added')).toMatchObject({
      previous_item_id: item.id,
      item: { type: 'function_call_output', call_id: item.call_id, output },
    });
    connection.send({ type: 'response.create' });
    const spoken = await collectAudio(connection);
    expect((spoken.pcm.length / 24_000) * 1000).toBeCloseTo(output.length * 60, -1);
    expect(transcriptOf(connection, spoken.done)).toBe(output);
    connection.socket.close();
  });

  it('speaks the scripted text after the output, when the script gave both', async () => {
    const { connection, sessionId } = await configured({ turn_detection: VAD, tools: [WEATHER_TOOL] });
    await postScript({
      session_id: sessionId,
      response: { text: 'It is 21 degrees and clear.', function_call: { name: 'get_weather', arguments: { city: 'Paris' } } },
    });
    speak(connection);
    const call = (await connection.next('response.output_item.done')).item as { call_id: string };
    await connection.next('response.done');
    connection.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: call.call_id, output: '{"temperature":21}' },
    });
    connection.send({ type: 'response.create' });
    const { done } = await collectAudio(connection);
    expect(transcriptOf(connection, done)).toBe('It is 21 degrees and clear.');
    connection.socket.close();
  });

  it('refuses an output for an unknown call, one that is not a string, and a second output for a call', async () => {
    const { connection, sessionId } = await configured({ turn_detection: VAD, tools: [WEATHER_TOOL] });
    connection.send({
      type: 'conversation.item.create',
      event_id: 'evt_unknown',
      item: { type: 'function_call_output', call_id: 'call_nope', output: '{}' },
    });
    const unknown = await connection.next('error');
    expect(unknown).toMatchObject({
      error: { type: 'invalid_request_error', code: 'invalid_value', param: 'item.call_id', event_id: 'evt_unknown' },
    });
    expect(String((unknown.error as { message: string }).message)).toContain('call_nope');

    await postScript({ session_id: sessionId, response: { function_call: { name: 'get_weather', arguments: { city: 'Oslo' } } } });
    speak(connection);
    const call = (await connection.next('response.output_item.done')).item as { call_id: string };
    connection.send({
      type: 'conversation.item.create',
      event_id: 'evt_number',
      item: { type: 'function_call_output', call_id: call.call_id, output: 21 },
    });
    expect(await connection.next('error')).toMatchObject({
      error: { code: 'invalid_value', param: 'item.output', event_id: 'evt_number' },
    });
    connection.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: call.call_id, output: '{"temperature":-3}' },
    });
    await connection.next('conversation.item.done');
    connection.send({
      type: 'conversation.item.create',
      event_id: 'evt_again',
      item: { type: 'function_call_output', call_id: call.call_id, output: '{}' },
    });
    expect(await connection.next('error')).toMatchObject({
      error: { code: 'invalid_value', param: 'item.call_id', event_id: 'evt_again' },
    });
    connection.socket.close();
  });
});
