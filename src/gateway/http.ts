// The HTTP layer under the gateway client: one pooled undici dispatcher, timeouts, size caps on every
// body, and network failures turned into typed errors that say whether the request ever left.

import { open, type FileHandle } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { rootCertificates } from 'node:tls';
import { Agent, request, type Dispatcher } from 'undici';
import { DownloadRefusedError, GatewayConnectionError, OutcomeUnknownError, ResponseTooLargeError } from './errors.ts';

export interface GatewayTimeouts {
  /** TCP/TLS connection setup. */
  connectMs: number;
  /** From sending the request to the end of the response headers. */
  headersMs: number;
  /** The longest silence while a body streams in (not the whole download). */
  bodyMs: number;
  /**
   * The whole exchange of a video download, from sending to the last byte, so a server trickling bytes
   * cannot hold it forever. Long enough for a large video on a slow link.
   */
  totalMs: number;
  /**
   * The whole exchange of a JSON answer (a submission, a poll, the model list): short, so that a gateway
   * trickling its answer holds one of the poller's few slots for seconds, not minutes.
   */
  answerMs: number;
}

export const DEFAULT_TIMEOUTS: GatewayTimeouts = {
  connectMs: 10_000,
  headersMs: 20_000,
  bodyMs: 20_000,
  totalMs: 300_000,
  answerMs: 20_000,
};

/** JSON answers of the gateway are small; anything bigger is a fault, not data. */
export const MAX_JSON_BYTES = 1024 * 1024;
/** Enough of an error body to read its code and message. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

export function createGatewayDispatcher(options: { connectMs?: number; connections?: number; ca?: readonly string[] } = {}): Agent {
  return new Agent({
    connect: { timeout: options.connectMs ?? DEFAULT_TIMEOUTS.connectMs, ...(options.ca ? { ca: [...options.ca] } : {}) },
    connections: options.connections ?? 16,
    keepAliveTimeout: 10_000,
  });
}

/**
 * The authorities a connection trusts when the caller adds `ca` (PEM): Node's public ones and `ca`.
 * Undefined without it, which keeps Node's default (NODE_EXTRA_CA_CERTS included).
 */
export function trustedAuthorities(ca: string | undefined): string[] | undefined {
  return ca === undefined ? undefined : [...rootCertificates, ca];
}

let shared: Agent | undefined;

/** One pool for every client in the process (clients differ by key or layer, not by host). */
export function sharedGatewayDispatcher(): Agent {
  shared ??= createGatewayDispatcher();
  return shared;
}

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Safe to repeat: decides whether a sent-but-unanswered request is "outcome unknown". */
  idempotent: boolean;
  dispatcher: Dispatcher;
  timeouts: GatewayTimeouts;
  /** Cap on a successful answer's body; error bodies have their own small cap. */
  maxBytes: number;
  /**
   * Write a successful (2xx) answer's body to this file (created or emptied) instead of memory, under
   * the same cap; other answers are read into `body` as usual.
   */
  saveTo?: string;
  /** With `saveTo`: how many leading bytes of the saved body to keep in `saved.head`. */
  headBytes?: number;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  requestId: string | undefined;
  /** Empty when the body went to a file (`saved`). */
  body: Buffer;
  /** When the body was written to `HttpRequest.saveTo`: its size and its first bytes. */
  saved?: { size: number; head: Buffer };
}

// Failures that happen before a single byte of the request left: the gateway cannot have seen it.
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/** Our own code for a request stopped at its overall deadline (GatewayTimeouts.totalMs). */
const DEADLINE_CODE = 'REQUEST_DEADLINE_EXCEEDED';
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', DEADLINE_CODE]);

/** The error code, looking through undici's and net's wrappers (cause, AggregateError). */
function networkErrorCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const own = (error as Error & { code?: unknown }).code;
  if (typeof own === 'string') return own;
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const code = networkErrorCode(inner);
      if (code !== undefined) return code;
    }
  }
  return error.cause === undefined ? undefined : networkErrorCode(error.cause);
}

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The answer's request identifier. The spec says every response carries one but not under which header:
 * `x-request-id` (the emulator's, OpenAI's) or `request-id`.
 */
export function requestIdOf(headers: IncomingHttpHeaders): string | undefined {
  return headerValue(headers, 'x-request-id') ?? headerValue(headers, 'request-id');
}

/** Where the request went, for messages: origin and path, never the query (signed urls) or headers. */
function describeTarget(method: string, url: string): string {
  const parsed = URL.parse(url);
  return parsed ? `${method} ${parsed.origin}${parsed.pathname}` : method;
}

function networkFailure(
  error: unknown,
  target: HttpRequest,
  answered: boolean,
  deadlinePassed: boolean,
  requestId?: string,
): GatewayConnectionError {
  const code = deadlinePassed ? DEADLINE_CODE : networkErrorCode(error);
  const requestSent = answered || code === undefined || !NOT_SENT_CODES.has(code);
  const timedOut = code !== undefined && TIMEOUT_CODES.has(code);
  const what = describeTarget(target.method, target.url);
  const how = deadlinePassed
    ? `did not finish within its ${target.timeouts.totalMs} ms deadline`
    : timedOut
      ? 'timed out'
      : `failed (${code ?? 'network error'})`;
  const details = { requestSent, timedOut, code, requestId, cause: error };
  if (requestSent && !target.idempotent) {
    return new OutcomeUnknownError(
      `${what} ${how} after the request was sent; the gateway may have accepted it, so it was not repeated`,
      details,
    );
  }
  return new GatewayConnectionError(`${what} ${how}`, details);
}

/** Stops a body we will not read; undici reports the abort as an error that nobody needs to see. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** The refusal of a download's address, looking through undici's and net's wrappers. */
function downloadRefusal(error: unknown): DownloadRefusedError | undefined {
  if (error instanceof DownloadRefusedError) return error;
  if (!(error instanceof Error)) return undefined;
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const found = downloadRefusal(inner);
      if (found) return found;
    }
  }
  return downloadRefusal(error.cause);
}

/** A write to the download's file failed: the bot's own trouble (a full disk), not the network's. */
class FileWriteFailure extends Error {}

/**
 * Streams a body into an open file under a cap, one chunk in memory at a time (each write is awaited
 * before the next chunk is read, so a slow disk slows the download instead of filling memory).
 */
async function saveCapped(
  body: Dispatcher.ResponseData['body'],
  limit: number,
  file: FileHandle,
  headBytes: number,
): Promise<{ size: number; head: Buffer; overflow: boolean }> {
  let size = 0;
  let head = Buffer.alloc(0);
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    if (size + buffer.length > limit) {
      discard(body);
      return { size, head, overflow: true };
    }
    if (head.length < headBytes) head = Buffer.concat([head, buffer.subarray(0, headBytes - head.length)]);
    try {
      await file.write(buffer);
    } catch (error) {
      throw new FileWriteFailure('could not write the download to its file', { cause: error });
    }
    size += buffer.length;
  }
  return { size, head, overflow: false };
}

async function readCapped(body: Dispatcher.ResponseData['body'], limit: number): Promise<{ bytes: Buffer; overflow: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    if (total + buffer.length > limit) {
      chunks.push(buffer.subarray(0, limit - total));
      discard(body);
      return { bytes: Buffer.concat(chunks), overflow: true };
    }
    chunks.push(buffer);
    total += buffer.length;
  }
  return { bytes: Buffer.concat(chunks), overflow: false };
}

/**
 * Sends one request and reads the whole answer under its cap. HTTP error statuses are returned, not
 * thrown (the caller decodes them); network failures and oversized bodies throw typed errors.
 */
export async function sendRequest(target: HttpRequest): Promise<HttpResponse> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), target.timeouts.totalMs);
  try {
    return await exchange(target, deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}

async function exchange(target: HttpRequest, deadline: AbortSignal): Promise<HttpResponse> {
  let response: Dispatcher.ResponseData;
  try {
    response = await request(target.url, {
      method: target.method,
      headers: target.headers,
      body: target.body ?? null,
      dispatcher: target.dispatcher,
      headersTimeout: target.timeouts.headersMs,
      bodyTimeout: target.timeouts.bodyMs,
      idempotent: target.idempotent,
      signal: deadline,
    });
  } catch (error) {
    // Refused before connecting: nothing was sent, and trying again would be refused the same way.
    throw downloadRefusal(error) ?? networkFailure(error, target, false, deadline.aborted);
  }
  const { statusCode: status, headers, body } = response;
  const requestId = requestIdOf(headers);
  const failed = status >= 400;
  const limit = failed ? MAX_ERROR_BODY_BYTES : target.maxBytes;

  const announced = Number(headerValue(headers, 'content-length'));
  if (!failed && Number.isFinite(announced) && announced > limit) {
    discard(body);
    throw new ResponseTooLargeError(
      `${describeTarget(target.method, target.url)} answered ${announced} bytes, over the limit of ${limit}`,
      { size: announced, limit, status, requestId },
    );
  }
  const saveTo = status >= 200 && status < 300 ? target.saveTo : undefined;
  if (saveTo !== undefined) return saveBody(target, response, saveTo, deadline, requestId);
  let read: { bytes: Buffer; overflow: boolean };
  try {
    read = await readCapped(body, limit);
  } catch (error) {
    // The gateway answered; only a successful submission's answer leaves the outcome open.
    throw networkFailure(error, { ...target, idempotent: target.idempotent || failed }, true, deadline.aborted, requestId);
  }
  if (read.overflow && !failed) {
    throw new ResponseTooLargeError(`${describeTarget(target.method, target.url)} sent more than the limit of ${limit} bytes`, {
      size: undefined,
      limit,
      status,
      requestId,
    });
  }
  // An error body cut at its cap is still worth decoding as far as it goes.
  return { status, headers, requestId, body: read.bytes };
}

async function saveBody(
  target: HttpRequest,
  response: Dispatcher.ResponseData,
  path: string,
  deadline: AbortSignal,
  requestId: string | undefined,
): Promise<HttpResponse> {
  const { statusCode: status, headers, body } = response;
  let saved: { size: number; head: Buffer; overflow: boolean };
  let file: FileHandle | undefined;
  try {
    file = await open(path, 'w');
    saved = await saveCapped(body, target.maxBytes, file, target.headBytes ?? 0);
  } catch (error) {
    discard(body);
    if (file === undefined) throw error;
    if (error instanceof FileWriteFailure) throw error.cause;
    throw networkFailure(error, target, true, deadline.aborted, requestId);
  } finally {
    await file?.close();
  }
  if (saved.overflow) {
    throw new ResponseTooLargeError(`${describeTarget(target.method, target.url)} sent more than the limit of ${target.maxBytes} bytes`, {
      size: undefined,
      limit: target.maxBytes,
      status,
      requestId,
    });
  }
  return { status, headers, requestId, body: Buffer.alloc(0), saved: { size: saved.size, head: saved.head } };
}
