import type { Server } from 'node:http';
import type { RealtimeDeps } from './deps.ts';

// Placeholder until the realtime side lands: every websocket upgrade is refused with 501.

export interface RealtimeHandle {
  close(): Promise<void>;
}

export function attachRealtime(server: Server, _deps: RealtimeDeps): RealtimeHandle {
  server.on('upgrade', (_request, socket) => {
    socket.end('HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n\r\n');
  });
  return { close: () => Promise.resolve() };
}
