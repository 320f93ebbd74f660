import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { snowflake } from '../world/snowflake.ts';
import { channelObject, memberObject, roleObject, userObject, type Message, type StandInState } from '../world/state.ts';
import { parseBody, readBody } from './body.ts';
import { commandErrors } from './commands.ts';
import { RestError, invalidFormBody } from './errors.ts';
import type { Interactions } from './interactions.ts';
import type { MessageStore } from './messages.ts';

// Discord's REST API, the part a bot uses: gateway discovery, command registration, interaction
// callbacks and webhooks, channel messages with uploads, threads, and reads of guilds and members.

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

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
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
      const failure = this.#deps.failures.find(
        (candidate) =>
          candidate.remaining > 0 && (candidate.method === undefined || candidate.method === method) && candidate.route.test(path),
      );
      if (failure) {
        failure.remaining--;
        request.resume();
        if (failure.status === 429) {
          const retryAfter = failure.retryAfterSeconds ?? 1;
          sendJson(
            response,
            429,
            { message: 'You are being rate limited.', retry_after: retryAfter, global: failure.global ?? false },
            {
              'retry-after': String(retryAfter),
              'x-ratelimit-scope': failure.global ? 'global' : 'user',
              ...(failure.global ? { 'x-ratelimit-global': 'true' } : {}),
            },
          );
        } else {
          sendJson(response, failure.status, {
            message: failure.message ?? 'Internal Server Error',
            code: failure.code ?? 0,
            ...(failure.errors ? { errors: failure.errors } : {}),
          });
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
      if (error instanceof RestError)
        sendJson(response, error.status, { message: error.message, code: error.code, ...(error.errors ? { errors: error.errors } : {}) });
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
      json(response, 200, {
        url: this.#deps.gatewayUrl(),
        shards,
        session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: maxConcurrency },
      });
    });
    this.#route('GET', /^\/gateway$/, (_m, _q, response) => json(response, 200, { url: this.#deps.gatewayUrl() }), false);
    this.#route('GET', /^\/users\/@me$/, (_m, _q, response) => json(response, 200, userObject(state.botUser)));
    this.#route('GET', /^\/applications\/@me$/, (_m, _q, response) => {
      json(response, 200, {
        id: state.applicationId,
        name: state.botUser.username,
        flags: state.privilegedIntents.applicationFlags,
        bot: userObject(state.botUser),
      });
    });

    // Commands: a bulk overwrite answers the registered list, or refuses them all (rest/commands.ts).
    const putCommands =
      (scope: string): Handler =>
      async (match, request, response) => {
        // Discord: a server the bot is not in (or was invited to without applications.commands) is 403 / 50001.
        if (scope === 'guild' && !state.guilds.get(match[2] ?? '')?.members.has(state.botUser.id)) {
          request.resume();
          throw new RestError(403, 50001, 'Missing Access');
        }
        const parsed: unknown = JSON.parse((await readBody(request)).toString('utf8'));
        const errors = commandErrors(arrayOf(parsed));
        if (errors) throw invalidFormBody(errors);
        const registered = arrayOf(parsed).map((command) => ({
          // A global command is installable to servers only unless it says otherwise (Discord's default).
          ...(scope === 'global' ? { integration_types: [0] } : {}),
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
    this.#route('GET', /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/, (match, _q, response) =>
      json(response, 200, state.commands.get(match[2] ?? '') ?? []),
    );

    // Interactions: callbacks are unauthenticated, as are the interaction webhooks.
    this.#route(
      'POST',
      /^\/interactions\/(\d+)\/([^/]+)\/callback$/,
      async (match, request, response) => {
        const body = await parseBody(request);
        const withResponse = new URL(request.url ?? '/', 'http://stand-in').searchParams.get('with_response') === 'true';
        const result = interactions.callback(match[1] ?? '', decodeURIComponent(match[2] ?? ''), body);
        if (withResponse) json(response, 200, result);
        else {
          response.writeHead(204);
          response.end();
        }
      },
      false,
    );
    this.#route(
      'GET',
      /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      (match, _q, response) => {
        json(
          response,
          200,
          state.messageObject(interactions.webhookMessage(decodeURIComponent(match[2] ?? ''), decodeURIComponent(match[3] ?? ''))),
        );
      },
      false,
    );
    this.#route(
      'PATCH',
      /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      async (match, request, response) => {
        const message = interactions.webhookMessage(decodeURIComponent(match[2] ?? ''), decodeURIComponent(match[3] ?? ''));
        json(response, 200, state.messageObject(messages.edit(message, await parseBody(request))));
      },
      false,
    );
    this.#route(
      'DELETE',
      /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      (match, _q, response) => {
        messages.delete(interactions.webhookMessage(decodeURIComponent(match[2] ?? ''), decodeURIComponent(match[3] ?? '')));
        response.writeHead(204);
        response.end();
      },
      false,
    );
    this.#route(
      'POST',
      /^\/webhooks\/(\d+)\/([^/]+)$/,
      async (match, request, response) => {
        const message = interactions.followUp(decodeURIComponent(match[2] ?? ''), await parseBody(request));
        json(response, 200, state.messageObject(message));
      },
      false,
    );

    // Channel messages. Where the bot is not (a server it is not in, a DM between users that a user
    // install answers in) Discord refuses the bot token with 403 / 50001 Missing Access.
    const visibleChannel = (channelId: string): void => {
      if (!state.channel(channelId) && !state.privateChannels.has(channelId)) throw new RestError(404, 10003, 'Unknown Channel');
      if (!state.botSeesChannel(channelId)) throw new RestError(403, 50001, 'Missing Access');
    };
    const channelOf = (channelId: string) => {
      visibleChannel(channelId);
      const found = state.channel(channelId);
      if (!found) throw new RestError(400, 50024, 'Cannot execute action on this channel type');
      return found;
    };
    const messageOf = (channelId: string, messageId: string): Message => {
      visibleChannel(channelId);
      const message = state.messages.get(messageId);
      if (!message || message.channelId !== channelId || message.deleted) throw new RestError(404, 10008, 'Unknown Message');
      return message;
    };
    // Refusals as Discord words them when the bot lacks a permission in the channel.
    const denied = (channelId: string) => state.deniedBotPermissions.get(channelId) ?? new Set();
    /**
     * The bot may write in its DM with a user who shares a server with it or installed the app; a user
     * whose DMs are closed to it is 403 / 50007, one with neither 403 / 50278 (no mutual guilds).
     */
    const checkDirectMessage = (channelId: string): void => {
      const dm = state.privateChannels.get(channelId);
      const userId = dm?.recipientIds.find((id) => id !== state.botUser.id);
      if (!dm || userId === undefined) return;
      if (state.closedDms.has(userId)) throw new RestError(403, 50007, 'Cannot send messages to this user');
      if (!state.sharesGuildWithBot(userId) && !state.userInstalls.has(userId))
        throw new RestError(403, 50278, 'Cannot send messages to this user due to having no mutual guilds');
    };
    this.#route('POST', /^\/channels\/(\d+)\/messages$/, async (match, request, response) => {
      visibleChannel(match[1] ?? '');
      checkDirectMessage(match[1] ?? '');
      const body = await parseBody(request);
      const missing = denied(match[1] ?? '');
      if (missing.has('viewChannel')) throw new RestError(403, 50001, 'Missing Access');
      if (missing.has('sendMessages') || (body.files.length > 0 && missing.has('attachFiles')))
        throw new RestError(403, 50013, 'Missing Permissions');
      if (isRecord(body.json.message_reference) && missing.has('readMessageHistory'))
        throw new RestError(400, 160002, 'Cannot reply without permission to read message history');
      const message = messages.create({ channelId: match[1] ?? '', authorId: state.botUser.id, body });
      json(response, 200, state.messageObject(message));
    });
    this.#route('GET', /^\/channels\/(\d+)\/messages$/, (match, request, response) => {
      visibleChannel(match[1] ?? '');
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
      json(
        response,
        200,
        page.map((message) => state.messageObject(message)),
      );
    });
    this.#route('GET', /^\/channels\/(\d+)\/messages\/(\d+)$/, (match, _q, response) => {
      json(response, 200, state.messageObject(messageOf(match[1] ?? '', match[2] ?? '')));
    });
    this.#route('PATCH', /^\/channels\/(\d+)\/messages\/(\d+)$/, async (match, request, response) => {
      visibleChannel(match[1] ?? '');
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
    this.#route('GET', /^\/channels\/(\d+)$/, (match, _q, response) => {
      visibleChannel(match[1] ?? '');
      const dm = state.privateChannels.get(match[1] ?? '');
      json(response, 200, dm ? state.privateChannelObject(dm, state.botUser.id) : channelObject(channelOf(match[1] ?? '').channel));
    });

    // The bot's DM with a user (Create DM): opened, or the open one returned, for any user; whether the
    // bot may write there is decided when it sends (checkDirectMessage). Another bot is 400 / 50007.
    this.#route('POST', /^\/users\/@me\/channels$/, async (_m, request, response) => {
      const body = await parseBody(request);
      const recipientId = typeof body.json.recipient_id === 'string' ? body.json.recipient_id : '';
      const user = state.users.get(recipientId);
      if (!user) throw new RestError(400, 50033, 'Invalid Recipient(s)');
      if (user.bot) throw new RestError(400, 50007, 'Cannot send messages to this user');
      json(response, 200, state.privateChannelObject(state.botDm(user.id), state.botUser.id));
    });

    // Guild reads.
    const guildOf = (guildId: string) => {
      const guild = state.guilds.get(guildId);
      if (!guild) throw new RestError(404, 10004, 'Unknown Guild');
      if (!state.botInGuild(guild)) throw new RestError(403, 50001, 'Missing Access');
      return guild;
    };
    this.#route('GET', /^\/guilds\/(\d+)$/, (match, _q, response) => {
      const guild = guildOf(match[1] ?? '');
      json(response, 200, {
        id: guild.id,
        name: guild.name,
        owner_id: guild.ownerId,
        preferred_locale: guild.preferredLocale,
        roles: guild.roles.map(roleObject),
        features: [],
        emojis: [],
        stickers: [],
      });
    });
    this.#route('GET', /^\/guilds\/(\d+)\/roles$/, (match, _q, response) =>
      json(response, 200, guildOf(match[1] ?? '').roles.map(roleObject)),
    );
    this.#route('GET', /^\/guilds\/(\d+)\/channels$/, (match, _q, response) =>
      json(response, 200, guildOf(match[1] ?? '').channels.map(channelObject)),
    );
    this.#route('GET', /^\/guilds\/(\d+)\/members\/(\d+)$/, (match, _q, response) => {
      const guild = guildOf(match[1] ?? '');
      const member = guild.members.get(match[2] ?? '');
      const user = state.users.get(match[2] ?? '');
      if (!member || !user) throw new RestError(404, 10007, 'Unknown Member');
      json(response, 200, memberObject(member, user));
    });
  }
}
