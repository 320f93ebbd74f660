// One error hierarchy for everything the gateway client can throw, after the openai SDK: every error
// carries what support and the retry logic need (HTTP status, code, param, type, request id) and a
// message that never contains a secret (server text passes through redact(), causes are rebuilt).
//
//   GatewayError
//   ├── GatewayApiError            the gateway answered with an HTTP error
//   │   ├── BadRequestError 400, AuthenticationError 401, PermissionDeniedError 403, NotFoundError 404
//   │   ├── RateLimitError 429 (rate_limit, too_many_requests), QuotaExceededError 429 insufficient_quota
//   │   └── ServerError 5xx
//   ├── GatewayConnectionError     no usable answer (refused, reset, timed out)
//   │   └── OutcomeUnknownError    a submission was sent but never answered: a task may exist
//   ├── MalformedResponseError     an answer that is not what the spec promises
//   ├── ResponseTooLargeError      a body over its cap (a video over the caller's maxBytes)
//   ├── VideoUnavailableError      downloadVideo on a task without a video (moderated, failed, running,
//   │                              or an address that is not an http(s) link)
//   ├── DownloadRefusedError       a download address that is not public (loopback, private, metadata…)
//   ├── NotAVideoError             a downloaded body that is neither an mp4 nor a WebM
//   └── ValidationError            a request refused before anything was sent; `field` names the field

import { redact } from '../lib/log.ts';
import { describeIssueInEnglish, type ValidationIssue } from './validation-issues.ts';
import { isRecord, readNumber, readRecord, readString, type JsonRecord, parseJsonText } from '../lib/json.ts';
import { graphemePrefix } from '../lib/text.ts';

export interface GatewayErrorDetails {
  status?: number | undefined;
  code?: string | undefined;
  param?: string | undefined;
  type?: string | undefined;
  requestId?: string | undefined;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly status: number | undefined;
  readonly code: string | undefined;
  readonly param: string | undefined;
  readonly type: string | undefined;
  /** The response's request id (`x-request-id` or `request-id`), for support. */
  readonly requestId: string | undefined;

  constructor(message: string, details: GatewayErrorDetails = {}) {
    super(redact(message), details.cause === undefined ? undefined : { cause: safeCause(details.cause) });
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code;
    this.param = details.param;
    this.type = details.type;
    this.requestId = details.requestId;
  }
}

/**
 * Library errors (undici, sockets) are rebuilt with a scrubbed message and only their name and code, so
 * nothing they captured (headers, request options) can carry a key into logs through `cause`.
 */
function safeCause(cause: unknown): Error {
  if (!(cause instanceof Error)) return new Error(redact(String(cause)));
  const copy = new Error(redact(cause.message));
  copy.name = cause.name;
  const code = readString(cause, 'code');
  if (code !== undefined) Object.defineProperty(copy, 'code', { value: code, enumerable: true });
  return copy;
}

export interface ApiErrorDetails extends GatewayErrorDetails {
  status: number;
  /** The message as the gateway worded it (scrubbed), for showing to a user. */
  serverMessage: string;
  /** How long the gateway asked us to wait (`Retry-After`), in milliseconds. */
  retryAfterMs?: number | undefined;
  /** Native bodies report what the failed call cost (`usage.cost_in_usd_ticks`). */
  costUsdTicks?: number | undefined;
}

export class GatewayApiError extends GatewayError {
  declare readonly status: number;
  readonly serverMessage: string;
  readonly retryAfterMs: number | undefined;
  readonly costUsdTicks: number | undefined;

  constructor(details: ApiErrorDetails) {
    const label = details.code === undefined ? `HTTP ${details.status}` : `HTTP ${details.status} ${details.code}`;
    super(`${label}: ${details.serverMessage}`, details);
    this.serverMessage = redact(details.serverMessage);
    this.retryAfterMs = details.retryAfterMs;
    this.costUsdTicks = details.costUsdTicks;
  }
}

export class BadRequestError extends GatewayApiError {}
export class AuthenticationError extends GatewayApiError {}
export class PermissionDeniedError extends GatewayApiError {}
export class NotFoundError extends GatewayApiError {}
/** Rate or concurrency limit: temporary, worth retrying later. */
export class RateLimitError extends GatewayApiError {}
/** The key's quota cannot pay for this request: not temporary, never retried. */
export class QuotaExceededError extends GatewayApiError {}
export class ServerError extends GatewayApiError {}

export interface ConnectionErrorDetails extends GatewayErrorDetails {
  /** False when the request certainly never reached the gateway (refused, DNS, connect timeout). */
  requestSent: boolean;
  timedOut: boolean;
}

export class GatewayConnectionError extends GatewayError {
  readonly requestSent: boolean;
  readonly timedOut: boolean;

  constructor(message: string, details: ConnectionErrorDetails) {
    super(message, details);
    this.requestSent = details.requestSent;
    this.timedOut = details.timedOut;
  }
}

/**
 * A submission reached the gateway but no answer came back: the task may or may not exist (and may be
 * charged). Never retried, because a retry could create and charge a second task.
 */
export class OutcomeUnknownError extends GatewayConnectionError {}

export class MalformedResponseError extends GatewayError {}

export class ResponseTooLargeError extends GatewayError {
  /** The full size when the server announced it (`content-length`), otherwise undefined. */
  readonly size: number | undefined;
  readonly limit: number;

  constructor(message: string, details: GatewayErrorDetails & { size: number | undefined; limit: number }) {
    super(message, details);
    this.size = details.size;
    this.limit = details.limit;
  }
}

/** `not-http`: the gateway gave the video's address as something other than an http(s) link. */
export type VideoUnavailableReason = 'moderated' | 'failed' | 'expired' | 'running' | 'missing' | 'not-http';

export class VideoUnavailableError extends GatewayError {
  readonly reason: VideoUnavailableReason;

  constructor(message: string, reason: VideoUnavailableReason) {
    super(message);
    this.reason = reason;
  }
}

/**
 * A download that would connect to an address that is not on the public internet (loopback, private,
 * link-local, metadata…) on a host that is neither the gateway's own nor allowed. Nothing was sent.
 */
export class DownloadRefusedError extends GatewayError {
  /** The host as the address (or a redirect) named it. */
  readonly host: string;
  /** The IP address it is, or resolved to. */
  readonly address: string;

  constructor(host: string, address: string) {
    const where = host === address ? address : `${host} (${address})`;
    super(`The video address ${where} is not a public address and its host is not allowed, so it was not fetched`);
    this.host = host;
    this.address = address;
  }
}

/** A download whose body does not start like a video (an mp4 `ftyp` box or a WebM/Matroska header). */
export class NotAVideoError extends GatewayError {
  /** What the answer said it was (`content-type`), when it said. */
  readonly contentType: string | undefined;

  constructor(contentType: string | undefined, details: GatewayErrorDetails = {}) {
    super(`The video address answered with something that is not a video${contentType ? ` (${contentType})` : ''}`, details);
    this.contentType = contentType;
  }
}

/**
 * A request refused before it was sent. `field` is the wire name of the offending field, `issue` the rule
 * it breaks as data (for words in another language); the message states it in English.
 */
export class ValidationError extends GatewayError {
  readonly field: string;
  readonly issue: ValidationIssue;

  constructor(field: string, issue: ValidationIssue) {
    super(describeIssueInEnglish(field, issue), { param: field, code: 'invalid_request_error' });
    this.field = field;
    this.issue = issue;
  }
}

// ---- Decoding error answers ----------------------------------------------------------------------

const MAX_SNIPPET = 200;

/** The fields an error answer may carry, wherever its layer puts them. */
export interface DecodedErrorBody {
  message: string | undefined;
  code: string | undefined;
  param: string | undefined;
  type: string | undefined;
  costUsdTicks: number | undefined;
}

/**
 * Reads both formats: the compatibility envelope `{error:{message,type,param,code}}` and the native body
 * `{code, error: "text", usage}`. Also tolerates the mixes seen upstream (`{error:{message}}` on the
 * native layer, a top-level `message`).
 */
function decodeErrorBody(body: unknown): DecodedErrorBody {
  const envelope = readRecord(body, 'error');
  const costUsdTicks = readNumber(readRecord(body, 'usage'), 'cost_in_usd_ticks');
  if (envelope) {
    return {
      message: readString(envelope, 'message') ?? readString(body, 'message'),
      code: readString(envelope, 'code') ?? readString(body, 'code'),
      param: readString(envelope, 'param'),
      type: readString(envelope, 'type') ?? readString(body, 'type'),
      costUsdTicks,
    };
  }
  return {
    message: readString(body, 'error') ?? readString(body, 'message'),
    code: readString(body, 'code'),
    param: readString(body, 'param'),
    type: readString(body, 'type'),
    costUsdTicks,
  };
}

export interface ErrorResponse {
  status: number;
  bodyText: string;
  requestId: string | undefined;
  retryAfterMs: number | undefined;
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_SNIPPET ? `${graphemePrefix(flat, MAX_SNIPPET)}…` : flat;
}

/** Turns any HTTP error answer, JSON or not, into the matching GatewayApiError. Never throws. */
export function errorFromResponse(response: ErrorResponse): GatewayApiError {
  const parsed = parseJsonText(response.bodyText);
  let decoded: DecodedErrorBody = {
    message: undefined,
    code: undefined,
    param: undefined,
    type: undefined,
    costUsdTicks: undefined,
  };
  let serverMessage: string;
  if (parsed.ok && isRecord(parsed.value)) {
    decoded = decodeErrorBody(parsed.value);
    serverMessage = decoded.message ?? `an error body without a message (${snippet(response.bodyText)})`;
  } else if (parsed.ok || !parsed.empty) {
    serverMessage = `an unexpected error body (${snippet(response.bodyText)})`;
  } else {
    serverMessage = 'an empty error body';
  }
  const details: ApiErrorDetails = {
    status: response.status,
    serverMessage,
    code: decoded.code,
    param: decoded.param ?? undefined,
    type: decoded.type,
    requestId: response.requestId,
    retryAfterMs: response.retryAfterMs,
    costUsdTicks: decoded.costUsdTicks,
  };
  return new (apiErrorClass(response.status, decoded.code))(details);
}

function apiErrorClass(status: number, code: string | undefined): new (details: ApiErrorDetails) => GatewayApiError {
  if (code === 'insufficient_quota') return QuotaExceededError;
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return AuthenticationError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 429:
      return RateLimitError;
    default:
      return status >= 500 ? ServerError : GatewayApiError;
  }
}

// ---- A task's own error --------------------------------------------------------------------------

export interface TaskError {
  /** One of the spec's asynchronous codes (`invalid_argument`, ...), or undefined when none was given. */
  code: string | undefined;
  message: string;
}

/**
 * A failed task's `error`, written as an object `{code, message}` or as a string (then the code, if any,
 * sits at the top level as in native bodies). undefined when the result has no error.
 */
export function decodeTaskError(result: JsonRecord): TaskError | undefined {
  const value = result['error'];
  if (isRecord(value)) {
    return {
      code: readString(value, 'code') ?? readString(result, 'code'),
      message: redact(readString(value, 'message') ?? 'The task failed without a message.'),
    };
  }
  if (typeof value === 'string') {
    return { code: readString(result, 'code'), message: redact(value === '' ? 'The task failed without a message.' : value) };
  }
  return undefined;
}

/** Content moderation codes look like `imagine:content-moderated` (the prefix is the provider's). */
export function isModerationCode(code: string | undefined): boolean {
  return code !== undefined && /(^|:)content[-_]moderat/i.test(code);
}

/**
 * A task's error message that says content moderation refused it: the word "moderation" or "moderated"
 * (a prefix of a word such as "unmoderated" does not count). Deliberately narrow: the contract gives no
 * wording, and a bad input read as moderation would tell a member the wrong thing.
 */
const MODERATION_MESSAGE = /\bmoderat(?:ion|ed)\b/i;

/**
 * Whether a failed task was refused by the provider's content moderation (docs/gateway.md, "Task result"):
 * a moderation code, or `invalid_argument` (whose meanings include "blocked by content moderation", the
 * compatibility layer's only code for it) with a message that says moderation. The code still decides
 * what the bot does (a refusal, never retried); the message only chooses the words it is told in.
 */
export function isModerationRefusal(error: TaskError | undefined): boolean {
  if (!error) return false;
  if (isModerationCode(error.code)) return true;
  return error.code === 'invalid_argument' && MODERATION_MESSAGE.test(error.message);
}
