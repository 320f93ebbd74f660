// The voice session's side of the function-call flow (docs/gateway.md, "Function tools"), against a
// scripted realtime server that sends what the emulator never does: a call only in response.done, a
// function nobody declared, the same call twice, a call in an answer that was talked over. The real
// @discordjs/voice is connected to the Discord stand-in's voice server.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VoiceCaller, VoiceVideoRequest, VoiceVideoRequests } from '../../src/ports/voice-video.ts';
import { samplesToBytes } from '../../src/voice/audio/format.ts';
import type { VoiceSession } from '../../src/voice/session.ts';
import type { VoiceFunctionCall } from '../../src/voice/session-options.ts';
import { runToolCall } from '../../src/voice/tools.ts';
import { audible, generateTone, REALTIME_PCM, type VoiceServer } from 'discord-standin';
import type { ScriptedRealtime, ScriptedSocket } from '../support/scripted-realtime.ts';
import { startScriptedSession, startScriptedVoice, type ScriptedVoice } from '../support/scripted-voice.ts';

const BOT_ID = '100000000000000002';
const USER_ID = '400000000000000002';
const GUILD_ID = '200000000000000002';
const CHANNEL_ID = '300000000000000002';

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
  voice.clearBotAudio(GUILD_ID);
});

afterAll(() => rig.close());

const CALLER: VoiceCaller = {
  guildId: GUILD_ID,
  channelId: 'text',
  userId: USER_ID,
  displayName: 'member',
  roleIds: [],
  isServerManager: false,
  alsoHeard: [],
};

/** A session whose tool calls run through the real argument checks against a video part that records what it is asked. */
async function startSession(): Promise<{ socket: ScriptedSocket; asked: VoiceVideoRequest[]; calls: VoiceFunctionCall[] }> {
  const asked: VoiceVideoRequest[] = [];
  const calls: VoiceFunctionCall[] = [];
  const requests: VoiceVideoRequests = {
    generate: (_caller, request) => {
      asked.push(request);
      return Promise.resolve({ status: 'submitted', message: `The video is being made: task t${asked.length}.`, task: `t${asked.length}` });
    },
    status: () => Promise.resolve({ status: 'not_found', message: 'You have no videos on this server yet.' }),
  };
  const started = await startScriptedSession(rig, {
    onFunctionCall: (call) => {
      calls.push(call);
      return runToolCall(requests, CALLER, call.name, call.arguments);
    },
  });
  session = started.session;
  return { socket: started.socket, asked, calls };
}

const outputs = (socket: ScriptedSocket) =>
  socket.received
    .filter(
      (event) =>
        event.type === 'conversation.item.create' && (event.item as { type?: unknown } | undefined)?.type === 'function_call_output',
    )
    .map((event) => event.item as { call_id: string; output: string });
const creates = (socket: ScriptedSocket) => socket.received.filter((event) => event.type === 'response.create').length;

function functionCallItem(callId: string, name: string, args: string): Record<string, unknown> {
  return { type: 'function_call', id: `item_${callId}`, call_id: callId, name, arguments: args, status: 'completed' };
}

describe('function calls in a voice session', () => {
  it('acts on a call that appears only in response.done, answers it and asks for a response', async () => {
    const { socket, asked } = await startSession();
    socket.send({ type: 'response.created', response: { id: 'resp_1' } });
    socket.send({
      type: 'response.done',
      response: {
        id: 'resp_1',
        status: 'completed',
        output: [functionCallItem('call_1', 'generate_video', '{"prompt":"a fox surfing at sunset","duration":4}')],
      },
    });
    const [output] = await realtime.waitFor(() => (outputs(socket).length > 0 ? outputs(socket) : undefined), 'the function output');
    expect(output).toMatchObject({
      call_id: 'call_1',
      output: JSON.stringify({ status: 'submitted', message: 'The video is being made: task t1.', task: 't1' }),
    });
    await realtime.waitFor(() => (creates(socket) === 1 ? true : undefined), 'the response.create after the output');
    expect(asked).toEqual([{ prompt: 'a fox surfing at sunset', duration: 4, aspectRatio: undefined, resolution: undefined }]);
  });

  it('runs a call announced by its events and again in response.done once, and a second identical call of the turn is not submitted twice', async () => {
    const { socket, asked } = await startSession();
    const args = '{"prompt":"a lighthouse"}';
    socket.send({ type: 'response.created', response: { id: 'resp_2' } });
    socket.send({
      type: 'response.output_item.added',
      response_id: 'resp_2',
      output_index: 0,
      item: { ...functionCallItem('call_2', 'generate_video', ''), status: 'in_progress' },
    });
    socket.send({
      type: 'response.function_call_arguments.delta',
      response_id: 'resp_2',
      item_id: 'item_call_2',
      call_id: 'call_2',
      delta: args,
    });
    socket.send({
      type: 'response.function_call_arguments.done',
      response_id: 'resp_2',
      item_id: 'item_call_2',
      call_id: 'call_2',
      name: 'generate_video',
      arguments: args,
    });
    socket.send({
      type: 'response.done',
      response: {
        id: 'resp_2',
        status: 'completed',
        output: [
          functionCallItem('call_2', 'generate_video', args),
          functionCallItem('call_3', 'generate_video', args),
          functionCallItem('call_4', 'video_status', '{}'),
        ],
      },
    });
    const answered = await realtime.waitFor(() => (outputs(socket).length === 3 ? outputs(socket) : undefined), 'three outputs');
    expect(asked).toHaveLength(1);
    const byCall = new Map(answered.map((output) => [output.call_id, output.output]));
    expect([...byCall.keys()].sort()).toEqual(['call_2', 'call_3', 'call_4']);
    expect(byCall.get('call_3')).toBe(byCall.get('call_2'));
    expect(JSON.parse(byCall.get('call_4')!)).toMatchObject({
      status: 'not_done',
      message: expect.stringContaining('Only one action is carried out per request'),
    });
  });

  it('answers an unknown function and malformed arguments with an output naming the problem', async () => {
    const { socket, asked } = await startSession();
    socket.send({ type: 'response.created', response: { id: 'resp_5' } });
    socket.send({
      type: 'response.done',
      response: { id: 'resp_5', status: 'completed', output: [functionCallItem('call_5', 'launch_rocket', '{}')] },
    });
    const [unknown] = await realtime.waitFor(
      () => (outputs(socket).length === 1 ? outputs(socket) : undefined),
      'the output for the unknown function',
    );
    expect(JSON.parse(unknown!.output)).toEqual({
      status: 'invalid_arguments',
      message: 'There is no function "launch_rocket". The functions are generate_video and video_status.',
    });
    // A new turn: its own call may act, but its arguments are not JSON.
    socket.send({ type: 'input_audio_buffer.committed', item_id: 'turn_2' });
    socket.send({ type: 'response.created', response: { id: 'resp_6' } });
    socket.send({
      type: 'response.function_call_arguments.done',
      response_id: 'resp_6',
      item_id: 'item_call_6',
      call_id: 'call_6',
      name: 'generate_video',
      arguments: '{"prompt": "a fox',
    });
    const answered = await realtime.waitFor(
      () => (outputs(socket).length === 2 ? outputs(socket) : undefined),
      'the output for malformed arguments',
    );
    expect(JSON.parse(answered[1]!.output)).toEqual({
      status: 'invalid_arguments',
      message: 'The arguments of generate_video are not valid JSON; nothing was done.',
    });
    expect(asked).toEqual([]);
    expect(session?.state).toBe('live');
  });

  it('does not act on a call in an answer the member talked over, and tells the model without asking for another answer', async () => {
    const { socket, calls } = await startSession();
    socket.send({ type: 'response.created', response: { id: 'resp_7' } });
    socket.send({
      type: 'response.output_item.added',
      response_id: 'resp_7',
      output_index: 0,
      item: { id: 'item_audio_7', type: 'message', role: 'assistant' },
    });
    const pcm = generateTone({ hz: 440, ms: 1500, amplitude: 0.4, format: REALTIME_PCM });
    for (let offset = 0; offset < pcm.length; offset += 2400) {
      socket.send({
        type: 'response.output_audio.delta',
        response_id: 'resp_7',
        item_id: 'item_audio_7',
        delta: samplesToBytes(pcm.subarray(offset, offset + 2400)).toString('base64'),
      });
    }
    await voice.waitForBotAudio(GUILD_ID, (frames) => audible(frames).length >= 5, 10_000);
    // The member speaks over the answer: the session cancels it; the gateway then ends it with the call it was making.
    socket.send({ type: 'input_audio_buffer.speech_started', item_id: 'turn_8' });
    await realtime.waitFor(() => (socket.received.some((event) => event.type === 'response.cancel') ? true : undefined), 'the cancel');
    const createsBefore = creates(socket);
    socket.send({
      type: 'response.done',
      response: { id: 'resp_7', status: 'cancelled', output: [functionCallItem('call_7', 'generate_video', '{"prompt":"a fox"}')] },
    });
    const [output] = await realtime.waitFor(
      () => (outputs(socket).length === 1 ? outputs(socket) : undefined),
      'the output of the call talked over',
    );
    expect(JSON.parse(output!.output)).toMatchObject({ status: 'not_done' });
    expect(calls).toEqual([]);
    // No answer is asked for it: the member's new turn is what gets answered. A call of that turn acts
    // (the only response.create since is its own, which comes after everything sent before it).
    socket.send({ type: 'input_audio_buffer.committed', item_id: 'turn_8' });
    socket.send({ type: 'response.created', response: { id: 'resp_9' } });
    socket.send({
      type: 'response.function_call_arguments.done',
      response_id: 'resp_9',
      item_id: 'item_call_9',
      call_id: 'call_9',
      name: 'video_status',
      arguments: '{}',
    });
    await realtime.waitFor(
      () => (outputs(socket).length === 2 && creates(socket) > createsBefore ? true : undefined),
      "the next turn's output and response.create",
    );
    expect(creates(socket)).toBe(createsBefore + 1);
    expect(JSON.parse(outputs(socket)[1]!.output)).toMatchObject({ status: 'not_found' });
    expect(session?.state).toBe('live');
  });
});
