import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { isRecord, parseJsonText } from '../lib/json.ts';
import { LAYER_PREFIX, type Layer, type VideoOperation } from '../gateway/spec.ts';
import { silentLogger, type Logger } from '../lib/log.ts';
import { resolveConfig, type EmulatorConfig, type EmulatorConfigInput } from './config.ts';
import {
  closeAfterAnswer,
  HttpError,
  invalidTargetError,
  layerOfPath,
  MAX_HEADER_BYTES,
  missingHostError,
  newRequestId,
  parseRequestTarget,
  readJsonObject,
  sendError,
  sendErrorOnSocket,
  sendJson,
  unparsableRequestError,
} from './http.ts';
import { KeyRegistry, keyIdOf, type KeyAccount } from './keys.ts';
import { attachRealtime, type RealtimeHandle } from './realtime/index.ts';
import { handleScriptRequest, REALTIME_SCRIPT_PATH } from './realtime/script.ts';
import { renderCompat, renderNative } from './render.ts';
import { TaskEngine, type Upload } from './tasks.ts';
import { parseTriggers, TriggerCounts } from './triggers.ts';
import { acceptRequest } from './validation.ts';
import { BoundedJournal, type JournalLimits } from './journal.ts';
import { waitUntil } from '../lib/wait-until.ts';
import { DEFAULT_BIND_HOST, generateCertificate, parsePublicUrl, reachableHost, urlHost, type EmulatorTls, type GeneratedCertificate } from './hosting.ts';

// A local gateway faithful to docs/gateway.md, for development, demos, tests and benchmarks: both layers,
// edits and extensions, quotas and limits, storage and uploads, realtime voice, and prompt triggers.

export interface JournalEntry {
  method: string;
  path: string;
  status: number;
  /** Which key called (a fingerprint: `emulator.keyIdOf(key)`), when it authenticated. */
  keyId?: string;
  /**
   * The request body, parsed, of the newest submissions (see BODY_JOURNAL_LIMITS). It is kept as the text
   * that was sent and parsed on each read: a parsed body of nested junk weighs many times its text.
   */
  body?: unknown;
  requestId: string;
  at: number;
}

export interface EmulatorOptions {
  config?: EmulatorConfigInput;
  port?: number;
  /** The address to listen on; default 127.0.0.1. */
  host?: string;
  /**
   * Serve HTTPS and WSS (on the same port): `true` with a self-signed certificate made at start for
   * localhost, 127.0.0.1, ::1, `host` and the public URL's host (see `caCert`), or one's own PEM pair.
   */
  tls?: EmulatorTls;
  /**
   * The base of every URL the emulator gives out (video urls, `baseUrl`, `wsUrl`) instead of its
   * listening address: how clients elsewhere (another machine, behind a proxy) reach it.
   */
  publicUrl?: string;
  log?: Logger;
  /** Use only the configured keys (a configuration file), not also the default `emulator-key`. */
  onlyGivenKeys?: boolean;
}

export interface Emulator {
  /** The base of the URLs the emulator gives out: the public URL when given, else `listenUrl`. */
  readonly baseUrl: string;
  /** `baseUrl` as a websocket URL (`ws:` or `wss:`). */
  readonly wsUrl: string;
  /** Where it listens: `http(s)://<host>:<port>`, 127.0.0.1 for a wildcard host. */
  readonly listenUrl: string;
  /** The certificate made at start (PEM), to trust as an authority (`ca`); undefined without TLS or with one's own. */
  readonly caCert: string | undefined;
  /** Its file, for NODE_EXTRA_CA_CERTS; removed by close(). */
  readonly caCertPath: string | undefined;
  readonly port: number;
  readonly config: EmulatorConfig;
  readonly requests: JournalEntry[];
  waitForRequest(predicate: (entry: JournalEntry) => boolean, timeoutMs?: number): Promise<JournalEntry>;
  quotaUsd(key: string): number;
  keyIdOf(key: string): string;
  readonly uploads: Upload[];
  readonly realtime: RealtimeHandle;
  close(): Promise<void>;
}

/**
 * The journal keeps the newest requests within these bounds, each weighed as JOURNAL_ENTRY_BYTES plus its
 * path (a path may be 16 KiB long), and the bodies of the newest submissions within BODY_JOURNAL_LIMITS.
 */
const JOURNAL_LIMITS: JournalLimits = { maxEntries: 100_000, maxBytes: 32 * 1024 * 1024 };
const JOURNAL_ENTRY_BYTES = 256;
const BODY_JOURNAL_LIMITS: JournalLimits = { maxEntries: 1000, maxBytes: 8 * 1024 * 1024 };

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

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const config = resolveConfig(options.config, { onlyGivenKeys: options.onlyGivenKeys ?? false });
  const publicUrl = options.publicUrl === undefined ? undefined : parsePublicUrl(options.publicUrl);
  const bindHost = options.host ?? DEFAULT_BIND_HOST;
  const log = options.log ?? silentLogger;
  const keys = new KeyRegistry(config);
  const engine = new TaskEngine(config, keys, log);
  const journal = new BoundedJournal<JournalEntry>(JOURNAL_LIMITS);
  const bodies = new BoundedJournal<JournalEntry>(BODY_JOURNAL_LIMITS, (entry) => delete entry.body);
  /** The size of each journaled body, until its entry is recorded. */
  const bodySizes = new WeakMap<JournalEntry, number>();
  const journalEvents = new EventEmitter();
  /** How often each `[[http:...:N]]` prompt has been submitted so far. */
  const triggerCounts = new TriggerCounts();
  const generated: GeneratedCertificate | undefined =
    options.tls === true ? await generateCertificate([bindHost, ...(publicUrl ? [publicUrl.host] : [])]) : undefined;
  const identity = options.tls === true ? generated : options.tls;
  /** TLS connections whose handshake is done: a client error on any other is a failed handshake. */
  const secured = new WeakSet<Duplex>();

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
    keepBody(entry, text);
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
      if (!keys.mayUse(account, body.model)) throw new HttpError(403, 'permission_denied', `This key's group may not use ${body.model}.`, 'model');
    }
    const accepted = acceptRequest(operation, layer, body, config.vendor);
    if (engine.runningCount(account, now) >= config.limits.concurrent_tasks) {
      throw new HttpError(429, 'too_many_requests', `At most ${config.limits.concurrent_tasks} tasks may run at once for this key.`);
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
      if (typeof value !== 'number') throw new HttpError(400, 'invalid_request_error', 'expires_after.seconds must be a number.', 'expires_after.seconds');
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

  async function route(request: IncomingMessage, response: ServerResponse, path: string, entry: JournalEntry): Promise<void> {
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
      return submit(request, response, layerOfPath(path), OPERATIONS[match[2]!]!, entry);
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
    if (path === REALTIME_SCRIPT_PATH) return handleScriptRequest(request, response, () => authorize(request, entry, Date.now()).keyId, realtime);
    throw new HttpError(404, 'not_found', `No route ${method} ${path}.`);
  }

  /** Answers a failed request in its layer's format. Never throws: a fault here must not end the process. */
  function answerFailure(request: IncomingMessage, response: ServerResponse, path: string, error: unknown): void {
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
      sendError(response, layerOfPath(path), error instanceof HttpError ? error : new HttpError(500, 'upstream_error', 'The emulator failed unexpectedly.'));
    } catch (failure) {
      log.error('emulator could not answer a failed request', { path, error: failure });
      response.destroy();
    }
  }

  function keepBody(entry: JournalEntry, text: string): void {
    Object.defineProperty(entry, 'body', {
      get: () => {
        const parsed = parseJsonText(text);
        return parsed.ok ? parsed.value : undefined;
      },
      enumerable: true,
      configurable: true,
    });
    bodySizes.set(entry, text.length);
  }

  function record(entry: JournalEntry): void {
    journal.append(entry, JOURNAL_ENTRY_BYTES + entry.method.length + entry.path.length);
    const bodySize = bodySizes.get(entry);
    if (bodySize !== undefined) bodies.append(entry, bodySize);
    journalEvents.emit('entry', entry);
  }

  /** The request each connection is answering, so that a fault in its body is answered in its name. */
  const answering = new WeakMap<Duplex, { requestId: string; layer: Layer; response: ServerResponse }>();

  /** Every request Node parsed; `refusal` answers it without routing (an expectation the emulator cannot meet). */
  function handle(request: IncomingMessage, response: ServerResponse, refusal?: HttpError): void {
    const requestId = newRequestId();
    response.setHeader('x-request-id', requestId);
    const target = parseRequestTarget(request.url);
    const path = target?.pathname ?? request.url ?? '/';
    const entry: JournalEntry = { method: request.method ?? 'GET', path, status: 0, requestId, at: Date.now() };
    const { socket } = request;
    answering.set(socket, { requestId, layer: layerOfPath(path), response });
    response.once('finish', () => {
      if (answering.get(socket)?.response === response) answering.delete(socket);
    });
    const problem = refusal ?? (target ? (request.httpVersion === '1.1' && request.headers.host === undefined ? missingHostError() : undefined) : invalidTargetError());
    (problem ? Promise.reject(problem) : route(request, response, path, entry))
      .catch((error: unknown) => answerFailure(request, response, path, error))
      .finally(() => {
        entry.status = response.statusCode;
        record(entry);
      });
  }

  /** Connections already answered for a parse error: Node reports each later chunk they send again. */
  const brokenConnections = new WeakSet<Duplex>();

  /**
   * A request Node could not parse (bad request line, header overflow, bad chunk, a timeout). Node would
   * answer it bare (no request id, no body); the emulator answers in the spec's format: in the layer of
   * the request whose body broke when there is one, else in the compatibility envelope, since no path
   * was read. An answer already begun is not interrupted by a second one.
   */
  function answerUnparsable(error: Error & { code?: string }, socket: Duplex): void {
    if (identity && !secured.has(socket)) {
      // Plain HTTP (or anything else but TLS) on the TLS port: there is no channel to answer it on.
      log.debug('emulator dropped a connection whose TLS handshake failed', { code: error.code });
      socket.destroy();
      return;
    }
    if (brokenConnections.has(socket)) return;
    brokenConnections.add(socket);
    const current = answering.get(socket);
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (current?.response.headersSent) {
      if (current.response.writableEnded) closeAfterAnswer(socket);
      else socket.destroy();
      return;
    }
    log.debug('emulator answered a request it could not parse', { code: error.code });
    sendErrorOnSocket(socket, current?.layer ?? 'compat', unparsableRequestError(error.code), current?.requestId ?? newRequestId());
  }

  const serverOptions = { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false };
  const server: Server = identity ? createHttpsServer({ ...serverOptions, cert: identity.cert, key: identity.key }, handle) : createServer(serverOptions, handle);
  if (identity) server.on('secureConnection', (socket: Duplex) => secured.add(socket));
  // Every connection, upgraded and hand-answered ones too (Node stops tracking those), so close() ends them all.
  const connections = new Set<Duplex>();
  server.on('connection', (socket: Duplex) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  server.on('clientError', answerUnparsable);
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    handle(request, response, new HttpError(417, 'invalid_request_error', `Expect: ${request.headers.expect ?? ''} cannot be met; only 100-continue is supported.`)),
  );
  // The emulator is no proxy: a CONNECT is a wrong method, answered like one, and its connection closed.
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    socket.on('error', (error) => log.debug('CONNECT connection failed', { error: error.message }));
    const requestId = newRequestId();
    const path = request.url ?? '';
    sendErrorOnSocket(socket, layerOfPath(path), new HttpError(405, 'invalid_request_error', 'CONNECT is not supported: the gateway is not a proxy.'), requestId);
    record({ method: 'CONNECT', path, status: 405, requestId, at: Date.now() });
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, bindHost, () => resolve());
    });
  } catch (error) {
    await generated?.remove();
    throw error;
  }
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the emulator is not listening on a TCP port');
  const { port } = address;
  const listenUrl = `${identity ? 'https' : 'http'}://${urlHost(reachableHost(bindHost))}:${port}`;
  const baseUrl = publicUrl?.base ?? listenUrl;
  engine.baseUrl = baseUrl;

  const realtime = attachRealtime(server, {
    vendor: config.vendor,
    sessionMaxMs: () => config.timing.realtime_session_max_ms,
    authorizeApiKey: (apiKey, model) => keys.authorizeRealtimeKey(apiKey, model),
    authorizeClientSecret: (token, model) => keys.authorizeRealtimeSecret(token, model, Date.now()),
    log,
  });

  return {
    baseUrl,
    wsUrl: baseUrl.replace(/^http/, 'ws'),
    listenUrl,
    caCert: generated?.cert,
    caCertPath: generated?.path,
    port,
    config,
    requests: journal.entries,
    waitForRequest(predicate, timeoutMs = 10_000) {
      // The whole journal once; after that, each new entry alone.
      let newest: JournalEntry | undefined;
      return waitUntil({
        check: () => (newest === undefined ? journal.entries.find(predicate) : predicate(newest) ? newest : undefined),
        subscribe: (wake) => {
          const onEntry = (entry: JournalEntry) => {
            newest = entry;
            wake();
          };
          journalEvents.on('entry', onEntry);
          return () => journalEvents.off('entry', onEntry);
        },
        timeoutMs,
        timeoutError: () => new Error(`the emulator saw no matching request within ${timeoutMs} ms`),
      });
    },
    quotaUsd(key) {
      const account = keys.account(key);
      if (!account) throw new Error('no such key in the emulator');
      engine.runningCount(account, Date.now());
      return account.remainingUsd;
    },
    keyIdOf,
    uploads: engine.uploads,
    realtime,
    async close() {
      await realtime.close();
      await engine.close();
      server.closeAllConnections();
      for (const socket of connections) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await generated?.remove();
    },
  };
}
