// A realtime gateway that does what each test tells it, for what the emulator never does: a server that
// names no items, never confirms a session, refuses a key, or answers errors in another shape. Client
// events are recorded (audio appends only counted); server events are whatever the test sends.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { isRecord } from '../../src/lib/json.ts';
import { websocketText } from '../../src/lib/websocket-text.ts';
import { waitUntil } from '../../src/lib/wait-until.ts';

export type ClientEvent = Readonly<Record<string, unknown>>;

/** One realtime socket of the scripted server: what the bot sent (appends only counted), and a way to answer. */
export class ScriptedSocket {
  readonly received: ClientEvent[] = [];
  readonly openedAt = Date.now();
  /** The upgrade's headers that matter: credentials (Authorization, subprotocols) and extensions offered. */
  readonly handshake: { authorization: string | undefined; protocols: string | undefined; extensions: string | undefined };
  appends = 0;
  /** How the socket closed (the close frame's code and reason), once it has. */
  closedWith: { code: number; reason: string; at: number } | undefined;
  readonly #socket: WebSocket;
  readonly #changed: () => void;

  /** `session`: what session.updated says in answer to session.update; undefined: no answer. */
  constructor(socket: WebSocket, request: IncomingMessage, changed: () => void, session: Record<string, unknown> | undefined) {
    this.#socket = socket;
    this.handshake = {
      authorization: request.headers.authorization,
      protocols: request.headers['sec-websocket-protocol'],
      extensions: request.headers['sec-websocket-extensions'],
    };
    this.#changed = changed;
    socket.on('message', (data) => {
      const text = websocketText(data);
      if (text.startsWith('{"type":"input_audio_buffer.append"')) {
        this.appends++;
      } else {
        const event: unknown = JSON.parse(text);
        if (!isRecord(event)) return;
        this.received.push(event);
        if (session && event.type === 'session.update') this.send({ type: 'session.updated', session });
      }
      this.#changed();
    });
    socket.on('close', (code, reason) => {
      this.closedWith = { code, reason: reason.toString(), at: Date.now() };
      this.#changed();
    });
  }

  get open(): boolean {
    return this.#socket.readyState === this.#socket.OPEN;
  }

  send(event: Record<string, unknown>): void {
    this.#socket.send(JSON.stringify(event));
  }

  close(code = 1000, reason = ''): void {
    this.#socket.close(code, reason);
  }

  sent(type: string): ClientEvent[] {
    return this.received.filter((event) => event.type === type);
  }
}

export class ScriptedRealtime {
  readonly sockets: ScriptedSocket[] = [];
  /** Answer session.update with session.updated (a server that never does is tested too). */
  configure = true;
  /** Say in session.updated that the session expires this long after it opened (`expires_at`). */
  sessionExpiresInMs: number | undefined;
  /** HTTP statuses for the next upgrades, refused in order (an empty list accepts). */
  readonly refusals: number[] = [];
  refused = 0;
  readonly #server: Server;
  readonly #sockets = new WebSocketServer({ noServer: true });
  readonly #waiters = new Set<() => void>();

  private constructor(server: Server) {
    this.#server = server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const status = this.refusals.shift();
      if (status !== undefined) {
        this.refused++;
        const body = JSON.stringify({ code: 'invalid_api_key', error: 'Invalid API key.' });
        socket.end(
          `HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        );
        this.changed();
        return;
      }
      this.#sockets.handleUpgrade(request, socket, head, (ws) => {
        const expiresAt = this.sessionExpiresInMs === undefined ? undefined : (Date.now() + this.sessionExpiresInMs) / 1000;
        this.sockets.push(
          new ScriptedSocket(
            ws,
            request,
            () => this.changed(),
            this.configure ? (expiresAt === undefined ? {} : { expires_at: expiresAt }) : undefined,
          ),
        );
        this.changed();
      });
    });
  }

  static async start(): Promise<ScriptedRealtime> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new ScriptedRealtime(server);
  }

  get url(): string {
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    return `ws://127.0.0.1:${address.port}`;
  }

  get latest(): ScriptedSocket {
    const socket = this.sockets.at(-1);
    if (!socket) throw new Error('no realtime socket yet');
    return socket;
  }

  /** Resolves once `check` returns something; re-checked on every socket event (and on changed()). */
  waitFor<T>(check: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
    return waitUntil({
      check,
      subscribe: (wake) => {
        this.#waiters.add(wake);
        return () => this.#waiters.delete(wake);
      },
      timeoutMs,
      timeoutError: () => new Error(`waited ${timeoutMs} ms in vain for ${what}`),
    });
  }

  /** Re-checks the waits: sockets call it, and so can a test for what it observes elsewhere. */
  changed(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  async close(): Promise<void> {
    for (const client of this.#sockets.clients) client.terminate();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
