import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord } from '../../../src/lib/json.ts';
import { readBodyWithin } from '../../../src/lib/http-body.ts';
import type { Logger } from '../../../src/lib/log.ts';
import type { Interactions } from './interactions.ts';
import { snowflake } from './snowflake.ts';
import { channelObject, memberObject, roleObject, userObject, type Message, type StandInState, type StoredAttachment, type Upload } from './state.ts';

// Discord's REST API, the part a bot uses: gateway discovery, command registration, interaction
// callbacks and webhooks, channel messages with uploads, threads, and reads of guilds and members.

export const MAX_REQUEST_BYTES = 25 * 1024 * 1024;
export const NONCE_WINDOW_MS = 5 * 60_000;

export interface RecordedRequest {
  method: string;
  path: string;
  status: number;
  at: number;
}

export interface InjectedFailure {
  method: string | undefined;
  route: RegExp;
  remaining: number;
  status: number;
  retryAfterSeconds?: number;
  global?: boolean;
  /** Discord's JSON error code, message and field errors (default: a bare 5xx body). */
  code?: number;
  message?: string;
  errors?: Record<string, unknown>;
}

export class RestError extends Error {
  readonly status: number;
  readonly code: number;
  readonly errors: Record<string, unknown> | undefined;
  constructor(status: number, code: number, message: string, errors?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
  }
}

/** Discord's limits on what one message carries; a message over any of them is refused with 400 / 50035. */
const MESSAGE_LIMITS = {
  content: 2000,
  embeds: 10,
  embedTitle: 256,
  embedDescription: 4096,
  embedFields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footerText: 2048,
  authorName: 256,
  embedTotal: 6000,
  actionRows: 5,
  rowComponents: 5,
  customId: 100,
  buttonLabel: 80,
} as const;

function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : 0;
}

/** Field errors as Discord nests them: `{content: {_errors: [...]}}`, `{embeds: {0: {title: {_errors}}}}`. */
export function tooLong(path: (string | number)[], max: number): Record<string, unknown> {
  const leaf: Record<string, unknown> = { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${max} or fewer in length.` }] };
  return path.reduceRight<Record<string, unknown>>((inner, key) => ({ [String(key)]: inner }), leaf);
}

/** The first limit a message body breaks, as Discord's `errors` object; undefined when it keeps them all. */
export function messageLimitErrors(json: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const L = MESSAGE_LIMITS;
  if (textLength(json.content) > L.content) return tooLong(['content'], L.content);
  const embeds = Array.isArray(json.embeds) ? json.embeds : [];
  if (embeds.length > L.embeds) return tooLong(['embeds'], L.embeds);
  let total = 0;
  for (const [index, embed] of embeds.entries()) {
    if (!isRecord(embed)) continue;
    const fields = Array.isArray(embed.fields) ? embed.fields : [];
    const footer = isRecord(embed.footer) ? embed.footer.text : undefined;
    const author = isRecord(embed.author) ? embed.author.name : undefined;
    const checks: [string[], unknown, number][] = [
      [['title'], embed.title, L.embedTitle],
      [['description'], embed.description, L.embedDescription],
      [['footer', 'text'], footer, L.footerText],
      [['author', 'name'], author, L.authorName],
    ];
    for (const [path, value, max] of checks) if (textLength(value) > max) return tooLong(['embeds', index, ...path], max);
    if (fields.length > L.embedFields) return tooLong(['embeds', index, 'fields'], L.embedFields);
    for (const [fieldIndex, field] of fields.entries()) {
      if (!isRecord(field)) continue;
      if (textLength(field.name) > L.fieldName) return tooLong(['embeds', index, 'fields', fieldIndex, 'name'], L.fieldName);
      if (textLength(field.value) > L.fieldValue) return tooLong(['embeds', index, 'fields', fieldIndex, 'value'], L.fieldValue);
      total += textLength(field.name) + textLength(field.value);
    }
    total += textLength(embed.title) + textLength(embed.description) + textLength(footer) + textLength(author);
  }
  if (total > L.embedTotal) return tooLong(['embeds'], L.embedTotal);
  const rows = Array.isArray(json.components) ? json.components : [];
  if (rows.length > L.actionRows) return tooLong(['components'], L.actionRows);
  for (const [rowIndex, row] of rows.entries()) {
    const children = isRecord(row) && Array.isArray(row.components) ? row.components : [];
    if (children.length > L.rowComponents) return tooLong(['components', rowIndex, 'components'], L.rowComponents);
    for (const [index, child] of children.entries()) {
      if (!isRecord(child)) continue;
      if (textLength(child.custom_id) > L.customId) return tooLong(['components', rowIndex, 'components', index, 'custom_id'], L.customId);
      if (textLength(child.label) > L.buttonLabel) return tooLong(['components', rowIndex, 'components', index, 'label'], L.buttonLabel);
    }
  }
  return undefined;
}

function checkMessageLimits(json: Readonly<Record<string, unknown>>): void {
  const errors = messageLimitErrors(json);
  if (errors) throw new RestError(400, 50035, 'Invalid Form Body', errors);
}

export interface ParsedBody {
  json: Readonly<Record<string, unknown>>;
  /** `part` is n of the form field files[n], which the payload's attachments entries refer to. */
  files: { part: number; name: string; contentType: string; bytes: Buffer }[];
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const body = await readBodyWithin(request, MAX_REQUEST_BYTES);
  if (!body) throw new RestError(413, 40005, 'Request entity too large');
  return body;
}

/** JSON, or multipart with files[n] parts and a payload_json part, as @discordjs/rest sends them. */
export async function parseBody(request: IncomingMessage): Promise<ParsedBody> {
  const raw = await readBody(request);
  const type = request.headers['content-type'] ?? '';
  if (type.startsWith('multipart/form-data')) {
    const form = await new Request('http://stand-in/', { method: 'POST', headers: { 'content-type': type }, body: raw }).formData();
    const files: ParsedBody['files'] = [];
    let json: Readonly<Record<string, unknown>> = {};
    for (const [name, value] of form.entries()) {
      if (name === 'payload_json' && typeof value === 'string') {
        const parsed: unknown = JSON.parse(value);
        if (isRecord(parsed)) json = parsed;
      } else if (typeof value !== 'string') {
        const part = /^files\[(\d+)\]$/.exec(name)?.[1];
        files.push({ part: part === undefined ? files.length : Number(part), name: value.name, contentType: value.type || 'application/octet-stream', bytes: Buffer.from(await value.arrayBuffer()) });
      }
    }
    return { json, files };
  }
  if (raw.length === 0) return { json: {}, files: [] };
  const parsed: unknown = JSON.parse(raw.toString('utf8'));
  return { json: isRecord(parsed) ? parsed : {}, files: [] };
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export interface MessageDraft {
  channelId: string;
  authorId: string;
  body: ParsedBody;
  webhookId?: string;
  interaction?: Message['interaction'];
  extraFlags?: number;
}

export interface MessageListeners {
  created: (message: Message) => void;
  updated: (message: Message) => void;
  deleted: (message: Message) => void;
  uploaded: (upload: Upload) => void;
}

/** What creating and editing messages shares: content, embeds, components, flags, and files. */
export class MessageStore {
  readonly #state: StandInState;
  readonly #listeners: MessageListeners;
  readonly #nonceWindowMs: number;

  constructor(state: StandInState, listeners: MessageListeners, nonceWindowMs: number) {
    this.#state = state;
    this.#listeners = listeners;
    this.#nonceWindowMs = nonceWindowMs;
  }

  #checkUploads(channelId: string, files: ParsedBody['files']): void {
    const limit = this.#state.channel(channelId)?.guild.attachmentSizeLimit ?? Infinity;
    if (files.some((file) => file.bytes.length > limit)) throw new RestError(413, 40005, 'Request entity too large');
  }

  #attachments(channelId: string, files: ParsedBody['files'], descriptors: unknown[]): StoredAttachment[] {
    return files.map((file) => {
      // The payload describes files[n] with an attachments entry whose id is "n".
      const descriptor = descriptors.find((entry) => isRecord(entry) && String(entry.id) === String(file.part));
      const filename = isRecord(descriptor) && typeof descriptor.filename === 'string' ? descriptor.filename : file.name;
      return this.#state.storeAttachment(channelId, filename, file.contentType, file.bytes);
    });
  }

  create(draft: MessageDraft): Message {
    const { json, files } = draft.body;
    checkMessageLimits(json);
    this.#checkUploads(draft.channelId, files);
    if (typeof json.nonce === 'string' || typeof json.nonce === 'number') {
      if (json.enforce_nonce === true) {
        // Discord: a repeated nonce from the same author within a few minutes returns the first message.
        const earlier = [...this.#state.messages.values()].find(
          (message) => message.nonce === json.nonce && message.authorId === draft.authorId && message.channelId === draft.channelId && Date.now() - Date.parse(message.timestamp) < this.#nonceWindowMs,
        );
        if (earlier) return earlier;
      }
    }
    const reference = isRecord(json.message_reference) && typeof json.message_reference.message_id === 'string' ? { message_id: json.message_reference.message_id } : undefined;
    const message: Message = {
      id: snowflake(),
      channelId: draft.channelId,
      authorId: draft.authorId,
      content: typeof json.content === 'string' ? json.content : '',
      embeds: arrayOf(json.embeds),
      components: arrayOf(json.components),
      attachments: this.#attachments(draft.channelId, files, arrayOf(json.attachments)),
      flags: (typeof json.flags === 'number' ? json.flags : 0) | (draft.extraFlags ?? 0),
      ...(reference ? { messageReference: reference } : {}),
      ...(typeof json.nonce === 'string' || typeof json.nonce === 'number' ? { nonce: json.nonce } : {}),
      timestamp: new Date().toISOString(),
      editedTimestamp: null,
      ...(draft.webhookId ? { webhookId: draft.webhookId } : {}),
      ...(draft.interaction ? { interaction: draft.interaction } : {}),
      edits: [],
      deleted: false,
    };
    this.#state.messages.set(message.id, message);
    this.#announceUploads(message, message.attachments);
    this.#listeners.created(message);
    return message;
  }

  edit(message: Message, body: ParsedBody): Message {
    const { json, files } = body;
    checkMessageLimits(json);
    this.#checkUploads(message.channelId, files);
    if ('content' in json) message.content = typeof json.content === 'string' ? json.content : '';
    if ('embeds' in json) message.embeds = arrayOf(json.embeds);
    if ('components' in json) message.components = arrayOf(json.components);
    if (typeof json.flags === 'number') message.flags = json.flags | (message.flags & 64);
    const added = this.#attachments(message.channelId, files, arrayOf(json.attachments));
    message.attachments = [...this.#keptAttachments(message, json), ...added];
    // Discord clears the "thinking" state with the first edit of a deferred reply.
    message.flags &= ~128;
    message.editedTimestamp = new Date().toISOString();
    message.edits.push({ at: Date.now(), json, files: added.map((attachment) => attachment.filename) });
    this.#announceUploads(message, added);
    this.#listeners.updated(message);
    return message;
  }

  delete(message: Message): void {
    message.deleted = true;
    this.#listeners.deleted(message);
  }

  /**
   * Discord keeps only the existing attachments an edit lists by id in `attachments` (no list: all kept);
   * entries for new files carry the index of their files[n] part instead.
   */
  #keptAttachments(message: Message, json: Readonly<Record<string, unknown>>): StoredAttachment[] {
    if (!Array.isArray(json.attachments)) return message.attachments;
    const kept = new Set(json.attachments.flatMap((entry: unknown) => (isRecord(entry) && typeof entry.id === 'string' ? [entry.id] : [])));
    return message.attachments.filter((attachment) => kept.has(attachment.id));
  }

  #announceUploads(message: Message, attachments: StoredAttachment[]): void {
    for (const attachment of attachments) this.#listeners.uploaded({ channelId: message.channelId, messageId: message.id, attachment, at: Date.now() });
  }
}

/** A path fit for logs: interaction tokens (they authorise replies) replaced. */
export function loggablePath(path: string): string {
  return path.replace(/^(\/interactions\/\d+\/)[^/]+/, '$1:token').replace(/^(\/webhooks\/\d+\/)[^/]+/, '$1:token');
}

export interface RestDeps {
  log: Logger;
  state: StandInState;
  messages: MessageStore;
  interactions: Interactions;
  gatewayUrl: () => string;
  /** What GET /gateway/bot recommends: the shard count and session_start_limit.max_concurrency. */
  gatewayBot: { shards: number; maxConcurrency: number };
  dispatch: (event: string, data: Record<string, unknown>) => void;
  record: (request: RecordedRequest) => void;
  failures: InjectedFailure[];
}

type Handler = (match: RegExpExecArray, request: IncomingMessage, response: ServerResponse) => Promise<void> | void;

export class RestApi {
  readonly #deps: RestDeps;
  readonly #routes: { method: string; pattern: RegExp; authenticated: boolean; handle: Handler }[] = [];

  constructor(deps: RestDeps) {
    this.#deps = deps;
    this.#defineRoutes();
  }

  #route(method: string, pattern: RegExp, handle: Handler, authenticated = true): void {
    this.#routes.push({ method, pattern, handle, authenticated });
  }

  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const method = request.method ?? 'GET';
    const record = () => {
      this.#deps.record({ method, path, status: response.statusCode, at: Date.now() });
      this.#deps.log.debug('discord stand-in request', { method, path: loggablePath(path), status: response.statusCode });
    };
    try {
      const failure = this.#deps.failures.find((candidate) => candidate.remaining > 0 && (candidate.method === undefined || candidate.method === method) && candidate.route.test(path));
      if (failure) {
        failure.remaining--;
        request.resume();
        if (failure.status === 429) {
          const retryAfter = failure.retryAfterSeconds ?? 1;
          sendJson(response, 429, { message: 'You are being rate limited.', retry_after: retryAfter, global: failure.global ?? false }, {
            'retry-after': String(retryAfter),
            'x-ratelimit-scope': failure.global ? 'global' : 'user',
            ...(failure.global ? { 'x-ratelimit-global': 'true' } : {}),
          });
        } else {
          sendJson(response, failure.status, { message: failure.message ?? 'Internal Server Error', code: failure.code ?? 0, ...(failure.errors ? { errors: failure.errors } : {}) });
        }
        return;
      }
      for (const route of this.#routes) {
        if (route.method !== method) continue;
        const match = route.pattern.exec(path);
        if (!match) continue;
        if (route.authenticated && request.headers.authorization !== `Bot ${this.#deps.state.botToken}`) {
          request.resume();
          sendJson(response, 401, { message: '401: Unauthorized', code: 0 });
          return;
        }
        await route.handle(match, request, response);
        return;
      }
      request.resume();
      // Recorded like every request, so a test can see what the bot tried that the stand-in lacks.
      this.#deps.log.warn('discord stand-in has no such route', { method, path: loggablePath(path) });
      sendJson(response, 404, { message: '404: Not Found', code: 0 });
    } catch (error) {
      if (error instanceof RestError) sendJson(response, error.status, { message: error.message, code: error.code, ...(error.errors ? { errors: error.errors } : {}) });
      else if (error instanceof SyntaxError) sendJson(response, 400, { message: 'Invalid JSON', code: 50109 });
      else throw error;
    } finally {
      record();
    }
  }

  #defineRoutes(): void {
    const { state, messages, interactions, dispatch } = this.#deps;
    const json = sendJson;

    this.#route('GET', /^\/gateway\/bot$/, (_m, _q, response) => {
      const { shards, maxConcurrency } = this.#deps.gatewayBot;
      json(response, 200, { url: this.#deps.gatewayUrl(), shards, session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: maxConcurrency } });
    });
    this.#route('GET', /^\/gateway$/, (_m, _q, response) => json(response, 200, { url: this.#deps.gatewayUrl() }), false);
    this.#route('GET', /^\/users\/@me$/, (_m, _q, response) => json(response, 200, userObject(state.botUser)));
    this.#route('GET', /^\/applications\/@me$/, (_m, _q, response) => {
      json(response, 200, { id: state.applicationId, name: state.botUser.username, flags: 0, bot: userObject(state.botUser) });
    });

    // Commands: a bulk overwrite answers the registered list.
    const putCommands = (scope: string): Handler => async (match, request, response) => {
      // Discord: a server the bot is not in (or was invited to without applications.commands) is 403 / 50001.
      if (scope === 'guild' && !state.guilds.get(match[2] ?? '')?.members.has(state.botUser.id)) {
        request.resume();
        throw new RestError(403, 50001, 'Missing Access');
      }
      const parsed: unknown = JSON.parse((await readBody(request)).toString('utf8'));
      const registered = arrayOf(parsed).map((command) => ({
        ...(isRecord(command) ? command : {}),
        id: snowflake(),
        application_id: state.applicationId,
        version: snowflake(),
        // A slash command (1) unless the definition says otherwise: a message command is 3.
        type: isRecord(command) && typeof command.type === 'number' ? command.type : 1,
        ...(scope === 'guild' ? { guild_id: match[2] } : {}),
      }));
      state.commands.set(scope === 'guild' ? (match[2] ?? '') : 'global', registered);
      json(response, 200, registered);
    };
    this.#route('PUT', /^\/applications\/(\d+)\/commands$/, putCommands('global'));
    this.#route('PUT', /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/, putCommands('guild'));
    this.#route('GET', /^\/applications\/(\d+)\/commands$/, (_m, _q, response) => json(response, 200, state.commands.get('global') ?? []));
    this.#route('GET', /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/, (match, _q, response) => json(response, 200, state.commands.get(match[2] ?? '') ?? []));

    // Interactions: callbacks are unauthenticated, as are the interaction webhooks.
    this.#route('POST', /^\/interactions\/(\d+)\/([^/]+)\/callback$/, async (match, request, response) => {
      const body = await parseBody(request);
      const withResponse = new URL(request.url ?? '/', 'http://stand-in').searchParams.get('with_response') === 'true';
      const result = interactions.callback(match[1] ?? '', decodeURIComponent(match[2] ?? ''), body);
      if (withResponse) json(response, 200, result);
      else {
        response.writeHead(204);
        response.end();
      }
    }, false);
    this.#route('GET', /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/, (match, _q, response) => {
      json(response, 200, state.messageObject(interactions.webhookMessage(decodeURIComponent(match[2] ?? ''), decodeURIComponent(match[3] ?? ''))));
    }, false);
    this.#route('PATCH', /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/, async (match, request, response) => {
      const message = interactions.webhookMessage(decodeURIComponent(match[2] ?? ''), decodeURIComponent(match[3] ?? ''));
      json(response, 200, state.messageObject(messages.edit(message, await parseBody(request))));
    }, false);
    this.#route('DELETE', /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/, (match, _q, response) => {
      messages.delete(interactions.webhookMessage(decodeURIComponent(match[2] ?? ''), decodeURIComponent(match[3] ?? '')));
      response.writeHead(204);
      response.end();
    }, false);
    this.#route('POST', /^\/webhooks\/(\d+)\/([^/]+)$/, async (match, request, response) => {
      const message = interactions.followUp(decodeURIComponent(match[2] ?? ''), await parseBody(request));
      json(response, 200, state.messageObject(message));
    }, false);

    // Channel messages.
    const channelOf = (channelId: string) => {
      const found = state.channel(channelId);
      if (!found) throw new RestError(404, 10003, 'Unknown Channel');
      return found;
    };
    const messageOf = (channelId: string, messageId: string): Message => {
      const message = state.messages.get(messageId);
      if (!message || message.channelId !== channelId || message.deleted) throw new RestError(404, 10008, 'Unknown Message');
      return message;
    };
    // Refusals as Discord words them when the bot lacks a permission in the channel.
    const denied = (channelId: string) => state.deniedBotPermissions.get(channelId) ?? new Set();
    this.#route('POST', /^\/channels\/(\d+)\/messages$/, async (match, request, response) => {
      channelOf(match[1] ?? '');
      const body = await parseBody(request);
      const missing = denied(match[1] ?? '');
      if (missing.has('viewChannel')) throw new RestError(403, 50001, 'Missing Access');
      if (missing.has('sendMessages') || (body.files.length > 0 && missing.has('attachFiles'))) throw new RestError(403, 50013, 'Missing Permissions');
      if (isRecord(body.json.message_reference) && missing.has('readMessageHistory')) throw new RestError(400, 160002, 'Cannot reply without permission to read message history');
      const message = messages.create({ channelId: match[1] ?? '', authorId: state.botUser.id, body });
      json(response, 200, state.messageObject(message));
    });
    this.#route('GET', /^\/channels\/(\d+)\/messages$/, (match, request, response) => {
      channelOf(match[1] ?? '');
      const query = new URL(request.url ?? '/', 'http://stand-in').searchParams;
      const limit = Math.max(1, Math.min(100, Number(query.get('limit') ?? 50) || 50));
      const bound = (name: string): bigint | undefined => {
        const value = query.get(name);
        return value !== null && /^\d+$/.test(value) ? BigInt(value) : undefined;
      };
      const after = bound('after');
      const before = bound('before');
      const list = [...state.messages.values()]
        .filter((message) => message.channelId === match[1] && !message.deleted)
        .filter((message) => (after === undefined || BigInt(message.id) > after) && (before === undefined || BigInt(message.id) < before))
        .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1));
      // Newest first, as Discord answers; with `after`, the page closest to that message.
      const page = after === undefined ? list.slice(0, limit) : list.slice(-limit);
      json(response, 200, page.map((message) => state.messageObject(message)));
    });
    this.#route('GET', /^\/channels\/(\d+)\/messages\/(\d+)$/, (match, _q, response) => {
      json(response, 200, state.messageObject(messageOf(match[1] ?? '', match[2] ?? '')));
    });
    this.#route('PATCH', /^\/channels\/(\d+)\/messages\/(\d+)$/, async (match, request, response) => {
      if (denied(match[1] ?? '').has('viewChannel')) throw new RestError(403, 50001, 'Missing Access');
      const message = messageOf(match[1] ?? '', match[2] ?? '');
      if (message.authorId !== state.botUser.id) throw new RestError(403, 50005, 'Cannot edit a message authored by another user');
      json(response, 200, state.messageObject(messages.edit(message, await parseBody(request))));
    });
    this.#route('DELETE', /^\/channels\/(\d+)\/messages\/(\d+)$/, (match, _q, response) => {
      messages.delete(messageOf(match[1] ?? '', match[2] ?? ''));
      response.writeHead(204);
      response.end();
    });

    // Threads, from a message or on their own.
    const createThread = (parentId: string, body: Readonly<Record<string, unknown>>): Record<string, unknown> => {
      const { guild } = channelOf(parentId);
      const thread = { id: snowflake(), guildId: guild.id, type: 11, name: typeof body.name === 'string' ? body.name : 'thread', parentId };
      guild.channels.push(thread);
      const object = channelObject(thread);
      dispatch('THREAD_CREATE', { ...object, newly_created: true });
      return object;
    };
    this.#route('POST', /^\/channels\/(\d+)\/messages\/(\d+)\/threads$/, async (match, request, response) => {
      messageOf(match[1] ?? '', match[2] ?? '');
      if (denied(match[1] ?? '').has('createPublicThreads')) throw new RestError(403, 50013, 'Missing Permissions');
      json(response, 201, createThread(match[1] ?? '', (await parseBody(request)).json));
    });
    this.#route('POST', /^\/channels\/(\d+)\/threads$/, async (match, request, response) => {
      json(response, 201, createThread(match[1] ?? '', (await parseBody(request)).json));
    });
    this.#route('GET', /^\/channels\/(\d+)$/, (match, _q, response) => json(response, 200, channelObject(channelOf(match[1] ?? '').channel)));

    // Guild reads.
    const guildOf = (guildId: string) => {
      const guild = state.guilds.get(guildId);
      if (!guild) throw new RestError(404, 10004, 'Unknown Guild');
      return guild;
    };
    this.#route('GET', /^\/guilds\/(\d+)$/, (match, _q, response) => {
      const guild = guildOf(match[1] ?? '');
      json(response, 200, { id: guild.id, name: guild.name, owner_id: guild.ownerId, roles: guild.roles.map(roleObject), features: [], emojis: [], stickers: [] });
    });
    this.#route('GET', /^\/guilds\/(\d+)\/roles$/, (match, _q, response) => json(response, 200, guildOf(match[1] ?? '').roles.map(roleObject)));
    this.#route('GET', /^\/guilds\/(\d+)\/channels$/, (match, _q, response) => json(response, 200, guildOf(match[1] ?? '').channels.map(channelObject)));
    this.#route('GET', /^\/guilds\/(\d+)\/members\/(\d+)$/, (match, _q, response) => {
      const guild = guildOf(match[1] ?? '');
      const member = guild.members.get(match[2] ?? '');
      const user = state.users.get(match[2] ?? '');
      if (!member || !user) throw new RestError(404, 10007, 'Unknown Member');
      json(response, 200, memberObject(member, user));
    });
  }
}
