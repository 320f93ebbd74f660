import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { realtimeSubprotocolPrefixes } from '../../gateway/spec.ts';
import type { RealtimeAuthorization, RealtimeDeps } from './deps.ts';
import type { JournaledEvent } from './event-journal.ts';
import { DEFAULT_REALTIME_OPTIONS, type RealtimeOptions } from './options.ts';
import { RealtimeSession } from './session.ts';
import { websocketText } from '../../lib/websocket-text.ts';
import { ScriptBoard, type ScriptTaker, type TurnScript } from './script.ts';
import { HttpError, newRequestId, parseRequestTarget, sendErrorOnSocket } from '../http.ts';
import { waitUntil } from '../../lib/wait-until.ts';

// The realtime endpoint: `wss://…/native/v1/realtime?model=…`, authorised by the Authorization header or
// by a subprotocol (`<vendor>-client-secret.<token>` or `compat-insecure-api-key.<key>`). A refusal is an
// HTTP answer to the upgrade, before any websocket exists, in the native error body (the endpoint's layer);
// every answer carries x-request-id. Sessions end at the configured limit.

const REALTIME_PATH = '/native/v1/realtime';
const SESSION_EXPIRED_CLOSE = 1000;
/** The largest client message: a bigger frame closes its connection with 1009 (message too big). */
export const MAX_REALTIME_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface RealtimeHandle extends ScriptTaker {
  readonly sessions: RealtimeSession[];
  /** The first client event (past or future) matching the predicate, with its session. */
  waitForClientEvent(
    predicate: (event: Readonly<Record<string, unknown>>, session: RealtimeSession) => boolean,
    timeoutMs?: number,
  ): Promise<{ session: RealtimeSession; event: JournaledEvent }>;
  /** The same for what the emulator sent (checked whenever it sends an event). */
  waitForServerEvent(
    predicate: (event: Readonly<Record<string, unknown>>, session: RealtimeSession) => boolean,
    timeoutMs?: number,
  ): Promise<{ session: RealtimeSession; event: JournaledEvent }>;
  /** Options for sessions opened from now on (pace of the echo, tone lengths). */
  options: RealtimeOptions;
  /** Keeps a script for a coming user turn (POST /_emulator/realtime/script); throws an HttpError when it is refused. */
  script(keyId: string, body: Readonly<Record<string, unknown>>): TurnScript;
  close(): Promise<void>;
}

/** Refuses an upgrade with `{ code, error, usage }`, the native layer's error body (docs/gateway.md, "Error format per layer"). */
/** The subprotocol without a credential that realtime SDKs offer (the openai SDK: `realtime` with its key and routing ones). */
const PLAIN_SUBPROTOCOL = 'realtime';

/** A subprotocol that carries a key or a secret: the spec's two, and other vendors' (`openai-insecure-api-key.<key>`). */
function carriesCredential(protocol: string, prefixes: { clientSecret: string; apiKey: string }): boolean {
  return (
    protocol.startsWith(prefixes.clientSecret) ||
    protocol.startsWith(prefixes.apiKey) ||
    /(?:insecure-api-key|client-secret)\./i.test(protocol)
  );
}

function refuse(socket: Duplex, status: number, code: string, message: string): void {
  sendErrorOnSocket(socket, 'native', new HttpError(status, code, message), newRequestId());
}

export function attachRealtime(server: Server, deps: RealtimeDeps): RealtimeHandle {
  /** The credential subprotocol each accepted upgrade must echo back in the handshake. */
  const acceptedProtocol = new WeakMap<IncomingMessage, string>();
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_REALTIME_MESSAGE_BYTES,
    handleProtocols: (_offered, request) => acceptedProtocol.get(request) ?? false,
  });
  // Every answer carries a request id (docs/gateway.md, "Request ids"), the 101 of an accepted upgrade too.
  sockets.on('headers', (headers) => headers.push(`X-Request-Id: ${newRequestId()}`));
  // A handshake ws cannot accept (no or a bad Sec-WebSocket-Key or -Version, Upgrade other than websocket)
  // is refused like every other upgrade, not with ws's own bare text answer.
  sockets.on('wsClientError', (error: Error, socket: Duplex) => refuse(socket, 400, 'invalid_request_error', `${error.message}.`));
  const sessions: RealtimeSession[] = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const timers = new Set<NodeJS.Timeout>();
  const prefixes = realtimeSubprotocolPrefixes(deps.vendor);
  const scripts = new ScriptBoard();
  /** The first journaled event of a session that `predicate` matches, checked again whenever one is journaled. */
  const waitForJournaled = (
    kind: 'clientEvent' | 'serverEvent',
    journalOf: (session: RealtimeSession) => readonly JournaledEvent[],
    predicate: (event: Readonly<Record<string, unknown>>, session: RealtimeSession) => boolean,
    timeoutMs: number,
  ): Promise<{ session: RealtimeSession; event: JournaledEvent }> => {
    const find = () => {
      for (const session of sessions) {
        const event = journalOf(session).find((entry) => predicate(entry.event, session));
        if (event) return { session, event };
      }
      return undefined;
    };
    return waitUntil({
      check: find,
      subscribe: (wake) => {
        events.on(kind, wake);
        return () => events.off(kind, wake);
      },
      timeoutMs,
      timeoutError: () =>
        new Error(`the realtime emulator ${kind === 'clientEvent' ? 'received' : 'sent'} no matching event within ${timeoutMs} ms`),
    });
  };
  const handle: RealtimeHandle = {
    sessions,
    options: { ...DEFAULT_REALTIME_OPTIONS },
    script: (keyId, body) => scripts.add(keyId, body, sessions),
    waitForClientEvent(predicate, timeoutMs = 10_000) {
      return waitForJournaled('clientEvent', (session) => session.clientEvents, predicate, timeoutMs);
    },
    waitForServerEvent(predicate, timeoutMs = 10_000) {
      return waitForJournaled('serverEvent', (session) => session.serverEvents, predicate, timeoutMs);
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const session of sessions) session.close();
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
    },
  };

  /**
   * Who may open the session, and the subprotocol the 101 names. A client that offered subprotocols fails
   * a handshake that names none (ws and every browser do), so one of those offered is always named: the
   * credential subprotocol that authorised, or, when the Authorization header did, one without a
   * credential (`realtime` first), since a credential is never sent back when it was not what authorised.
   */
  function authorize(request: IncomingMessage, model: string): { result: RealtimeAuthorization; protocol: string | undefined } {
    const header = request.headers.authorization;
    const offered = (request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((value) => value.trim())
      .filter((value) => value !== '');
    if (header !== undefined) {
      const bearer = /^Bearer (\S+)$/.exec(header)?.[1];
      const result = bearer
        ? deps.authorizeApiKey(bearer, model)
        : { ok: false as const, status: 401 as const, code: 'invalid_api_key', message: 'Invalid API key.' };
      if (!result.ok || offered.length === 0) return { result, protocol: undefined };
      const plain = offered.filter((protocol) => !carriesCredential(protocol, prefixes));
      const protocol = plain.find((candidate) => candidate === PLAIN_SUBPROTOCOL) ?? plain[0];
      if (protocol === undefined) {
        const message =
          'Every subprotocol offered carries a credential, and the Authorization header already authorised: offer one without a credential (such as realtime), or none.';
        return { result: { ok: false, status: 400, code: 'invalid_request_error', message }, protocol: undefined };
      }
      return { result, protocol };
    }
    for (const protocol of offered) {
      if (protocol.startsWith(prefixes.clientSecret))
        return { result: deps.authorizeClientSecret(protocol.slice(prefixes.clientSecret.length), model), protocol };
      if (protocol.startsWith(prefixes.apiKey))
        return { result: deps.authorizeApiKey(protocol.slice(prefixes.apiKey.length), model), protocol };
    }
    return {
      result: {
        ok: false,
        status: 401,
        code: 'invalid_api_key',
        message: 'Missing credentials: send Authorization: Bearer <key> or a credential subprotocol.',
      },
      protocol: undefined,
    };
  }

  /** Closed sessions are dropped once their retention has passed, when the next one opens. */
  function forgetClosedSessions(now: number): void {
    const kept = sessions.filter(
      (session) => session.closedAt === undefined || now - session.closedAt < handle.options.closedSessionRetentionMs,
    );
    sessions.splice(0, sessions.length, ...kept);
  }

  function open(socket: WebSocket, model: string, keyId: string): void {
    forgetClosedSessions(Date.now());
    const session = new RealtimeSession(
      model,
      keyId,
      (text) => {
        if (socket.readyState === socket.OPEN) socket.send(text);
        events.emit('serverEvent');
      },
      handle.options,
      deps.log,
      (current) => scripts.take(current),
    );
    sessions.push(session);
    const limit = setTimeout(() => {
      timers.delete(limit);
      session.emit('error', {
        error: {
          type: 'invalid_request_error',
          code: 'session_expired',
          message: 'The session reached its maximum duration.',
          param: null,
          event_id: null,
        },
      });
      session.close();
      socket.close(SESSION_EXPIRED_CLOSE, 'session expired');
    }, deps.sessionMaxMs());
    timers.add(limit);
    socket.on('message', (data) => {
      // receive() answers its own faults; this guards the rest, so one event can never end the process.
      try {
        session.receive(websocketText(data));
        events.emit('clientEvent');
      } catch (error) {
        deps.log.error('realtime message handling failed', { session: session.id, error });
      }
    });
    // A protocol fault of one client (a frame over the limit, a bad opcode, invalid UTF-8) is reported
    // here while ws closes that connection with the fitting code (1009, 1002, 1007); without a listener
    // the error would end the whole process.
    socket.on('error', (error) =>
      deps.log.info('realtime connection closed for a protocol fault', { session: session.id, error: error.message }),
    );
    socket.on('close', () => {
      clearTimeout(limit);
      timers.delete(limit);
      session.close();
      scripts.forget(session.id);
    });
  }

  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node leaves an upgraded connection's errors to its new owner: a client that resets it must not end the process.
    socket.on('error', (error) => deps.log.debug('realtime upgrade connection failed', { error: error.message }));
    const url = parseRequestTarget(request.url);
    if (!url) {
      refuse(socket, 400, 'invalid_request_error', 'The request target is not a valid URL path.');
      return;
    }
    if (url.pathname !== REALTIME_PATH) {
      refuse(socket, 404, 'not_found', `No websocket route ${url.pathname}.`);
      return;
    }
    if (request.method !== 'GET') {
      refuse(socket, 405, 'invalid_request_error', 'A websocket upgrade uses GET.');
      return;
    }
    const model = url.searchParams.get('model');
    if (!model) {
      refuse(socket, 400, 'invalid_request_error', 'The model query parameter is required.');
      return;
    }
    const { result, protocol } = authorize(request, model);
    if (!result.ok) {
      deps.log.info('realtime connection refused', { status: result.status, code: result.code });
      refuse(socket, result.status, result.code, result.message);
      return;
    }
    if (protocol) acceptedProtocol.set(request, protocol);
    sockets.handleUpgrade(request, socket, head, (ws) => open(ws, model, result.keyId));
  });

  return handle;
}
