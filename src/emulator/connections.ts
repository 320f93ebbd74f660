import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Layer } from '../gateway/spec.ts';
import type { Logger } from '../lib/log.ts';
import { closeAfterAnswer, HttpError, layerOfPath, newRequestId, sendErrorOnSocket, unparsableRequestError } from './http.ts';
import type { JournalEntry } from './request-journal.ts';

// Faults of a connection rather than of a request: what Node could not parse, a TLS handshake that
// failed, a CONNECT; answered in the spec's format where there is a channel to answer on. And every
// connection, so that closing the emulator ends them all.

export interface ConnectionOptions {
  /** Whether the server speaks TLS: then a connection that never finished its handshake has no channel. */
  tls: boolean;
  log: Logger;
  /** Journals a request answered here, without routing. */
  record: (entry: JournalEntry) => void;
}

export class Connections {
  readonly #tls: boolean;
  readonly #log: Logger;
  readonly #record: (entry: JournalEntry) => void;
  /** TLS connections whose handshake is done: a client error on any other is a failed handshake. */
  readonly #secured = new WeakSet<Duplex>();
  /** The request each connection is answering, so that a fault in its body is answered in its name. */
  readonly #answering = new WeakMap<Duplex, { requestId: string; layer: Layer; response: ServerResponse }>();
  /** Connections already answered for a parse error: Node reports each later chunk they send again. */
  readonly #broken = new WeakSet<Duplex>();
  /** Every connection, upgraded and hand-answered ones too (Node stops tracking those), so close() ends them all. */
  readonly #open = new Set<Duplex>();

  constructor({ tls, log, record }: ConnectionOptions) {
    this.#tls = tls;
    this.#log = log;
    this.#record = record;
  }

  /** Listens to the server for every connection and for the faults of each. */
  attach(server: Server): void {
    if (this.#tls) server.on('secureConnection', (socket: Duplex) => this.#secured.add(socket));
    server.on('connection', (socket: Duplex) => {
      this.#open.add(socket);
      socket.once('close', () => this.#open.delete(socket));
    });
    server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => this.#answerUnparsable(error, socket));
    // The emulator is no proxy: a CONNECT is a wrong method, answered like one, and its connection closed.
    server.on('connect', (request: IncomingMessage, socket: Duplex) => {
      socket.on('error', (error) => this.#log.debug('CONNECT connection failed', { error: error.message }));
      const requestId = newRequestId();
      const path = request.url ?? '';
      sendErrorOnSocket(
        socket,
        layerOfPath(path),
        new HttpError(405, 'invalid_request_error', 'CONNECT is not supported: the gateway is not a proxy.'),
        requestId,
      );
      this.#record({ method: 'CONNECT', path, status: 405, requestId, at: Date.now() });
    });
  }

  /** Notes the request a connection is answering, until its answer is out. */
  answering(request: IncomingMessage, response: ServerResponse, requestId: string, layer: Layer): void {
    const { socket } = request;
    this.#answering.set(socket, { requestId, layer, response });
    response.once('finish', () => {
      if (this.#answering.get(socket)?.response === response) this.#answering.delete(socket);
    });
  }

  /** Ends every connection still open. */
  destroyAll(): void {
    for (const socket of this.#open) socket.destroy();
  }

  /**
   * A request Node could not parse (bad request line, header overflow, bad chunk, a timeout). Node would
   * answer it bare (no request id, no body); the emulator answers in the spec's format: in the layer of
   * the request whose body broke when there is one, else in the compatibility envelope, since no path
   * was read. An answer already begun is not interrupted by a second one.
   */
  #answerUnparsable(error: Error & { code?: string }, socket: Duplex): void {
    if (this.#tls && !this.#secured.has(socket)) {
      // Plain HTTP (or anything else but TLS) on the TLS port: there is no channel to answer it on.
      this.#log.debug('emulator dropped a connection whose TLS handshake failed', { code: error.code });
      socket.destroy();
      return;
    }
    if (this.#broken.has(socket)) return;
    this.#broken.add(socket);
    const current = this.#answering.get(socket);
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (current?.response.headersSent) {
      if (current.response.writableEnded) closeAfterAnswer(socket);
      else socket.destroy();
      return;
    }
    this.#log.debug('emulator answered a request it could not parse', { code: error.code });
    sendErrorOnSocket(socket, current?.layer ?? 'compat', unparsableRequestError(error.code), current?.requestId ?? newRequestId());
  }
}
