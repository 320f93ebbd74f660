import type { EventEmitter } from 'node:events';
import { isRecord } from '../lib/json.ts';
import type { ParsedBody } from './body.ts';
import { RestError, invalidFormBody, tooLong, type FieldErrors } from './errors.ts';
import type { MessageStore } from './messages.ts';
import { modalErrors } from './modals.ts';
import type { Message, StandInState } from '../world/state.ts';

// Interactions as Discord enforces them: one first response within the deadline (10062 after it), one
// acknowledgement only (40060), and a webhook token that lives 15 minutes (50027 after it). The moment
// each of the two ends is announced ('interactionDeadline', 'interactionTokenExpired'), so a test can
// wait for it instead of sleeping past it.

export const CALLBACK = {
  reply: 4,
  deferReply: 5,
  deferUpdate: 6,
  update: 7,
  autocomplete: 8,
  modal: 9,
} as const;

const EPHEMERAL = 64;
const LOADING = 128;
/** Follow-ups per interaction where only a user's install authorized it (Discord's limit, 40094 beyond). */
export const USER_INSTALL_FOLLOW_UP_LIMIT = 5;

/** Discord's limits on autocomplete choices: 25 of them, names and string values of at most 100 characters. */
function choiceErrors(data: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const choices = Array.isArray(data.choices) ? data.choices : [];
  if (choices.length > 25) return tooLong(['choices'], 25);
  for (const [index, choice] of choices.entries()) {
    if (!isRecord(choice)) continue;
    if (typeof choice.name === 'string' && choice.name.length > 100) return tooLong(['choices', index, 'name'], 100);
    if (typeof choice.value === 'string' && choice.value.length > 100) return tooLong(['choices', index, 'value'], 100);
  }
  return undefined;
}

export interface Callback {
  type: number;
  data: Readonly<Record<string, unknown>>;
  at: number;
}

export interface InteractionRecord {
  id: string;
  token: string;
  type: number;
  name: string;
  createdAt: number;
  /** The server it happened in; none in a DM. */
  guildId: string | undefined;
  channelId: string;
  /** Where it happened: 0 a server, 1 the bot's DM, 2 a DM or group DM between users. */
  context: number;
  /** Its `authorizing_integration_owners`: "0" the server (or "0" in the bot's DM), "1" the installing user. */
  owners: Readonly<Record<string, string>>;
  userId: string;
  payload: Record<string, unknown>;
  callbacks: Callback[];
  original: Message | undefined;
  followUps: Message[];
  sourceMessage: Message | undefined;
  tokenExpired: boolean;
}

export interface InteractionRules {
  responseDeadlineMs: number;
  tokenLifetimeMs: number;
}

export class Interactions {
  readonly #state: StandInState;
  readonly #messages: MessageStore;
  readonly #events: EventEmitter;
  readonly #rules: InteractionRules;
  readonly #byId = new Map<string, InteractionRecord>();
  readonly #byToken = new Map<string, InteractionRecord>();
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(state: StandInState, messages: MessageStore, events: EventEmitter, rules: InteractionRules) {
    this.#state = state;
    this.#messages = messages;
    this.#events = events;
    this.#rules = rules;
  }

  register(record: InteractionRecord): void {
    this.#byId.set(record.id, record);
    this.#byToken.set(record.token, record);
    this.#announce(record, this.#rules.responseDeadlineMs, () => this.deadlinePassed(record), 'interactionDeadline');
    this.#announce(record, this.#rules.tokenLifetimeMs, () => this.tokenExpired(record), 'interactionTokenExpired');
  }

  expire(record: InteractionRecord): void {
    record.tokenExpired = true;
    this.#events.emit('interactionTokenExpired', record);
  }

  /** Whether the window for a first response has closed: a first response now is refused with 10062. */
  deadlinePassed(record: InteractionRecord): boolean {
    return Date.now() - record.createdAt > this.#rules.responseDeadlineMs;
  }

  /** Whether the webhook token is dead (its lifetime ran out, or it was expired early): webhook calls are refused with 50027. */
  tokenExpired(record: InteractionRecord): boolean {
    return record.tokenExpired || Date.now() - record.createdAt > this.#rules.tokenLifetimeMs;
  }

  /**
   * Emits `event` with the record once `passed()` holds, `afterMs` after the interaction was created. A
   * timer can fire a millisecond before Date.now() agrees, so it re-arms until the refusal checks would
   * refuse too: once the event is out, they do.
   */
  #announce(record: InteractionRecord, afterMs: number, passed: () => boolean, event: string): void {
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        if (passed()) this.#events.emit(event, record);
        else this.#announce(record, afterMs, passed, event);
      },
      Math.max(0, record.createdAt + afterMs + 1 - Date.now()),
    );
    timer.unref();
    this.#timers.add(timer);
  }

  /** Stops the announcements still pending (the stand-in is closing). */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #draft(record: InteractionRecord, body: ParsedBody, extraFlags = 0) {
    return {
      channelId: record.channelId,
      authorId: this.#state.botUser.id,
      body,
      webhookId: this.#state.applicationId,
      interaction: { id: record.id, type: record.type, name: record.name, userId: record.userId, owners: record.owners },
      extraFlags,
    };
  }

  callback(id: string, token: string, body: ParsedBody): Record<string, unknown> {
    const record = this.#byId.get(id);
    if (!record || record.token !== token) throw new RestError(404, 10062, 'Unknown interaction');
    if (this.deadlinePassed(record)) throw new RestError(404, 10062, 'Unknown interaction');
    if (record.callbacks.length > 0) throw new RestError(400, 40060, 'Interaction has already been acknowledged.');
    const type = typeof body.json.type === 'number' ? body.json.type : 0;
    const data = isRecord(body.json.data) ? body.json.data : {};
    const dataBody: ParsedBody = { json: data, files: body.files };
    // A refused response acknowledges nothing: checked before it is recorded.
    const errors = this.#responseErrors(type, dataBody, record);
    if (errors) throw invalidFormBody({ data: errors });
    const callback: Callback = { type, data, at: Date.now() };
    record.callbacks.push(callback);

    let message: Message | undefined;
    if (type === CALLBACK.reply) {
      message = this.#messages.create(this.#draft(record, dataBody));
      record.original = message;
    } else if (type === CALLBACK.deferReply) {
      const flags = typeof data.flags === 'number' ? data.flags & EPHEMERAL : 0;
      message = this.#messages.create(this.#draft(record, { json: {}, files: [] }, flags | LOADING));
      record.original = message;
    } else if (type === CALLBACK.update && record.sourceMessage) {
      message = this.#messages.edit(record.sourceMessage, dataBody);
      record.original = record.sourceMessage;
    } else if (type === CALLBACK.deferUpdate) {
      // Discord: after a (deferred) update, @original is the message the component sits on.
      record.original = record.sourceMessage;
    } else if (![CALLBACK.autocomplete, CALLBACK.modal].some((known) => known === type)) {
      record.callbacks.pop();
      throw new RestError(400, 50035, `Invalid interaction callback type ${type}`);
    }
    this.#events.emit('callback', record, callback);
    return {
      interaction: {
        id: record.id,
        type: record.type,
        ...(message
          ? {
              response_message_id: message.id,
              response_message_loading: type === CALLBACK.deferReply,
              response_message_ephemeral: (message.flags & EPHEMERAL) !== 0,
            }
          : {}),
      },
      resource: { type, ...(message ? { message: this.#state.messageObject(message) } : {}) },
    };
  }

  /** What Discord refuses in a response's `data`: a message it creates or edits, a modal, choices. */
  #responseErrors(type: number, data: ParsedBody, record: InteractionRecord): FieldErrors | undefined {
    switch (type) {
      case CALLBACK.reply:
        return this.#messages.errors(data);
      case CALLBACK.update:
        return this.#messages.errors(data, record.sourceMessage);
      case CALLBACK.autocomplete:
        return choiceErrors(data.json);
      case CALLBACK.modal:
        return modalErrors(data.json);
      default:
        // A deferral carries only flags: Discord keeps EPHEMERAL from them and ignores the rest.
        return undefined;
    }
  }

  #byLiveToken(token: string): InteractionRecord {
    const record = this.#byToken.get(token);
    if (!record) throw new RestError(404, 10015, 'Unknown Webhook');
    if (this.tokenExpired(record)) throw new RestError(401, 50027, 'Invalid Webhook Token');
    return record;
  }

  webhookMessage(token: string, messageId: string): Message {
    const record = this.#byLiveToken(token);
    const message = messageId === '@original' ? record.original : record.followUps.find((candidate) => candidate.id === messageId);
    if (!message || message.deleted) throw new RestError(404, 10008, 'Unknown Message');
    return message;
  }

  followUp(token: string, body: ParsedBody): Message {
    const record = this.#byLiveToken(token);
    if (record.callbacks.length === 0) throw new RestError(404, 10015, 'Unknown Webhook');
    const onlyUserInstall = Object.keys(record.owners).length === 1 && '1' in record.owners;
    if (onlyUserInstall && record.followUps.length >= USER_INSTALL_FOLLOW_UP_LIMIT)
      throw new RestError(400, 40094, 'This interaction has hit the maximum number of follow up messages');
    const message = this.#messages.create(this.#draft(record, body));
    record.followUps.push(message);
    return message;
  }
}
