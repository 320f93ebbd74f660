import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord, ownValue } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { LAYER_PREFIX, type Layer, type VideoOperation } from '../gateway/spec.ts';
import type { EmulatorConfig } from './config.ts';
import { closeAfterAnswer, HttpError, layerOfPath, readJsonObject, sendError, sendJson } from './http.ts';
import type { KeyAccount, KeyRegistry } from './keys.ts';
import type { RealtimeHandle } from './realtime/index.ts';
import { handleScriptRequest, REALTIME_SCRIPT_PATH } from './realtime/script.ts';
import { renderCompat, renderNative } from './render.ts';
import type { JournalEntry, RequestJournal } from './request-journal.ts';
import type { TaskEngine } from './tasks.ts';
import { parseTriggers, TriggerCounts } from './triggers.ts';
import { acceptRequest } from './validation.ts';

// The emulator's HTTP routes: video submissions, queries and contents of both layers, files, models,
// realtime client secrets and scripts. A route answers, or throws an HttpError that answerFailure words.

const OPERATIONS: Record<string, VideoOperation> = { generations: 'generate', edits: 'edit', extensions: 'extend' };
const SUBMIT = /^\/(v1|native\/v1)\/videos\/(generations|edits|extensions)$/;
const QUERY = /^\/(v1|native\/v1)\/videos\/([^/]+)$/;
const CONTENT = /^\/v1\/videos\/([^/]+)\/content$/;
const FILE = /^\/files\/([0-9a-f]+)\.mp4$/;
const STORED = /^\/stored\/(file_[0-9a-f]+)\.mp4$/;

/** A task id from the path. A malformed escape (`%E0%A4%A`) names no task, so it finds none (404). */
function decodeTaskId(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return '';
  }
}

function sendVideo(response: ServerResponse, bytes: Buffer): void {
  response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': bytes.length });
  response.end(bytes);
}

export interface RouteDeps {
  config: EmulatorConfig;
  keys: KeyRegistry;
  engine: TaskEngine;
  journal: RequestJournal;
  /** The realtime side, attached once the server listens (no request is routed before). */
  realtime: () => RealtimeHandle;
}

/** Routes one request Node parsed; `entry` is its journal entry, which learns its key (and its body). */
export type Route = (request: IncomingMessage, response: ServerResponse, path: string, entry: JournalEntry) => Promise<void>;

export function createRoutes({ config, keys, engine, journal, realtime }: RouteDeps): Route {
  /** How often each `[[http:...:N]]` prompt has been submitted so far. */
  const triggerCounts = new TriggerCounts();

  function authorize(request: IncomingMessage, entry: JournalEntry, now: number): KeyAccount {
    const account = keys.authenticate(request.headers.authorization);
    entry.keyId = account.keyId;
    keys.countRequest(account, now);
    return account;
  }

  async function submit(request: IncomingMessage, response: ServerResponse, layer: Layer, operation: VideoOperation, entry: JournalEntry) {
    const now = Date.now();
    // The key first: a stranger's body is never read, however large or broken.
    const account = authorize(request, entry, now);
    const { value: body, text } = await readJsonObject(request);
    journal.keepBody(entry, text);
    const prompt = typeof body.prompt === 'string' ? body.prompt : undefined;
    const triggers = parseTriggers(prompt);
    if (triggers.http) {
      const { times } = triggers.http;
      if (times === undefined || triggerCounts.count(prompt ?? '') <= times) {
        throw new HttpError(triggers.http.status, triggers.http.code, `Refused on request (${triggers.http.code}).`);
      }
    }
    if (typeof body.model === 'string') {
      if (!keys.isKnownModel(body.model)) throw new HttpError(404, 'model_not_found', `The model ${body.model} does not exist.`, 'model');
      if (!keys.mayUse(account, body.model))
        throw new HttpError(403, 'permission_denied', `This key's group may not use ${body.model}.`, 'model');
    }
    const accepted = acceptRequest(operation, layer, body, config.vendor);
    const slots = account.limits.concurrent_tasks;
    // Retry-After: 1, sendError's default for a 429: a slot frees whenever one of the key's tasks ends.
    if (engine.runningCount(account, now) >= slots) {
      throw new HttpError(429, 'too_many_requests', `At most ${slots} tasks may run at once for this key.`);
    }
    keys.charge(account, accepted.costUsd);
    const task = engine.create(operation, layer, account, accepted, triggers, now);
    sendJson(response, 200, layer === 'native' ? { request_id: task.id } : { task_id: task.id, status: 'queued' });
  }

  function query(request: IncomingMessage, response: ServerResponse, layer: Layer, id: string, entry: JournalEntry) {
    const now = Date.now();
    authorize(request, entry, now);
    const task = engine.get(decodeTaskId(id), layer, now);
    if (!task) {
      throw new HttpError(404, 'not_found', layer === 'native' ? 'No deferred video' : `No task ${id} on this layer.`);
    }
    const answer = layer === 'native' ? renderNative(engine, task, now) : renderCompat(engine, task, now);
    if (answer.body === undefined) {
      response.writeHead(answer.status, { 'content-length': 0 });
      response.end();
    } else {
      sendJson(response, answer.status, answer.body);
    }
  }

  function content(request: IncomingMessage, response: ServerResponse, id: string, entry: JournalEntry) {
    const now = Date.now();
    authorize(request, entry, now);
    const task = engine.get(decodeTaskId(id), 'compat', now);
    if (!task) throw new HttpError(404, 'not_found', `No task ${id} on this layer.`);
    if (task.state !== 'succeeded') throw new HttpError(400, 'invalid_request_error', `Task ${id} has no video (status ${task.state}).`);
    const bytes = engine.videoFor(task, now);
    if (!bytes) throw new HttpError(404, 'not_found', `The video of task ${id} is no longer available.`);
    sendVideo(response, bytes);
  }

  async function clientSecret(request: IncomingMessage, response: ServerResponse, entry: JournalEntry) {
    const now = Date.now();
    const account = authorize(request, entry, now);
    const { value: body } = await readJsonObject(request);
    const expiresAfter = body.expires_after;
    let seconds: number | undefined;
    if (expiresAfter !== undefined) {
      const value = isRecord(expiresAfter) ? expiresAfter.seconds : undefined;
      if (typeof value !== 'number')
        throw new HttpError(400, 'invalid_request_error', 'expires_after.seconds must be a number.', 'expires_after.seconds');
      seconds = value;
    }
    sendJson(response, 200, keys.issueClientSecret(account, seconds, now));
  }

  function models(request: IncomingMessage, response: ServerResponse, entry: JournalEntry) {
    const account = authorize(request, entry, Date.now());
    sendJson(response, 200, {
      object: 'list',
      data: keys.modelsOf(account).map((id) => ({ id, object: 'model', owned_by: config.vendor })),
    });
  }

  return async function route(request, response, path, entry) {
    const method = request.method ?? 'GET';
    let match: RegExpExecArray | null;
    if (method === 'GET' && (match = FILE.exec(path))) {
      const bytes = engine.temporaryFile(match[1]!, Date.now());
      if (!bytes) throw new HttpError(404, 'not_found', 'This video link has expired.');
      return sendVideo(response, bytes);
    }
    if (method === 'GET' && (match = STORED.exec(path))) {
      const bytes = engine.storedFile(match[1]!, Date.now());
      if (!bytes) throw new HttpError(404, 'not_found', 'This stored file does not exist or has expired.');
      return sendVideo(response, bytes);
    }
    if ((match = SUBMIT.exec(path))) {
      if (method !== 'POST') throw new HttpError(405, 'invalid_request_error', `Use POST for ${path}.`);
      return submit(request, response, layerOfPath(path), ownValue(OPERATIONS, match[2]!)!, entry);
    }
    if ((match = CONTENT.exec(path))) {
      if (method !== 'GET') throw new HttpError(405, 'invalid_request_error', `Use GET for ${path}.`);
      return content(request, response, match[1]!, entry);
    }
    if ((match = QUERY.exec(path))) {
      if (method !== 'GET') throw new HttpError(405, 'invalid_request_error', `Use GET for ${path}.`);
      return query(request, response, layerOfPath(path), match[2]!, entry);
    }
    if (path === `${LAYER_PREFIX.compat}/models`) {
      if (method !== 'GET') throw new HttpError(405, 'invalid_request_error', `Use GET for ${path}.`);
      return models(request, response, entry);
    }
    if (path === `${LAYER_PREFIX.native}/realtime/client_secrets`) {
      if (method !== 'POST') throw new HttpError(405, 'invalid_request_error', `Use POST for ${path}.`);
      return clientSecret(request, response, entry);
    }
    if (path === REALTIME_SCRIPT_PATH)
      return handleScriptRequest(request, response, () => authorize(request, entry, Date.now()).keyId, realtime());
    throw new HttpError(404, 'not_found', `No route ${method} ${path}.`);
  };
}

/** Answers a failed request in its layer's format. Never throws: a fault here must not end the process. */
export function answerFailure(log: Logger, request: IncomingMessage, response: ServerResponse, path: string, error: unknown): void {
  try {
    if (!(error instanceof HttpError)) log.error('emulator route failed', { path, error });
    if (response.headersSent) {
      response.destroy();
      return;
    }
    // A body left unread (refused before reading it, or over the cap) is not drained: the connection ends.
    // Not at once, though: Node destroys a closing connection as soon as the answer is out, and with the
    // client still sending, the reset can reach it before the answer does. It lingers instead, reading
    // and dropping what still comes, until the client closes (closeAfterAnswer).
    if (!request.complete) {
      response.setHeader('connection', 'close');
      const socket = request.socket;
      socket.destroySoon = () => closeAfterAnswer(socket);
    }
    sendError(
      response,
      layerOfPath(path),
      error instanceof HttpError ? error : new HttpError(500, 'upstream_error', 'The emulator failed unexpectedly.'),
    );
  } catch (failure) {
    log.error('emulator could not answer a failed request', { path, error: failure });
    response.destroy();
  }
}
