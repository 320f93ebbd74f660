import { isRecord } from '../../lib/json.ts';
import type { Logger } from '../../lib/log.ts';
import { appendBounded } from '../journal.ts';
import { journalEvent, newEventJournal, type JournaledEvent } from './event-journal.ts';
import { InputAudioBuffer } from './input-buffer.ts';
import type { ConversationItem } from './conversation.ts';
import { ConversationItems } from './items.ts';
import type { RealtimeOptions } from './options.ts';
import { Responses } from './responses.ts';
import type { TurnScript } from './script.ts';
import { SessionConfig } from './session-config.ts';
import { newId, type Emit, type Refuse } from './session-io.ts';

// One realtime session: `session.update` first, then audio in, and an echo model that answers each user
// turn by playing the user's own audio back, unless a script (script.ts) says what the turn is heard as
// and how it is answered. Events follow the realtime API's shapes (event ids, item ids, response ids,
// output and content indexes). The session journals and routes each client event to the part whose job
// it is: its configuration (session-config.ts), the input audio buffer (input-buffer.ts), the
// conversation's items (items.ts) and the model's responses (responses.ts).

// What tests read of a session's speech, from where they have always imported it.
export { FORCE_MESSAGE_TONE_HZ } from './responses.ts';
export type { JournaledEvent } from './event-journal.ts';

/** How loud one input_audio_buffer.append was: its loudest sample, 0 to 1 of full scale, and when it came. */
export interface AppendLevel {
  at: number;
  peak: number;
}

/** The journal of append loudness keeps this many of the newest (at 40 ms an append, over six minutes). */
const APPEND_LEVELS_KEPT = 10_000;

/** Sends one event, already written as JSON. */
type Send = (text: string) => void;

/** The loudest sample of `audio`, 0 to 1 of full scale. */
function peakOf(audio: Int16Array): number {
  let peak = 0;
  for (const sample of audio) peak = Math.max(peak, Math.abs(sample));
  return peak / 32768;
}

export class RealtimeSession {
  readonly id = newId('sess');
  readonly model: string;
  readonly keyId: string;
  readonly #clientJournal = newEventJournal();
  readonly #serverJournal = newEventJournal();
  /** The client's events, newest last, within the journal's bounds. */
  readonly clientEvents: JournaledEvent[] = this.#clientJournal.entries;
  /** The events sent, newest last, within the journal's bounds. */
  readonly serverEvents: JournaledEvent[] = this.#serverJournal.entries;
  readonly #send: Send;
  readonly #log: Logger;
  #configured = false;
  #closedAt: number | undefined;
  readonly #config = new SessionConfig();
  readonly #items: ConversationItems;
  readonly #responses: Responses;
  readonly #input: InputAudioBuffer;
  /**
   * How loud each input_audio_buffer.append was, newest last: the event journal keeps only the first of a
   * run of appends, and no audio; tests tell by this whether a member's speech reached the session.
   */
  readonly appendLevels: AppendLevel[] = [];
  /** Truncations the client asked for: what it says was really played. */
  readonly truncations: { itemId: string; audioEndMs: number }[];

  /** `takeScript` gives the script of each user turn, if one was posted (script.ts). */
  constructor(
    model: string,
    keyId: string,
    send: Send,
    options: RealtimeOptions,
    log: Logger,
    takeScript: (session: RealtimeSession) => TurnScript | undefined = () => undefined,
  ) {
    this.model = model;
    this.keyId = keyId;
    this.#send = send;
    this.#log = log;
    const emit: Emit = (type, fields) => this.emit(type, fields);
    const refuse: Refuse = (code, message, clientEventId, param) => this.#error(code, message, clientEventId, param);
    this.#items = new ConversationItems(emit, refuse, () => options.messageItems);
    this.#responses = new Responses({
      options,
      config: this.#config,
      items: this.#items,
      emit,
      refuse,
      fault: (error) => this.#fault(error),
      closed: () => this.#closedAt !== undefined,
      takeScript: () => takeScript(this),
    });
    this.truncations = this.#responses.truncations;
    this.#input = new InputAudioBuffer({
      config: this.#config,
      emit,
      refuse,
      muted: () => this.#responses.muted,
      commitTurn: (audio, itemId, respond) => this.#responses.hear(audio, itemId, respond),
      heard: (audio) => appendBounded(this.appendLevels, { at: Date.now(), peak: peakOf(audio) }, APPEND_LEVELS_KEPT),
    });
  }

  emit(type: string, fields: Record<string, unknown> = {}): void {
    if (this.#closedAt !== undefined) return;
    const event = { event_id: newId('event'), type, ...fields };
    const text = JSON.stringify(event);
    journalEvent(this.#serverJournal, event, text.length);
    this.#send(text);
  }

  #error(code: string, message: string, clientEventId?: unknown, param: string | null = null): void {
    this.emit('error', {
      error: { type: 'invalid_request_error', code, message, param, event_id: typeof clientEventId === 'string' ? clientEventId : null },
    });
  }

  /** When the session ended, or undefined while it is open. */
  get closedAt(): number | undefined {
    return this.#closedAt;
  }

  /** Ends the session; its audio goes at once, its journals stay while the session is retained for tests. */
  close(): void {
    this.#closedAt ??= Date.now();
    this.#responses.close();
    this.#input.reset();
  }

  /** The conversation's items as they stand, oldest first (the context the model has): for tests and demos. */
  get items(): ConversationItem[] {
    return this.#items.items;
  }

  /** Whether the session declared a function tool of this name. */
  declaresFunction(name: string): boolean {
    return this.#config.declaresFunction(name);
  }

  /** The names of the function tools the session declared. */
  get functionNames(): string[] {
    return this.#config.functionNames;
  }

  /** Handles one client event. Never throws: a fault is answered with an error event and the session goes on. */
  receive(text: string): void {
    try {
      this.#receive(text);
    } catch (error) {
      this.#fault(error);
    }
  }

  #fault(error: unknown): void {
    this.#log.error('realtime event handling failed', { session: this.id, error });
    this.emit('error', {
      error: {
        type: 'server_error',
        code: 'server_error',
        message: 'The emulator failed to handle an event.',
        param: null,
        event_id: null,
      },
    });
  }

  #receive(text: string): void {
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      this.#error('invalid_json', 'The event is not valid JSON.');
      return;
    }
    if (!isRecord(event) || typeof event.type !== 'string') {
      this.#error('invalid_event', 'An event must be a JSON object with a type.');
      return;
    }
    journalEvent(this.#clientJournal, event, text.length);
    if (!this.#configured && event.type !== 'session.update') {
      this.#error('session_not_configured', 'The first event must be session.update.', event.event_id);
      return;
    }
    switch (event.type) {
      case 'session.update':
        return this.#sessionUpdate(event);
      case 'input_audio_buffer.append':
        return this.#input.append(event);
      case 'input_audio_buffer.commit':
        return this.#input.commit(event);
      case 'input_audio_buffer.clear':
        return this.#input.clear();
      case 'conversation.item.create':
        return this.#items.create(event, this.#responses);
      case 'conversation.item.delete':
        return this.#items.delete(event);
      case 'conversation.item.retrieve':
        return this.#items.retrieve(event);
      case 'conversation.item.truncate':
        return this.#responses.truncate(event);
      case 'response.create':
        return this.#responses.create(event);
      case 'response.cancel':
        return this.#responses.cancel(event);
      default:
        this.#error('unknown_event', `Unknown event type ${event.type}.`, event.event_id, 'type');
    }
  }

  #sessionUpdate(event: Readonly<Record<string, unknown>>): void {
    const session = isRecord(event.session) ? event.session : undefined;
    if (!session) {
      this.#error('missing_session', 'session.update needs a session object.', event.event_id, 'session');
      return;
    }
    const update = this.#config.update(session);
    if (!update.ok) return this.#error('invalid_value', update.message, event.event_id, update.param);
    this.#input.setTurnDetection(update.detection);
    if (!this.#configured) {
      this.#configured = true;
      this.emit('session.created', { session: this.#config.describe(this.id, this.model) });
      this.emit('conversation.created', { conversation: { id: newId('conv'), object: 'realtime.conversation' } });
    }
    this.emit('session.updated', { session: this.#config.describe(this.id, this.model) });
  }
}
