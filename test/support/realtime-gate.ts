import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { isRecord } from '../../src/lib/json.ts';
import { websocketText } from '../../src/lib/websocket-text.ts';

// A websocket proxy in front of a realtime gateway (the emulator) that can hold back what the gateway
// sends for a while, as a slow network holds events in flight: the bot then acts on an old picture of the
// session while the gateway has moved on, and the gateway's answer to it is the real one. Nothing is
// changed or lost: what was held goes, in order, at the release.

export interface RealtimeGate {
  /** The `ws://` base to connect to instead of the gateway's. */
  readonly url: string;
  /**
   * Holds what the gateway sends from now on, until a client event matching `until` has gone to the
   * gateway; then what was held goes on, in order, and nothing more is held.
   */
  holdUntil(until: (event: Readonly<Record<string, unknown>>) => boolean): void;
  close(): Promise<void>;
}

export async function startRealtimeGate(upstreamWsUrl: string): Promise<RealtimeGate> {
  let holding: ((event: Readonly<Record<string, unknown>>) => boolean) | undefined;
  const held: { client: WebSocket; data: RawData }[] = [];
  const sockets = new WebSocketServer({ noServer: true });
  const upstreams = new Set<WebSocket>();

  const release = () => {
    holding = undefined;
    for (const { client, data } of held.splice(0)) client.send(websocketText(data));
  };

  const server = createServer((_request, response) => response.writeHead(404).end());
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const authorization = request.headers.authorization;
    const upstream = new WebSocket(`${upstreamWsUrl}${request.url ?? ''}`, { headers: authorization ? { authorization } : {} });
    upstreams.add(upstream);
    upstream.once('open', () => {
      sockets.handleUpgrade(request, socket, head, (client) => {
        client.on('message', (data) => {
          const text = websocketText(data);
          upstream.send(text);
          // Audio appends (fifty a second) are never what a test waits for.
          if (!holding || text.startsWith('{"type":"input_audio_buffer.append"')) return;
          const event: unknown = JSON.parse(text);
          if (isRecord(event) && holding(event)) release();
        });
        client.on('close', () => upstream.close());
        upstream.on('message', (data) => {
          if (holding) held.push({ client, data });
          else client.send(websocketText(data));
        });
        upstream.on('close', () => client.close());
      });
    });
    upstream.once('error', () => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the realtime gate has no port');
  return {
    url: `ws://127.0.0.1:${address.port}`,
    holdUntil(until) {
      holding = until;
    },
    async close() {
      for (const upstream of upstreams) upstream.terminate();
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.close();
      await once(server, 'close');
    },
  };
}
