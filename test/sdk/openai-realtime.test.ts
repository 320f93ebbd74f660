import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { OpenAIRealtimeError } from 'openai/realtime/index';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { RealtimeClientEvent, RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { waitUntil } from '../../src/lib/wait-until.ts';
import { analyzeTone, REALTIME_PCM } from 'discord-standin';
import { EMULATOR_KEY, QUICK_VAD, VOICE_MODEL, base64Frames, pcmOf, spokenTurn } from './sdk-support.ts';

// The openai SDK's realtime client for Node (OpenAIRealtimeWS, on ws) against the emulator started with
// TLS, as `npm run emulator -- --tls`: the SDK speaks only wss:. The SDK is code nobody here wrote, so
// what it makes of the emulator's events is a check of their fidelity: the event names it types, the
// fields it reads, how it reports an error event and a refused connection.

let emulator: Emulator;
const sockets: OpenAIRealtimeWS[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ tls: true, config: { timing: { generation_ms: 100 } } });
  emulator.realtime.options.paceFactor = 20;
});
afterEach(() => {
  for (const rt of sockets.splice(0)) rt.close();
});
afterAll(() => emulator.close());

type ServerEventOf<Type extends RealtimeServerEvent['type']> = Extract<RealtimeServerEvent, { type: Type }>;

/** Every event the SDK hands over, and every error it reports, in order; next() walks through them. */
class Received {
  readonly events: RealtimeServerEvent[] = [];
  readonly errors: OpenAIRealtimeError[] = [];
  #cursor = 0;
  readonly #rt: OpenAIRealtimeWS;

  constructor(rt: OpenAIRealtimeWS) {
    this.#rt = rt;
    rt.on('event', (event) => this.events.push(event));
    rt.on('error', (error) => this.errors.push(error));
  }

  /** The next event of this type after the last one next() returned. */
  next<Type extends RealtimeServerEvent['type']>(type: Type, timeoutMs = 5000): Promise<ServerEventOf<Type>> {
    const find = (): ServerEventOf<Type> | undefined => {
      for (let index = this.#cursor; index < this.events.length; index++) {
        const event = this.events[index]!;
        if (event.type === type) {
          this.#cursor = index + 1;
          return event as ServerEventOf<Type>;
        }
      }
      return undefined;
    };
    return waitUntil({
      check: find,
      subscribe: (wake, fail) => {
        const onClose = () => fail(new Error(`the socket closed before ${type}`));
        this.#rt.on('event', wake);
        this.#rt.socket.once('close', onClose);
        return () => {
          this.#rt.off('event', wake);
          this.#rt.socket.off('close', onClose);
        };
      },
      timeoutMs,
      timeoutError: () => new Error(`no ${type}; the SDK saw ${this.events.map((event) => event.type).join(', ')}`),
    });
  }

  /** The audio a response streamed, joined. */
  audioOf(responseId: string): Int16Array {
    return pcmOf(
      this.events.flatMap((event) =>
        event.type === 'response.output_audio.delta' && event.response_id === responseId ? [event.delta] : [],
      ),
    );
  }

  transcriptOf(responseId: string): string | undefined {
    const done = this.events.find((event) => event.type === 'response.output_audio_transcript.done' && event.response_id === responseId);
    return done?.type === 'response.output_audio_transcript.done' ? done.transcript : undefined;
  }
}

/** The client a user of the SDK writes: its base URL is the native layer, over HTTPS. */
function openaiClient(apiKey = EMULATOR_KEY): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${emulator.baseUrl}/native/v1` });
}

function openRealtime(apiKey = EMULATOR_KEY): { rt: OpenAIRealtimeWS; received: Received } {
  // `options` go to ws: `ca` trusts the certificate the emulator made at start.
  const rt = new OpenAIRealtimeWS({ model: VOICE_MODEL, options: { ca: emulator.caCert } }, openaiClient(apiKey));
  sockets.push(rt);
  return { rt, received: new Received(rt) };
}

/**
 * Sends an event of the gateway contract that the SDK's types (OpenAI's GA realtime API) do not
 * describe: `voice` and `turn_detection` at the top of `session` (GA puts them under `audio`), and the
 * `force_message` item. The SDK sends whatever event it is given as JSON.
 */
function sendContractEvent(rt: OpenAIRealtimeWS, event: { type: string } & Record<string, unknown>): void {
  rt.send(event as unknown as RealtimeClientEvent);
}

async function openSession(session: Record<string, unknown>): Promise<{ rt: OpenAIRealtimeWS; received: Received }> {
  const opened = openRealtime();
  await once(opened.rt.socket, 'open');
  sendContractEvent(opened.rt, { type: 'session.update', session });
  await opened.received.next('session.updated');
  return opened;
}

function append(rt: OpenAIRealtimeWS, pcm: Int16Array): void {
  for (const audio of base64Frames(pcm)) rt.send({ type: 'input_audio_buffer.append', audio });
}

describe('the openai SDK realtime client over wss', () => {
  it('connects with the Authorization header and reads the session the emulator describes', async () => {
    const { rt, received } = openRealtime();
    await once(rt.socket, 'open');
    expect(rt.url.toString()).toBe(`${emulator.wsUrl}/native/v1/realtime?model=${VOICE_MODEL}`);
    // The fields the contract shares with the SDK's own session type: formats, instructions, tools.
    rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        instructions: 'Be brief.',
        audio: { input: { format: { type: 'audio/pcm', rate: 24000 } }, output: { format: { type: 'audio/pcmu' } } },
        tools: [
          {
            type: 'function',
            name: 'get_weather',
            description: 'The weather in a city.',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        ],
      },
    });
    const created = await received.next('session.created');
    const updated = await received.next('session.updated');
    expect(created.session).toMatchObject({ id: expect.stringMatching(/^sess_/), model: VOICE_MODEL });
    expect(updated.session).toMatchObject({
      instructions: 'Be brief.',
      audio: { input: { format: { type: 'audio/pcm', rate: 24000 } }, output: { format: { type: 'audio/pcmu', rate: 8000 } } },
      tools: [{ type: 'function', name: 'get_weather' }],
    });
    expect(received.errors).toEqual([]);
  });

  it('a server-VAD turn: speech then silence is heard, and the echo comes back as audio and a transcript', async () => {
    const { rt, received } = await openSession({ turn_detection: QUICK_VAD, voice: 'Ara' });
    expect(received.events.find((event) => event.type === 'session.updated')).toMatchObject({
      session: { voice: 'ara', turn_detection: QUICK_VAD },
    });
    const { before, speech, after } = spokenTurn();
    append(rt, before);
    append(rt, speech);
    append(rt, after);
    expect(await received.next('input_audio_buffer.speech_started')).toMatchObject({ audio_start_ms: 100 });
    expect(await received.next('input_audio_buffer.speech_stopped')).toMatchObject({ audio_end_ms: 700 });
    expect(await received.next('conversation.item.input_audio_transcription.completed')).toMatchObject({ transcript: '(0.4 s of speech)' });
    const done = await received.next('response.done');
    expect(done.response).toMatchObject({ status: 'completed', output: [{ type: 'message', role: 'assistant' }] });
    const responseId = done.response.id ?? '';
    expect(Array.from(received.audioOf(responseId))).toEqual(Array.from(speech));
    expect(received.transcriptOf(responseId)).toBe('Echo of 0.4 seconds.');
    expect(received.errors).toEqual([]);
  });

  it('manual mode: nothing is answered until commit and response.create', async () => {
    const { rt, received } = await openSession({ turn_detection: null });
    const { speech } = spokenTurn(300);
    append(rt, speech);
    rt.send({ type: 'input_audio_buffer.commit' });
    const committed = await received.next('input_audio_buffer.committed');
    const userItem = await received.next('conversation.item.done');
    expect(userItem.item).toMatchObject({
      id: committed.item_id,
      type: 'message',
      role: 'user',
      content: [{ type: 'input_audio', transcript: '(0.3 s of speech)' }],
    });
    expect(received.events.some((event) => event.type === 'response.created')).toBe(false);
    rt.send({ type: 'response.create' });
    const done = await received.next('response.done');
    expect(Array.from(received.audioOf(done.response.id ?? ''))).toEqual(Array.from(speech));
    expect(received.errors).toEqual([]);
  });

  it('response.cancel stops an answer halfway: response.done says cancelled, and less audio came than was due', async () => {
    // A slower pace for this session, so that the cancel lands while the answer is playing.
    emulator.realtime.options.paceFactor = 2;
    const opened = await openSession({ turn_detection: null }).finally(() => (emulator.realtime.options.paceFactor = 20));
    const { rt, received } = opened;
    const { speech } = spokenTurn(2000);
    append(rt, speech);
    rt.send({ type: 'input_audio_buffer.commit' });
    rt.send({ type: 'response.create' });
    const first = await received.next('response.output_audio.delta');
    rt.send({ type: 'response.cancel' });
    const done = await received.next('response.done');
    expect(done.response).toMatchObject({ id: first.response_id, status: 'cancelled' });
    expect(received.audioOf(first.response_id).length).toBeLessThan(speech.length / 2);
    // Nothing is left to cancel: the error event reaches the SDK's error listener, with its code.
    rt.send({ type: 'response.cancel', event_id: 'cancel_again' });
    await received.next('error');
    expect(received.errors).toHaveLength(1);
    expect(received.errors[0]).toBeInstanceOf(OpenAIRealtimeError);
    expect(received.errors[0]?.error).toMatchObject({ code: 'response_cancel_not_active', event_id: 'cancel_again' });
  });

  it('conversation.item.truncate cuts an answer at what was played; a cut past its end is an error event the SDK reports', async () => {
    const { rt, received } = await openSession({ turn_detection: null });
    const text = 'Your video is ready.';
    sendContractEvent(rt, {
      type: 'conversation.item.create',
      item: { type: 'force_message', role: 'assistant', content: [{ type: 'output_text', text }] },
    });
    const delta = await received.next('response.output_audio.delta');
    await received.next('response.done');
    rt.send({ type: 'conversation.item.truncate', item_id: delta.item_id, content_index: 0, audio_end_ms: 300 });
    expect(await received.next('conversation.item.truncated')).toMatchObject({
      item_id: delta.item_id,
      content_index: 0,
      audio_end_ms: 300,
    });
    rt.send({ type: 'conversation.item.truncate', item_id: delta.item_id, content_index: 0, audio_end_ms: 60_000, event_id: 'too_far' });
    const error = await received.next('error');
    expect(error.error).toMatchObject({ code: 'invalid_audio_end_ms', param: 'audio_end_ms', event_id: 'too_far' });
    expect(received.errors.map((reported) => reported.error?.code)).toEqual(['invalid_audio_end_ms']);
    expect(rt.socket.readyState).toBe(rt.socket.OPEN);
  });

  it('a force_message is spoken as its own response: a tone as long as the text, its transcript, response.done', async () => {
    const { rt, received } = await openSession({});
    const text = 'The video is ready.';
    sendContractEvent(rt, {
      type: 'conversation.item.create',
      item: { type: 'force_message', role: 'assistant', interruptible: true, content: [{ type: 'output_text', text }] },
    });
    const created = await received.next('response.created');
    const done = await received.next('response.done');
    expect(done.response).toMatchObject({ id: created.response.id, status: 'completed' });
    const pcm = received.audioOf(done.response.id ?? '');
    expect((pcm.length / REALTIME_PCM.sampleRate) * 1000).toBeCloseTo(text.length * 60, -1);
    expect(analyzeTone(pcm, { format: REALTIME_PCM }).dominantHz).toBeCloseTo(880, -1);
    expect(received.transcriptOf(done.response.id ?? '')).toBe(text);
    expect(received.errors).toEqual([]);
  });

  it('a bad key: the upgrade is refused with 401 and the SDK reports the failed connection', async () => {
    const sessionsBefore = emulator.realtime.sessions.length;
    const { rt, received } = openRealtime('not-a-key');
    // Not once(): it rejects on the socket's own 'error', which the SDK turns into its error event.
    await new Promise((resolve) => rt.socket.once('close', resolve));
    expect(received.errors).toHaveLength(1);
    expect(received.errors[0]).toBeInstanceOf(OpenAIRealtimeError);
    expect(received.errors[0]?.message).toBe('Unexpected server response: 401');
    expect(received.events).toEqual([]);
    expect(emulator.realtime.sessions).toHaveLength(sessionsBefore);
  });
});

describe('a process started with NODE_EXTRA_CA_CERTS', () => {
  it('trusts the emulator with no ca option: videos over https and realtime over wss, as README shows; the browser flavour is refused', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const { stdout } = await promisify(execFile)(`${root}scripts/node`, [`${root}test/sdk/openai-extra-ca-child.ts`, emulator.baseUrl], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_EXTRA_CA_CERTS: emulator.caCertPath ?? '' },
      timeout: 20_000,
    });
    expect(JSON.parse(stdout)).toEqual({
      status: 'succeeded',
      videoBox: 'ftyp',
      instructions: 'Be brief.',
      runtimeFetchStatus: 200,
      browserFlavourOutcome: expect.stringMatching(/^error: /),
    });
  });
});
