import { describe, expect, it } from 'vitest';
import { parseServerEvent } from '../../src/gateway/realtime/events.ts';

// The function-call flow of docs/gateway.md ("Function tools"): a call is read from its arguments' done
// event, or from the output of response.done when a server sends nothing else.
describe('realtime function calls', () => {
  it('reads a call from response.function_call_arguments.done', () => {
    const event = parseServerEvent(
      JSON.stringify({
        type: 'response.function_call_arguments.done',
        response_id: 'r1',
        item_id: 'i1',
        output_index: 0,
        call_id: 'c1',
        name: 'generate_video',
        arguments: '{"prompt":"a fox"}',
      }),
    );
    expect(event).toEqual({
      type: 'response.function_call_arguments.done',
      call: { callId: 'c1', name: 'generate_video', arguments: '{"prompt":"a fox"}', responseId: 'r1', itemId: 'i1' },
    });
  });

  it('reads the calls a response.done lists, and none from one without calls', () => {
    const done = parseServerEvent(
      JSON.stringify({
        type: 'response.done',
        response: {
          id: 'r2',
          status: 'completed',
          output: [
            { type: 'message', id: 'm', role: 'assistant', content: [] },
            { type: 'function_call', id: 'i2', call_id: 'c2', name: 'video_status', arguments: '{}' },
            { type: 'function_call', id: 'i3', name: 'no call id' },
          ],
        },
      }),
    );
    expect(done).toEqual({
      type: 'response.done',
      responseId: 'r2',
      status: 'completed',
      functionCalls: [{ callId: 'c2', name: 'video_status', arguments: '{}', responseId: 'r2', itemId: 'i2' }],
    });
    expect(parseServerEvent(JSON.stringify({ type: 'response.done', response: { id: 'r3' } }))).toEqual({
      type: 'response.done',
      responseId: 'r3',
      status: undefined,
      functionCalls: [],
    });
  });

  it('leaves an arguments done event without a call id or name as another event', () => {
    expect(parseServerEvent(JSON.stringify({ type: 'response.function_call_arguments.done', arguments: '{}' }))).toMatchObject({
      type: 'other',
      name: 'response.function_call_arguments.done',
    });
  });
});
