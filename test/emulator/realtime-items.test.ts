import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { generateSilence, generateTone, REALTIME_PCM } from 'discord-standin';
import { appendInFrames, collectAudio, connectRealtime, type Connection } from './realtime-socket.ts';

// The conversation's items as the realtime SDKs of the ecosystem read them: each item is announced with
// conversation.item.added and conversation.item.done (conversation.item.created stays for older clients),
// and conversation.item.retrieve answers with the item as it now stands.

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
  emulator.realtime.options.paceFactor = 20;
});
afterAll(() => emulator.close());

const VAD = { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 0 };

async function configured(session: Record<string, unknown>): Promise<Connection> {
  const connection = await connectRealtime(emulator.wsUrl);
  connection.send({ type: 'session.update', session });
  await connection.next('session.updated');
  return connection;
}

/** Speaks one turn of 0.3 s and waits for its answer to finish. */
async function speakTurn(connection: Connection): Promise<void> {
  appendInFrames(connection, generateTone({ hz: 440, ms: 300, amplitude: 0.4, format: REALTIME_PCM }));
  appendInFrames(connection, generateSilence(300, REALTIME_PCM));
  await collectAudio(connection);
}

function eventsOf(connection: Connection, type: string, itemId: string): Record<string, unknown>[] {
  return connection.events.filter((event) => event.type === type && (event.item as { id?: unknown } | undefined)?.id === itemId);
}

describe('conversation items', () => {
  it('announces the user turn with item.added, then item.done carrying its transcript, and the answer likewise', async () => {
    const connection = await configured({ turn_detection: VAD });
    await speakTurn(connection);
    const committed = connection.events.find((event) => event.type === 'input_audio_buffer.committed')!;
    const userId = String(committed.item_id);
    const userItem = { id: userId, type: 'message', role: 'user' };

    const [added] = eventsOf(connection, 'conversation.item.added', userId);
    expect(added).toMatchObject({ previous_item_id: null, item: { ...userItem, content: [{ type: 'input_audio', transcript: null }] } });
    const [done] = eventsOf(connection, 'conversation.item.done', userId);
    expect(done).toMatchObject({
      previous_item_id: null,
      item: { ...userItem, status: 'completed', content: [{ type: 'input_audio', transcript: '(0.3 s of speech)' }] },
    });
    expect(eventsOf(connection, 'conversation.item.created', userId)).toHaveLength(1);
    const order = (event: Record<string, unknown> | undefined) => connection.events.indexOf(event!);
    const transcribed = connection.events.find((event) => event.type === 'conversation.item.input_audio_transcription.completed');
    expect(order(added)).toBeLessThan(order(transcribed));
    expect(order(transcribed)).toBeLessThan(order(done));

    const answerId = String((connection.events.find((event) => event.type === 'response.output_item.added')!.item as { id: string }).id);
    expect(eventsOf(connection, 'conversation.item.added', answerId)).toEqual([
      expect.objectContaining({
        previous_item_id: userId,
        item: expect.objectContaining({ role: 'assistant', status: 'in_progress', content: [] }),
      }),
    ]);
    expect(eventsOf(connection, 'conversation.item.done', answerId)).toEqual([
      expect.objectContaining({
        previous_item_id: userId,
        item: expect.objectContaining({
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'audio', transcript: 'Echo of 0.3 seconds.' }],
        }),
      }),
    ]);
    connection.socket.close();
  });

  it('answers conversation.item.retrieve with the item as it now stands, and an unknown id with item_not_found', async () => {
    const connection = await configured({ turn_detection: VAD });
    await speakTurn(connection);
    const userId = String(connection.events.find((event) => event.type === 'input_audio_buffer.committed')!.item_id);
    connection.send({ type: 'conversation.item.retrieve', event_id: 'evt_get', item_id: userId });
    expect(await connection.next('conversation.item.retrieved')).toMatchObject({
      item: {
        id: userId,
        type: 'message',
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_audio', transcript: '(0.3 s of speech)' }],
      },
    });
    const answerId = String((connection.events.find((event) => event.type === 'response.output_item.done')!.item as { id: string }).id);
    connection.send({ type: 'conversation.item.retrieve', item_id: answerId });
    expect(await connection.next('conversation.item.retrieved')).toMatchObject({
      item: { id: answerId, role: 'assistant', content: [{ type: 'audio', transcript: 'Echo of 0.3 seconds.' }] },
    });

    connection.send({ type: 'conversation.item.retrieve', event_id: 'evt_missing', item_id: 'item_nope' });
    expect(await connection.next('error')).toMatchObject({
      error: {
        type: 'invalid_request_error',
        code: 'item_not_found',
        param: 'item_id',
        event_id: 'evt_missing',
        message: expect.stringContaining('item_nope'),
      },
    });
    connection.send({ type: 'conversation.item.retrieve', event_id: 'evt_no_id' });
    expect(await connection.next('error')).toMatchObject({ error: { param: 'item_id', event_id: 'evt_no_id' } });
    expect(connection.events.some((event) => event.type === 'error' && (event.error as { code?: unknown }).code === 'unknown_event')).toBe(
      false,
    );
    connection.socket.close();
  });

  it('announces an item the client creates, and forgets a deleted one', async () => {
    const connection = await configured({});
    const item = { id: 'item_typed', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello there.' }] };
    connection.send({ type: 'conversation.item.create', item });
    expect(await connection.next('conversation.item.added')).toMatchObject({ previous_item_id: null, item });
    expect(await connection.next('conversation.item.done')).toMatchObject({ item: { ...item, status: 'completed' } });
    connection.send({ type: 'conversation.item.retrieve', item_id: 'item_typed' });
    expect(await connection.next('conversation.item.retrieved')).toMatchObject({ item });
    connection.send({ type: 'conversation.item.delete', item_id: 'item_typed' });
    await connection.next('conversation.item.deleted');
    connection.send({ type: 'conversation.item.retrieve', item_id: 'item_typed' });
    expect(await connection.next('error')).toMatchObject({ error: { code: 'item_not_found' } });
    connection.socket.close();
  });

  it('keeps the items around a deleted one in order', async () => {
    const connection = await configured({});
    const session = emulator.realtime.sessions.at(-1);
    const say = (id: string) => ({ id, type: 'message', role: 'user', content: [{ type: 'input_text', text: id }] });
    for (const id of ['item_first', 'item_middle', 'item_last']) {
      connection.send({ type: 'conversation.item.create', item: say(id) });
      await connection.next('conversation.item.done');
    }
    connection.send({ type: 'conversation.item.delete', item_id: 'item_middle' });
    await connection.next('conversation.item.deleted');
    connection.send({ type: 'conversation.item.create', item: say('item_after') });
    expect(await connection.next('conversation.item.added')).toMatchObject({ previous_item_id: 'item_last' });
    expect(session?.items.map((item) => item.id)).toEqual(['item_first', 'item_last', 'item_after']);
    connection.socket.close();
  });
});
