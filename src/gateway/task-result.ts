// One task result for both layers. The layers differ in names (task_id/request_id, url/video.url) and
// status words; everything downstream (poller, delivery) sees only TaskResult.

import type { Layer } from './spec.ts';
import { USD_TICKS } from './spec.ts';
import { MalformedResponseError, decodeTaskError, isModerationRefusal } from './errors.ts';
import { isHttpUrl } from '../lib/url.ts';
import {
  isRecord,
  readBoolean,
  readNonEmptyString,
  readNumber,
  readRecord,
  readString,
  readTimestamp,
  ownValue,
  type JsonRecord,
} from '../lib/json.ts';
import type { StoredFile, SubmittedTask, TaskResult, TaskStatus } from './types.ts';

// Both vocabularies are accepted on both layers: a status word never means two different things.
const STATUS_WORDS: Record<string, TaskStatus> = {
  pending: 'running',
  queued: 'running',
  processing: 'running',
  done: 'succeeded',
  succeeded: 'succeeded',
  failed: 'failed',
  expired: 'expired',
};

interface AnswerContext {
  layer: Layer;
  requestId: string | undefined;
}

/** The answer to a generation, edit or extension submission. */
export function parseSubmission(body: unknown, context: AnswerContext): SubmittedTask {
  const idField = context.layer === 'native' ? 'request_id' : 'task_id';
  const id = readNonEmptyString(body, idField) ?? readNonEmptyString(body, 'id');
  if (id === undefined) {
    throw new MalformedResponseError(
      `The gateway accepted the submission but its answer has no ${idField}; a task may exist without an id to query`,
      { requestId: context.requestId },
    );
  }
  return { id, layer: context.layer, status: 'running', rawStatus: readString(body, 'status'), requestId: context.requestId };
}

function parseStoredFile(value: JsonRecord | undefined): StoredFile | undefined {
  const fileId = readNonEmptyString(value, 'file_id');
  if (value === undefined || fileId === undefined) return undefined;
  // A link the bot would post: only an http(s) one (a `javascript:` link once went out as "a lasting link").
  const publicUrl = readNonEmptyString(value, 'public_url');
  const usable = publicUrl !== undefined && isHttpUrl(publicUrl);
  return {
    fileId,
    filename: readString(value, 'filename'),
    expiresAt: readTimestamp(value, 'expires_at'),
    publicUrl: usable ? publicUrl : undefined,
    ...(publicUrl !== undefined && !usable ? { refusedPublicUrl: publicUrl } : {}),
  };
}

/** A storage failure reason, written as text or as an error object with a message. */
function readStorageError(source: JsonRecord | undefined): string | undefined {
  return readNonEmptyString(source, 'storage_error') ?? readNonEmptyString(readRecord(source, 'storage_error'), 'message');
}

/**
 * `progress` (0-100) when the answer has one. The spec does not show its type and docs/gateway.md ("Query results") says to
 * show it when present, so a number written as text ("40", "40%") counts too.
 */
function readProgress(body: JsonRecord): number | undefined {
  const text = readString(body, 'progress');
  const match = text === undefined ? undefined : /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(text);
  const value = match ? Number(match[1]) : readNumber(body, 'progress');
  return value === undefined ? undefined : Math.min(100, Math.max(0, value));
}

export interface TaskAnswer extends AnswerContext {
  /** The id that was queried: the answer's own id field is optional. */
  id: string;
  httpStatus: number;
  /** The parsed JSON body, or undefined when the body was empty. */
  body: unknown;
}

/**
 * A status-less answer means "still running" for the native layer (docs/gateway.md, "Query results": 200 and 202 alike, a
 * missing body is still pending) and for a 202 on either layer; elsewhere it is not a task result.
 */
function statusMayBeMissing(answer: TaskAnswer): boolean {
  return answer.httpStatus === 202 || (answer.layer === 'native' && answer.httpStatus >= 200 && answer.httpStatus < 300);
}

/**
 * Normalises a query answer. A pending native task may come as HTTP 200 or 202, with or without a body
 * or a status; all mean "still running". Anything else that is not a task result is a
 * MalformedResponseError.
 */
export function parseTaskResult(answer: TaskAnswer): TaskResult {
  const base = { id: answer.id, layer: answer.layer, requestId: answer.requestId };
  if (answer.body === undefined) {
    if (!statusMayBeMissing(answer)) {
      throw new MalformedResponseError(`The gateway answered the query of task ${answer.id} with an empty body`, {
        status: answer.httpStatus,
        requestId: answer.requestId,
      });
    }
    return emptyResult(base, 'running');
  }
  const body = answer.body;
  if (!isRecord(body)) {
    throw new MalformedResponseError(`The gateway's answer for task ${answer.id} is not a JSON object`, {
      status: answer.httpStatus,
      requestId: answer.requestId,
    });
  }
  const rawStatus = readString(body, 'status');
  const status = rawStatus === undefined ? (statusMayBeMissing(answer) ? 'running' : undefined) : ownValue(STATUS_WORDS, rawStatus);
  if (status === undefined) {
    throw new MalformedResponseError(
      rawStatus === undefined
        ? `The gateway's answer for task ${answer.id} has no status`
        : `The gateway's answer for task ${answer.id} has an unknown status "${rawStatus.slice(0, 40)}"`,
      { status: answer.httpStatus, requestId: answer.requestId },
    );
  }

  const video = readRecord(body, 'video');
  const error =
    decodeTaskError(body) ?? (status === 'failed' ? { code: undefined, message: 'The task failed without a reason.' } : undefined);
  const moderated =
    readBoolean(video, 'respect_moderation') === false || readBoolean(body, 'respect_moderation') === false || isModerationRefusal(error);
  const url =
    answer.layer === 'compat' ? (readNonEmptyString(body, 'url') ?? readNonEmptyString(video, 'url')) : readNonEmptyString(video, 'url');
  const costUsdTicks = readNumber(readRecord(body, 'usage'), 'cost_in_usd_ticks');
  const hasVideo = status === 'succeeded' && !moderated && url !== undefined;
  const usableUrl = hasVideo && isHttpUrl(url);

  return {
    ...base,
    status,
    rawStatus,
    progress: readProgress(body),
    videoUrl: usableUrl ? url : undefined,
    ...(hasVideo && !usableUrl ? { refusedVideoUrl: url } : {}),
    moderated,
    durationSeconds: readNumber(video, 'duration') ?? readNumber(body, 'duration'),
    model: readString(body, 'model'),
    file: parseStoredFile(readRecord(video, 'file_output') ?? readRecord(body, 'file_output')),
    storageError: readStorageError(video) ?? readStorageError(body),
    costUsdTicks,
    costUsd: costUsdTicks === undefined ? undefined : costUsdTicks / USD_TICKS,
    error,
  };
}

function emptyResult(base: Pick<TaskResult, 'id' | 'layer' | 'requestId'>, status: TaskStatus): TaskResult {
  return {
    ...base,
    status,
    rawStatus: undefined,
    progress: undefined,
    videoUrl: undefined,
    moderated: false,
    durationSeconds: undefined,
    model: undefined,
    file: undefined,
    storageError: undefined,
    costUsdTicks: undefined,
    costUsd: undefined,
    error: undefined,
  };
}
