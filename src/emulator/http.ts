import { randomBytes } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { isRecord } from '../lib/json.ts';
import { readBodyWithin } from '../lib/http-body.ts';
import type { Layer } from '../gateway/spec.ts';

// Answers in the spec's formats. Every response carries x-request-id; errors are the compatibility
// envelope under /v1 and the native body under /native/v1.

const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

export function newRequestId(): string {
  return `req_${randomBytes(10).toString('hex')}`;
}

export function layerOfPath(path: string): Layer {
  return path.startsWith('/native/') ? 'native' : 'compat';
}

export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly param: string | null;
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, code: string, message: string, param: string | null = null, retryAfterSeconds?: number) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The request target as a URL, or undefined when it is not one (`GET //[`): any client can send that. */
export function parseRequestTarget(target: string | undefined): URL | undefined {
  return URL.parse(target ?? '/', 'http://emulator') ?? undefined;
}

export function invalidTargetError(): HttpError {
  return new HttpError(400, 'invalid_request_error', 'The request target is not a valid URL path.');
}

/** The most bytes of request line and headers a request may have (Node's default, named): more is 431. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** An HTTP/1.1 request must name its host (RFC 9112, 3.2). */
export function missingHostError(): HttpError {
  return new HttpError(400, 'invalid_request_error', 'An HTTP/1.1 request needs a Host header.');
}

/** The answer to a request Node could not parse, by the parser's error code. */
export function unparsableRequestError(code: string | undefined): HttpError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HttpError(431, 'invalid_request_error', `The request line and headers are larger than ${MAX_HEADER_BYTES} bytes.`);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new HttpError(413, 'invalid_request_error', 'The chunk extensions of the request body are too large.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new HttpError(408, 'invalid_request_error', 'The request did not arrive in time.');
    default:
      return new HttpError(400, 'invalid_request_error', `The request is not valid HTTP/1.1${code ? ` (${code})` : ''}.`);
  }
}

/** 429 and 503 tell the client when to come back; a used-up quota is not temporary, so it does not. */
function retryAfterFor(error: HttpError): number | undefined {
  if (error.code === 'insufficient_quota') return undefined;
  if (error.retryAfterSeconds !== undefined) return error.retryAfterSeconds;
  return error.status === 429 || error.status === 503 ? 1 : undefined;
}

function errorBody(layer: Layer, error: HttpError): unknown {
  if (layer === 'native') return { code: error.code, error: error.message, usage: { cost_in_usd_ticks: 0 } };
  return { error: { message: error.message, type: 'gateway_api_error', param: error.param, code: error.code } };
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

export function sendError(response: ServerResponse, layer: Layer, error: HttpError): void {
  const retryAfter = retryAfterFor(error);
  sendJson(response, error.status, errorBody(layer, error), retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) });
}

/** How long a connection closed after an answer written by hand stays half-open for the client to read it. */
const LINGER_MS = 5000;

/**
 * Ends a connection after what was written to it, and lets the client read that: its side stays open
 * (and what it still sends is read and dropped) until it closes, or LINGER_MS at most. Closing outright
 * with unread bytes would reset the connection and could lose the answer on the way.
 */
export function closeAfterAnswer(socket: Duplex, text?: string): void {
  if (socket.destroyed) return;
  socket.end(text);
  socket.resume();
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

/**
 * A whole HTTP/1.1 JSON answer written straight onto a connection, which then closes: for what Node hands
 * over without a ServerResponse (a request it could not parse, CONNECT, a websocket upgrade).
 */
export function answerOnSocket(socket: Duplex, status: number, body: unknown, requestId: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const text = JSON.stringify(body);
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
    `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`;
  closeAfterAnswer(socket, head + text);
}

/** An error in the spec's format of `layer`, written straight onto a connection (see answerOnSocket). */
export function sendErrorOnSocket(socket: Duplex, layer: Layer, error: HttpError, requestId: string): void {
  answerOnSocket(socket, error.status, errorBody(layer, error), requestId);
}

export interface JsonBody {
  value: Readonly<Record<string, unknown>>;
  /** The body as it was sent (`{}` for an empty one). */
  text: string;
}

/** The body as JSON; a body over the cap, not JSON, or not an object is the spec's "malformed body" 400. */
export async function readJsonObject(request: IncomingMessage): Promise<JsonBody> {
  let body: Buffer | undefined;
  try {
    body = await readBodyWithin(request, MAX_REQUEST_BODY_BYTES);
  } catch {
    // The connection broke mid-body (a bad chunk, a reset): answered in this request's name if it still can be.
    throw new HttpError(
      400,
      'invalid_request_error',
      'The request body could not be read: the connection broke off or the body is not valid HTTP.',
    );
  }
  if (!body) throw new HttpError(400, 'invalid_request_error', `The request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes.`);
  const text = body.toString('utf8');
  if (text.trim() === '') return { value: {}, text: '{}' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_request_error', 'The request body is not valid JSON.');
  }
  if (!isRecord(value)) throw new HttpError(400, 'invalid_request_error', 'The request body must be a JSON object.');
  return { value, text };
}
