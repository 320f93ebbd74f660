import { WebSocket } from 'ws';
import { waitUntil } from '../../src/lib/wait-until.ts';
import { websocketText } from '../../src/lib/websocket-text.ts';

// A plain websocket to the emulator's realtime endpoint, for the realtime tests: every event received is
// kept, and next() walks through them in order.

export const REALTIME_MODEL = 'svc-voice-latest';

export interface Connection {
  socket: WebSocket;
  events: Record<string, unknown>[];
  /** The next event of this type after the last one next() returned. */
  next(type: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  send(event: Record<string, unknown>): void;
}

export interface ConnectOptions {
  headers?: Record<string, string>;
  protocols?: string[];
  model?: string;
}

/** Opens a realtime connection; a refused upgrade rejects with its `status` and `requestId`. */
export function connectRealtime(wsUrl: string, options: ConnectOptions = {}): Promise<Connection> {
  const url = `${wsUrl}/native/v1/realtime?model=${options.model ?? REALTIME_MODEL}`;
  const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? { Authorization: 'Bearer emulator-key' } });
  const events: Record<string, unknown>[] = [];
  let cursor = 0;
  socket.on('message', (data) => {
    events.push(JSON.parse(websocketText(data)) as Record<string, unknown>);
    socket.emit('event');
  });
  const connection: Connection = {
    socket,
    events,
    async next(type, timeoutMs = 5000) {
      const index = await waitUntil({
        check: () => {
          const found = events.findIndex((event, position) => position >= cursor && event.type === type);
          return found >= 0 ? found : undefined;
        },
        subscribe: (wake) => {
          socket.on('event', wake);
          return () => socket.off('event', wake);
        },
        timeoutMs,
        timeoutError: () => new Error(`no ${type} event; saw ${events.map((event) => String(event.type)).join(', ')}`),
      });
      cursor = index + 1;
      return events[index]!;
    },
    send: (event) => socket.send(JSON.stringify(event)),
  };
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(connection));
    socket.once('unexpected-response', (_request, response) =>
      reject(Object.assign(new Error('refused'), { status: response.statusCode, requestId: response.headers['x-request-id'] })),
    );
    socket.once('error', reject);
  });
}

export function base64(pcm: Int16Array): string {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');
}

/** Appends 24 kHz PCM in 20 ms frames, as a client streaming live audio does. */
export function appendInFrames(connection: Connection, pcm: Int16Array): void {
  for (let offset = 0; offset < pcm.length; offset += 480)
    connection.send({ type: 'input_audio_buffer.append', audio: base64(pcm.subarray(offset, offset + 480)) });
}

/** Waits for the next response to finish and returns the audio it streamed. */
export async function collectAudio(connection: Connection): Promise<{ pcm: Int16Array; done: Record<string, unknown> }> {
  const done = await connection.next('response.done');
  const responseId = (done.response as { id: string }).id;
  const bytes = Buffer.concat(
    connection.events
      .filter((event) => event.type === 'response.output_audio.delta' && event.response_id === responseId)
      .map((event) => Buffer.from(String(event.delta), 'base64')),
  );
  return { pcm: new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2), done };
}
