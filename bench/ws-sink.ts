import { WebSocketServer } from 'ws';
import { websocketText } from '../src/websocket-text.ts';

// A realtime endpoint that configures the session and then only swallows audio: the far end of the
// voice benchmark's socket, in its own process so its work is not counted as the bot's.

const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
server.on('connection', (socket) => {
  socket.on('message', (data) => {
    const text = websocketText(data);
    if (text.includes('"session.update"')) socket.send(JSON.stringify({ type: 'session.updated', event_id: 'e1', session: {} }));
  });
});
server.on('listening', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ wsUrl: `ws://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
