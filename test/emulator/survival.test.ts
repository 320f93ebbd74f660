import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startEmulatorProcess, type EmulatorProcess } from './emulator-process.ts';

// What would end a process, sent to the emulator running in a process of its own: it must close what is
// at fault and go on serving everyone else.

let emulator: EmulatorProcess;
beforeAll(async () => {
  emulator = await startEmulatorProcess();
});
afterAll(() => emulator.stop());

const REALTIME = '/native/v1/realtime?model=svc-voice-latest';
/** The emulator's largest realtime message (docs: README, "The gateway emulator"). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
const MESSAGE_TOO_BIG = 1009;

function openSocket(): Promise<WebSocket> {
  const socket = new WebSocket(`${emulator.wsUrl}${REALTIME}`, { headers: { Authorization: 'Bearer emulator-key' } });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

async function modelsStatus(): Promise<number> {
  const response = await fetch(`${emulator.baseUrl}/v1/models`, { headers: { authorization: 'Bearer emulator-key' } });
  await response.arrayBuffer();
  return response.status;
}

describe('a realtime frame over the size limit', () => {
  it.each([
    ['a text frame', (size: number) => JSON.stringify({ type: 'input_audio_buffer.append', audio: 'A'.repeat(size) })],
    ['a binary frame', (size: number) => Buffer.alloc(size, 1)],
  ])('closes that connection with 1009 (%s), and the process serves everyone else', async (_label, frame) => {
    const bystander = await openSocket();
    const offender = await openSocket();
    offender.on('error', () => {
      // The client side may see the connection end abruptly; the close code is what is checked.
    });
    const closed = once(offender, 'close');
    offender.send(frame(MAX_FRAME_BYTES + 1));
    const [code] = (await closed) as [number];
    expect(code).toBe(MESSAGE_TOO_BIG);

    expect(emulator.exited()).toBeUndefined();
    expect(await modelsStatus()).toBe(200);
    // The bystander's session goes on.
    const answered = once(bystander, 'message');
    bystander.send(JSON.stringify({ type: 'session.update', session: { turn_detection: null } }));
    const [first] = (await answered) as [Buffer];
    expect(JSON.parse(first.toString('utf8'))).toMatchObject({ type: 'session.created' });
    bystander.close();
    const again = await openSocket();
    again.close();
  });
});

describe('connections that end abruptly', () => {
  it.each([
    ['an upgrade refused for its path', 'GET /nowhere HTTP/1.1\r\nHost: e\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'],
    [
      'an upgrade refused for its key',
      `GET ${REALTIME} HTTP/1.1\r\nHost: e\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: Bearer nope-nope-nope\r\n\r\n`,
    ],
    ['a CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'],
    ['a request Node cannot parse', 'GET / HTTP/1.1\r\nHost: e\r\nBad Header\r\n\r\n'],
  ])('a client that resets the connection right after %s leaves the process up', async (_label, request) => {
    const { connect } = await import('node:net');
    for (let attempt = 0; attempt < 20; attempt++) {
      const socket = connect(emulator.port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write(request);
      // The emulator answers into a connection the client has already torn down.
      socket.resetAndDestroy();
      await once(socket, 'close');
    }
    expect(await modelsStatus()).toBe(200);
    expect(emulator.exited()).toBeUndefined();
  });
});
