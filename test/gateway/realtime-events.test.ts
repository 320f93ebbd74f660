import { describe, expect, it } from 'vitest';
import { parseServerEvent } from '../../src/gateway/realtime/events.ts';

describe('realtime server events', () => {
  it.each([
    ['response.output_audio.delta', 'response.output_audio.delta'],
    ['response.audio.delta', 'response.output_audio.delta'],
  ])('reads %s as audio', (name, type) => {
    const event = parseServerEvent(
      JSON.stringify({ type: name, response_id: 'r', item_id: 'i', content_index: 0, delta: Buffer.from([1, 0, 2, 0]).toString('base64') }),
    );
    expect(event).toMatchObject({ type, itemId: 'i' });
    expect(event?.type === 'response.output_audio.delta' && event.audio.decode()).toEqual(Buffer.from([1, 0, 2, 0]));
  });

  it.each([
    ['response.output_audio.delta', 'response.output_audio.delta'],
    ['response.audio.delta', 'response.output_audio.delta'],
  ])("reads %s with nothing but the spec's `delta`", (name, type) => {
    const event = parseServerEvent(JSON.stringify({ type: name, delta: Buffer.from([1, 0]).toString('base64') }));
    expect(event).toMatchObject({ type, responseId: undefined, itemId: undefined, contentIndex: undefined });
    expect(event?.type === 'response.output_audio.delta' && event.audio.decode()).toEqual(Buffer.from([1, 0]));
  });

  it('counts the bytes of an audio delta without decoding it, never fewer than it holds', () => {
    for (const bytes of [0, 1, 2, 3, 4, 2400]) {
      const event = parseServerEvent(
        JSON.stringify({ type: 'response.output_audio.delta', delta: Buffer.alloc(bytes, 7).toString('base64') }),
      );
      if (event?.type !== 'response.output_audio.delta') throw new Error('not read as audio');
      expect(event.audio.decode()).toHaveLength(bytes);
      expect(event.audio.maxBytes).toBeGreaterThanOrEqual(bytes);
      expect(event.audio.maxBytes).toBeLessThanOrEqual(bytes + 2);
    }
  });

  it.each([
    ['response.output_audio.done', 'response.output_audio.done'],
    ['response.audio.done', 'response.output_audio.done'],
  ])('reads %s without ids', (name, type) => {
    expect(parseServerEvent(JSON.stringify({ type: name }))).toEqual({ type, responseId: undefined, itemId: undefined });
  });

  it('reads the item a response adds and items added to the conversation', () => {
    expect(
      parseServerEvent(
        JSON.stringify({ type: 'response.output_item.added', response_id: 'r', output_index: 0, item: { id: 'i', role: 'assistant' } }),
      ),
    ).toEqual({
      type: 'response.output_item.added',
      responseId: 'r',
      itemId: 'i',
      role: 'assistant',
    });
    expect(parseServerEvent(JSON.stringify({ type: 'conversation.item.created', item: { id: 'u', role: 'user' } }))).toEqual({
      type: 'conversation.item.created',
      itemId: 'u',
      role: 'user',
    });
  });

  it.each([
    ['response.output_text.delta', 'response.output_text.delta'],
    ['response.text.delta', 'response.output_text.delta'],
    ['response.output_audio_transcript.delta', 'response.output_audio_transcript.delta'],
    ['response.audio_transcript.delta', 'response.output_audio_transcript.delta'],
  ])('reads %s as %s', (name, type) => {
    expect(parseServerEvent(JSON.stringify({ type: name, delta: 'hi' }))).toMatchObject({ type, delta: 'hi' });
  });

  it('reads error events in the common realtime shape', () => {
    expect(
      parseServerEvent(
        JSON.stringify({
          type: 'error',
          error: { type: 'invalid_request_error', code: 'x', message: 'bad', param: 'audio', event_id: 'e1' },
        }),
      ),
    ).toEqual({
      type: 'error',
      code: 'x',
      message: 'bad',
      errorType: 'invalid_request_error',
      param: 'audio',
      clientEventId: 'e1',
    });
  });

  it("reads error events in the native layer's style: a string error and a top-level code", () => {
    expect(parseServerEvent(JSON.stringify({ type: 'error', error: 'Session expired.', code: 'session_expired' }))).toMatchObject({
      type: 'error',
      code: 'session_expired',
      message: 'Session expired.',
    });
  });

  it('passes unknown types through and rejects what is not an event', () => {
    expect(parseServerEvent(JSON.stringify({ type: 'rate_limits.updated', rate_limits: [] }))).toMatchObject({
      type: 'other',
      name: 'rate_limits.updated',
    });
    expect(parseServerEvent('not json')).toBeUndefined();
    expect(parseServerEvent('[1]')).toBeUndefined();
    expect(parseServerEvent(JSON.stringify({ type: 'response.output_audio.delta' }))).toMatchObject({ type: 'other' });
  });
});
