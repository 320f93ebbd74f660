import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
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

/** The body as JSON; a body over the cap, not JSON, or not an object is the spec's "malformed body" 400. */
export async function readJsonObject(request: IncomingMessage): Promise<Readonly<Record<string, unknown>>> {
  const body = await readBodyWithin(request, MAX_REQUEST_BODY_BYTES);
  if (!body) throw new HttpError(400, 'invalid_request_error', `The request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes.`);
  const text = body.toString('utf8');
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_request_error', 'The request body is not valid JSON.');
  }
  if (!isRecord(value)) throw new HttpError(400, 'invalid_request_error', 'The request body must be a JSON object.');
  return value;
}
