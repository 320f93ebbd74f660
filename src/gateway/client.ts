// The typed client of the video gateway (docs/gateway.md): one per base URL, key and layer. Every call
// goes through send(): one place for headers, size caps, error decoding and retries (retry.ts).

import type { Dispatcher } from 'undici';
import { registerSecret, silentLogger, type Logger } from '../lib/log.ts';
import { NO_METRICS, routeLabel, type BotMetrics } from '../lib/metrics.ts';
import {
  CLIENT_SECRET_DEFAULT_S,
  CLIENT_SECRET_MAX_S,
  DEFAULT_EDIT_PATH,
  DEFAULT_EXTENSION_PATH,
  DEFAULT_VENDOR,
  LAYER_PREFIX,
  type Layer,
} from './spec.ts';
import { MalformedResponseError, NotAVideoError, ValidationError, VideoUnavailableError, errorFromResponse } from './errors.ts';
import { DownloadHosts, createDownloadDispatcher, sharedDownloadDispatcher } from './download-guard.ts';
import {
  DEFAULT_TIMEOUTS,
  MAX_JSON_BYTES,
  createGatewayDispatcher,
  headerValue,
  sendRequest,
  sharedGatewayDispatcher,
  trustedAuthorities,
  type GatewayTimeouts,
  type HttpResponse,
} from './http.ts';
import { parseJsonText, readArray, readNonEmptyString, readString, readTimestamp } from '../lib/json.ts';
import { parseRetryAfter } from '../lib/backoff.ts';
import { effectivePort, httpUrl, isHttpUrl } from '../lib/url.ts';
import { DEFAULT_RETRY_POLICY, withRetries, type RetryPolicy } from './retry.ts';
import { parseSubmission, parseTaskResult } from './task-result.ts';
import { validateEdit, validateExtension, validateGeneration, type ValidationOptions } from './validation.ts';
import { VIDEO_SIGNATURE_BYTES, videoContainerOf } from './video-format.ts';
import type {
  ClientSecret,
  DownloadedVideo,
  EditRequest,
  ExtensionRequest,
  GatewayModel,
  GenerationRequest,
  SavedVideo,
  SubmittedTask,
  TaskResult,
} from './types.ts';

export interface GatewayClientOptions {
  baseUrl: string;
  apiKey: string;
  layer: Layer;
  /** The vendor word in model and voice names (GATEWAY_VENDOR); default `svc`. */
  vendor?: string;
  /**
   * The edit and extension endpoints under the layer prefix (the spec does not show them); default
   * `/videos/edits` and `/videos/extensions`, so `/v1/videos/edits` or `/native/v1/videos/edits`.
   */
  paths?: { edits?: string; extensions?: string };
  retry?: Partial<RetryPolicy>;
  timeouts?: Partial<GatewayTimeouts>;
  /** A shared pool; by default one Agent is shared by every client in the process. */
  dispatcher?: Dispatcher;
  /**
   * A certificate (PEM) to trust besides the public authorities, for a gateway whose certificate none
   * of them signed (the emulator's `--tls`). The client then has pools of its own (an injected
   * `dispatcher` still carries the API calls, and decides what it trusts). A process started with
   * NODE_EXTRA_CA_CERTS needs none of this.
   */
  ca?: string;
  /**
   * Hosts a video download may reach even at an address that is not public (a storage server on the
   * private network), besides the gateway's own host, which always may (docs/gateway.md, "Video download").
   */
  downloadAllowedHosts?: readonly string[];
  log?: Logger;
  /** Counts each request by route and status (default: nothing counted). */
  metrics?: Pick<BotMetrics, 'gatewayRequest'>;
}

export interface DownloadOptions {
  /** The largest video the caller can use (e.g. Discord's upload limit); bigger ones throw ResponseTooLargeError. */
  maxBytes: number;
}

export interface SaveOptions extends DownloadOptions {
  /** The file to write the video to (created, or emptied first). The caller removes it, whatever happens. */
  path: string;
}

interface SendOptions {
  method: 'GET' | 'POST';
  /** A path under the base URL, or an absolute URL (a native video address). */
  target: string;
  body?: unknown;
  idempotent: boolean;
  /** Send the API key. Only to the gateway itself, never to a third-party video address. */
  authorize: boolean;
  maxBytes: number;
  /** A video download: through the pool that refuses addresses that are not public (download-guard.ts). */
  download?: boolean;
  /** Write the successful answer's body to this file instead of memory. */
  saveTo?: string;
  /** Codes thrown at once rather than retried: the caller waits them out itself. */
  notRetried?: ReadonlySet<string>;
}

/** How a submission is sent. */
export interface SubmitOptions {
  /**
   * The caller queues jobs on the key's limits (src/video/key-queue.ts): a 429 `too_many_requests` or
   * `rate_limit` is thrown at once, so the queue waits for a slot or the Retry-After instead of the
   * client retrying a submission the key cannot take yet.
   */
  queuedOnKeyLimits?: boolean;
}

const KEY_LIMIT_CODES: ReadonlySet<string> = new Set(['too_many_requests', 'rate_limit']);

const MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export class GatewayClient {
  readonly layer: Layer;
  readonly vendor: string;
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #paths: { generations: string; edits: string; extensions: string; tasks: string };
  readonly #retry: RetryPolicy;
  readonly #timeouts: GatewayTimeouts;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #downloadDispatcher: Dispatcher;
  readonly #ownsDownloadDispatcher: boolean;
  readonly #log: Logger;
  readonly #metrics: Pick<BotMetrics, 'gatewayRequest'>;

  constructor(options: GatewayClientOptions) {
    if (!options.apiKey) throw new TypeError('GatewayClient needs an API key.');
    const base = httpUrl(options.baseUrl);
    if (!base) throw new TypeError('GatewayClient needs an http(s) base URL.');
    registerSecret(options.apiKey);

    this.layer = options.layer;
    this.vendor = options.vendor ?? DEFAULT_VENDOR;
    this.baseUrl = `${base.origin}${base.pathname}`.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    const prefix = LAYER_PREFIX[options.layer];
    this.#paths = {
      generations: `${prefix}/videos/generations`,
      edits: `${prefix}${options.paths?.edits ?? DEFAULT_EDIT_PATH}`,
      extensions: `${prefix}${options.paths?.extensions ?? DEFAULT_EXTENSION_PATH}`,
      tasks: `${prefix}/videos`,
    };
    this.#retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    // A custom connect timeout or trusted certificate lives on the pool, so it needs a pool of its own.
    const ownPools = options.timeouts?.connectMs !== undefined || options.ca !== undefined;
    const ca = trustedAuthorities(options.ca);
    this.#ownsDispatcher = options.dispatcher === undefined && ownPools;
    this.#dispatcher =
      options.dispatcher ??
      (this.#ownsDispatcher
        ? createGatewayDispatcher({ connectMs: this.#timeouts.connectMs, ...(ca ? { ca } : {}) })
        : sharedGatewayDispatcher());
    // Downloads have a pool of their own, whose connections are checked (download-guard.ts).
    // The gateway's own host is reached on the gateway's own port only: a redirect elsewhere on it is not the gateway.
    const downloadHosts = new DownloadHosts([`${base.hostname}:${effectivePort(base)}`, ...(options.downloadAllowedHosts ?? [])]);
    this.#ownsDownloadDispatcher = ownPools;
    this.#downloadDispatcher = this.#ownsDownloadDispatcher
      ? createDownloadDispatcher(downloadHosts, { connectMs: this.#timeouts.connectMs, ...(ca ? { ca } : {}) })
      : sharedDownloadDispatcher(downloadHosts, this.#timeouts.connectMs);
    this.#log = (options.log ?? silentLogger).child({ component: 'gateway', layer: options.layer });
    this.#metrics = options.metrics ?? NO_METRICS;
  }

  /** The options for validateGeneration() & co. that match this client. */
  get validationOptions(): ValidationOptions {
    return { layer: this.layer, vendor: this.vendor };
  }

  async generate(request: GenerationRequest, options?: SubmitOptions): Promise<SubmittedTask> {
    validateGeneration(request, this.validationOptions);
    return this.#submit(this.#paths.generations, request, options);
  }

  async edit(request: EditRequest, options?: SubmitOptions): Promise<SubmittedTask> {
    validateEdit(request, this.validationOptions);
    return this.#submit(this.#paths.edits, request, options);
  }

  async extend(request: ExtensionRequest, options?: SubmitOptions): Promise<SubmittedTask> {
    validateExtension(request, this.validationOptions);
    return this.#submit(this.#paths.extensions, request, options);
  }

  async #submit(path: string, request: object, options: SubmitOptions = {}): Promise<SubmittedTask> {
    const response = await this.#send({
      method: 'POST',
      target: path,
      body: request,
      idempotent: false,
      authorize: true,
      maxBytes: MAX_JSON_BYTES,
      ...(options.queuedOnKeyLimits ? { notRetried: KEY_LIMIT_CODES } : {}),
    });
    const task = parseSubmission(parseJsonBody(response), { layer: this.layer, requestId: response.requestId });
    this.#log.info('gateway task submitted', { taskId: task.id, path, requestId: task.requestId });
    return task;
  }

  /** One poll of a task. Only the layer that created a task knows its id. */
  async getTask(id: string): Promise<TaskResult> {
    if (id.trim() === '') throw new ValidationError('id', { rule: 'task-id' });
    const response = await this.#send({
      method: 'GET',
      target: `${this.#paths.tasks}/${encodeURIComponent(id)}`,
      idempotent: true,
      authorize: true,
      maxBytes: MAX_JSON_BYTES,
    });
    return parseTaskResult({
      id,
      layer: this.layer,
      requestId: response.requestId,
      httpStatus: response.status,
      body: parseJsonBody(response),
    });
  }

  /**
   * The finished video's bytes, in memory, as they came. Compatibility tasks are fetched through the
   * gateway's `/content` with the key; native tasks from `video.url`, with the key only when that address
   * is on the gateway's own origin (every request to the gateway carries it), never when it is a third
   * party's. Only public addresses are fetched, besides the gateway's own host and the allowed ones.
   */
  async downloadVideo(task: TaskResult, options: DownloadOptions): Promise<DownloadedVideo> {
    const response = await this.#send({
      ...this.#videoSource(task),
      method: 'GET',
      idempotent: true,
      maxBytes: options.maxBytes,
      download: true,
    });
    return { bytes: response.body, contentType: headerValue(response.headers, 'content-type') };
  }

  /**
   * The finished video written to `options.path`, from the same address as downloadVideo(), streamed
   * under the size cap so that no more than a chunk of it is ever in memory. A body that does not start
   * like an mp4 or a WebM is a NotAVideoError.
   */
  async saveVideo(task: TaskResult, options: SaveOptions): Promise<SavedVideo> {
    const response = await this.#send({
      ...this.#videoSource(task),
      method: 'GET',
      idempotent: true,
      maxBytes: options.maxBytes,
      download: true,
      saveTo: options.path,
    });
    const contentType = headerValue(response.headers, 'content-type');
    const container = videoContainerOf(response.saved?.head ?? Buffer.alloc(0));
    if (container === undefined) throw new NotAVideoError(contentType, { status: response.status, requestId: response.requestId });
    return { size: response.saved?.size ?? 0, contentType, container };
  }

  /** Where a finished task's video comes from, and whether the key goes with the request. */
  #videoSource(task: TaskResult): { target: string; authorize: boolean } {
    if (task.moderated) throw new VideoUnavailableError(`Task ${task.id}'s video was removed by content moderation.`, 'moderated');
    if (task.status !== 'succeeded') {
      throw new VideoUnavailableError(`Task ${task.id} has no video: its status is ${task.status}.`, task.status);
    }
    if (task.layer === 'compat') {
      return { target: `${LAYER_PREFIX.compat}/videos/${encodeURIComponent(task.id)}/content`, authorize: true };
    }
    if (task.videoUrl !== undefined && isHttpUrl(task.videoUrl)) {
      return { target: task.videoUrl, authorize: URL.parse(task.videoUrl)?.origin === new URL(this.baseUrl).origin };
    }
    if (task.videoUrl !== undefined || task.refusedVideoUrl !== undefined) {
      throw new VideoUnavailableError(`Task ${task.id}'s video address is not an http(s) link, so it was not fetched.`, 'not-http');
    }
    throw new VideoUnavailableError(`Task ${task.id} succeeded without a video address.`, 'missing');
  }

  /**
   * The models the key's group may use. The spec does not show this answer's shape: a bare list, or one
   * under `data` (OpenAI's) or `models`, of names or of objects named by `id` (or `name`), are all read.
   */
  async listModels(): Promise<GatewayModel[]> {
    const response = await this.#send({ method: 'GET', target: '/v1/models', idempotent: true, authorize: true, maxBytes: MAX_JSON_BYTES });
    const body = parseJsonBody(response);
    const list = Array.isArray(body) ? body : (readArray(body, 'data') ?? readArray(body, 'models'));
    if (list === undefined)
      throw new MalformedResponseError('The model list answer has no list of models.', { requestId: response.requestId });
    const models: GatewayModel[] = [];
    for (const entry of list) {
      const id = typeof entry === 'string' ? entry : (readNonEmptyString(entry, 'id') ?? readNonEmptyString(entry, 'name'));
      if (id !== undefined && id !== '') models.push({ id, ownedBy: readString(entry, 'owned_by') });
    }
    return models;
  }

  /** A short-lived realtime credential for the `<vendor>-client-secret.` subprotocol. Not billed. */
  async createClientSecret(seconds: number = CLIENT_SECRET_DEFAULT_S): Promise<ClientSecret> {
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > CLIENT_SECRET_MAX_S) {
      throw new ValidationError('expires_after.seconds', { rule: 'secret-expiry', max: CLIENT_SECRET_MAX_S });
    }
    const response = await this.#send({
      method: 'POST',
      target: `${LAYER_PREFIX.native}/realtime/client_secrets`,
      body: { expires_after: { seconds } },
      // Repeating it at worst mints a second short-lived secret: nothing is charged or duplicated.
      idempotent: true,
      authorize: true,
      maxBytes: MAX_JSON_BYTES,
    });
    const body = parseJsonBody(response);
    const value = readNonEmptyString(body, 'value');
    // The spec does not show this answer: the value is what matters; expires_at is read when present.
    if (value === undefined) throw new MalformedResponseError('The client secret answer has no value.', { requestId: response.requestId });
    return { value, expiresAt: readTimestamp(body, 'expires_at') };
  }

  /** Closes the pools this client made its own; shared or injected ones stay open. */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
    if (this.#ownsDownloadDispatcher) await this.#downloadDispatcher.close();
  }

  async #send(options: SendOptions): Promise<HttpResponse> {
    const operation = `${options.method} ${describePath(options.target)}`;
    return withRetries(
      async (attempt) => {
        const started = Date.now();
        const route = routeLabel(options.target);
        const response = await this.#sendFollowingRedirects(options).catch((error: unknown) => {
          this.#metrics.gatewayRequest(options.method, route, 'error');
          throw error;
        });
        this.#metrics.gatewayRequest(options.method, route, response.status);
        this.#log.debug('gateway answered', {
          operation,
          attempt,
          status: response.status,
          requestId: response.requestId,
          ms: Date.now() - started,
        });
        if (response.status >= 400) {
          throw errorFromResponse({
            status: response.status,
            bodyText: response.body.toString('utf8'),
            requestId: response.requestId,
            retryAfterMs: parseRetryAfter(headerValue(response.headers, 'retry-after')),
          });
        }
        if (response.status >= 300) {
          throw new MalformedResponseError(`${operation} answered HTTP ${response.status} without a redirect the client follows.`, {
            status: response.status,
            requestId: response.requestId,
          });
        }
        return response;
      },
      {
        idempotent: options.idempotent,
        policy: this.#retry,
        log: this.#log,
        operation,
        ...(options.notRetried ? { notRetried: options.notRetried } : {}),
      },
    );
  }

  /** Reads follow a few redirects; the key never follows one to another origin. */
  async #sendFollowingRedirects(options: SendOptions): Promise<HttpResponse> {
    let url = options.target.startsWith('/') ? `${this.baseUrl}${options.target}` : options.target;
    let authorize = options.authorize;
    for (let redirects = 0; ; redirects++) {
      const headers: Record<string, string> = { accept: 'application/json, video/mp4;q=0.9, */*;q=0.5', 'user-agent': 'video-voice-bot' };
      if (authorize) headers.authorization = `Bearer ${this.#apiKey}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await sendRequest({
        method: options.method,
        url,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        idempotent: options.idempotent,
        dispatcher: options.download === true ? this.#downloadDispatcher : this.#dispatcher,
        // A download may take as long as a large video does; an answer of a few bytes may not.
        timeouts: options.download === true ? this.#timeouts : { ...this.#timeouts, totalMs: this.#timeouts.answerMs },
        maxBytes: options.maxBytes,
        ...(options.saveTo === undefined ? {} : { saveTo: options.saveTo, headBytes: VIDEO_SIGNATURE_BYTES }),
      });
      const location = headerValue(response.headers, 'location');
      if (options.method !== 'GET' || !REDIRECT_STATUSES.has(response.status) || location === undefined || redirects >= MAX_REDIRECTS) {
        return response;
      }
      const next = URL.parse(location, url);
      if (next === null || (next.protocol !== 'http:' && next.protocol !== 'https:')) return response;
      if (next.origin !== new URL(url).origin) authorize = false;
      url = next.toString();
    }
  }
}

/** A path for logs: an absolute video URL loses its query string (it may be signed). */
function describePath(target: string): string {
  if (target.startsWith('/')) return target;
  const url = URL.parse(target);
  return url ? `${url.origin}${url.pathname}` : 'video url';
}

/** A JSON answer body; undefined when empty (a pending native task may have none). */
function parseJsonBody(response: HttpResponse): unknown {
  const parsed = parseJsonText(response.body.toString('utf8'));
  if (parsed.ok) return parsed.value;
  if (parsed.empty) return undefined;
  throw new MalformedResponseError(`The gateway answered HTTP ${response.status} with a body that is not JSON.`, {
    status: response.status,
    requestId: response.requestId,
  });
}
