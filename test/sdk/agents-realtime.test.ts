import { RealtimeAgent, RealtimeSession, tool, type RealtimeItem } from '@openai/agents-realtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { waitUntil } from '../../src/lib/wait-until.ts';
import { EMULATOR_KEY, QUICK_VAD, VOICE_MODEL, scriptTurn, spokenTurn } from './sdk-support.ts';

// OpenAI's Agents SDK for voice (@openai/agents-realtime) against the emulator over ws: a RealtimeSession
// builds its history from the emulator's item events, and runs a function tool when the emulator's
// scripted model calls it (POST /_emulator/realtime/script), sends the output back and hears the answer.
//
// The SDK writes the session in OpenAI's GA shape, with voice and turn detection under `audio`; the
// contract has them at the top of `session`, so `providerData` (merged into the session as sent) sets
// them there.

let emulator: Emulator;
const sessions: RealtimeSession[] = [];

beforeAll(async () => {
  emulator = await startEmulator();
  emulator.realtime.options.paceFactor = 20;
});
afterEach(() => {
  for (const session of sessions.splice(0)) session.close();
});
afterAll(() => emulator.close());

const toolCalls: string[] = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => {
    toolCalls.push(city);
    return JSON.stringify({ city, temperature_c: 21 });
  },
});

type EmulatedSession = Emulator['realtime']['sessions'][number];

/** A connected RealtimeSession, and the emulator's side of it once the SDK's session.update is applied. */
async function connectedSession(): Promise<{ session: RealtimeSession; errors: unknown[]; emulated: EmulatedSession }> {
  const agent = new RealtimeAgent({ name: 'weather', instructions: 'Answer briefly.', tools: [getWeather] });
  const session = new RealtimeSession(agent, {
    transport: 'websocket',
    model: VOICE_MODEL,
    config: { providerData: { turn_detection: QUICK_VAD, voice: 'rex' } },
  });
  sessions.push(session);
  const errors: unknown[] = [];
  session.on('error', (error) => errors.push(error));
  await session.connect({ apiKey: EMULATOR_KEY, url: `${emulator.wsUrl}/native/v1/realtime?model=${VOICE_MODEL}` });
  const emulated = emulator.realtime.sessions.at(-1);
  if (!emulated) throw new Error('the emulator has no session');
  await emulator.realtime.waitForClientEvent((event, of) => of === emulated && event.type === 'session.update');
  return { session, errors, emulated };
}

function speak(session: RealtimeSession): void {
  const { before, speech, after } = spokenTurn();
  for (const part of [before, speech, after]) {
    for (let offset = 0; offset < part.length; offset += 480) session.sendAudio(part.slice(offset, offset + 480).buffer);
  }
}

/** Waits until the session's history passes `check`. */
function historyWhere(session: RealtimeSession, check: (history: RealtimeItem[]) => boolean): Promise<RealtimeItem[]> {
  return waitUntil({
    check: () => (check(session.history) ? session.history : undefined),
    subscribe: (wake) => {
      session.on('history_updated', wake);
      return () => session.off('history_updated', wake);
    },
    timeoutMs: 5000,
    timeoutError: () => new Error(`the history never got there: ${JSON.stringify(session.history)}`),
  });
}

function assistantAnswered(history: RealtimeItem[]): boolean {
  return history.some((item) => item.type === 'message' && item.role === 'assistant' && item.status === 'completed');
}

describe('@openai/agents-realtime against the emulator', () => {
  it('a spoken turn lands in the history with its scripted transcript, and the answer after it', async () => {
    const { session, errors, emulated } = await connectedSession();
    // Applied as the SDK sent it: the tool from the agent, the contract's fields from providerData.
    const updated = emulated.serverEvents.findLast((entry) => entry.event.type === 'session.updated');
    expect(updated?.event).toMatchObject({
      session: { voice: 'rex', turn_detection: QUICK_VAD, tools: [{ type: 'function', name: 'get_weather' }] },
    });
    await scriptTurn(emulator, { session_id: emulated.id, transcript: 'Hello, who is there?' });
    speak(session);
    const history = await historyWhere(session, assistantAnswered);
    expect(history).toMatchObject([
      { type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: 'Hello, who is there?' }] },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'Echo of 0.4 seconds.' }] },
    ]);
    expect(errors).toEqual([]);
  });

  it('runs a function tool the scripted model calls, sends its output back, and hears the answer', async () => {
    const { session, errors, emulated } = await connectedSession();
    await scriptTurn(emulator, {
      session_id: emulated.id,
      transcript: 'What is the weather in Paris?',
      response: { function_call: { name: 'get_weather', arguments: { city: 'Paris' } } },
    });
    const toolEnded = new Promise<string>((resolve) =>
      session.once('agent_tool_end', (_context, _agent, _tool, result) => resolve(result)),
    );
    speak(session);
    const output = JSON.stringify({ city: 'Paris', temperature_c: 21 });
    expect(await toolEnded).toBe(output);
    expect(toolCalls).toContain('Paris');
    const history = await historyWhere(session, (items) => items.some((item) => item.type === 'function_call') && assistantAnswered(items));
    expect(history).toMatchObject([
      { type: 'message', role: 'user', content: [{ type: 'input_audio', transcript: 'What is the weather in Paris?' }] },
      { type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed', output },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: output }] },
    ]);
    // The emulator heard the output as a function_call_output of the call, then a response.create.
    const answered = await emulator.realtime.waitForClientEvent(
      (event, of) => of === emulated && event.type === 'conversation.item.create',
    );
    expect(answered.event.event).toMatchObject({ item: { type: 'function_call_output', output } });
    expect(errors).toEqual([]);
  });
});
