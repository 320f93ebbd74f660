import { isRecord, ownValue } from '../../lib/json.ts';
import { Conversation, type ConversationItem, type ConversationLimits } from './conversation.ts';
import { newId, type ClientEvent, type Emit, type Refuse } from './session-io.ts';

// The conversation's items as the client sees them: announced as the ecosystem's SDKs read them (added,
// then done), and created, retrieved and deleted by client events.

/** Assistant items remembered for truncation, function calls, and truncations kept for tests: the newest this many. */
export const MAX_REMEMBERED_ITEMS = 1000;
/** The conversation's items kept for conversation.item.retrieve: the newest, within these bounds. */
const CONVERSATION_LIMITS: ConversationLimits = { maxItems: MAX_REMEMBERED_ITEMS, maxChars: 1024 * 1024 };
/** A force_message is spoken in at most a few seconds: longer text is refused rather than kept and echoed. */
const MAX_FORCE_MESSAGE_CHARS = 4096;

/** The content parts a message item of each role may carry (the realtime protocol's, its older names included). */
const MESSAGE_PART_TYPES: Readonly<Record<string, readonly string[]>> = {
  user: ['input_text', 'input_audio', 'input_image'],
  system: ['input_text'],
  assistant: ['output_text', 'text', 'output_audio', 'audio'],
};
const TEXT_PART_TYPES: ReadonlySet<string> = new Set(['input_text', 'output_text', 'text']);

/** What item creation asks of the model's side: the function calls it knows, and speaking a force_message. */
export interface ItemModel {
  /** Checks a function_call_output item and keeps its output for the next response; false after answering why not. */
  acceptOutput(item: Readonly<Record<string, unknown>>, clientEventId: unknown): boolean;
  knowsCall(callId: string): boolean;
  /** A call the client wrote into the conversation, to be answered like the model's own. */
  rememberCall(callId: string, followUpText: string | undefined): void;
  /** Says a force_message's text as a response of its own (refused while another response is active). */
  forceMessage(text: string, interruptible: boolean, clientEventId: unknown): void;
}

export class ConversationItems {
  readonly #conversation = new Conversation(CONVERSATION_LIMITS);
  readonly #emit: Emit;
  readonly #refuse: Refuse;
  /** Whether message items may be created (RealtimeOptions.messageItems), read at each creation. */
  readonly #messageItems: () => boolean;

  constructor(emit: Emit, refuse: Refuse, messageItems: () => boolean = () => true) {
    this.#emit = emit;
    this.#refuse = refuse;
    this.#messageItems = messageItems;
  }

  /** The conversation's items as they stand, oldest first: what the model would take as context. */
  get items(): ConversationItem[] {
    return this.#conversation.items();
  }

  /** The id of the newest item. */
  get lastId(): string | null {
    return this.#conversation.lastId;
  }

  /** A new item at the end of the conversation: conversation.item.created (older clients) and conversation.item.added. */
  add(item: ConversationItem): void {
    const previous = this.#conversation.add(item);
    this.#emit('conversation.item.created', { previous_item_id: previous, item });
    this.#emit('conversation.item.added', { previous_item_id: previous, item });
  }

  /** The item in its final state (a user turn with its transcript, an answer with its content): conversation.item.done. */
  finish(item: ConversationItem): void {
    const previous = this.#conversation.update(item);
    this.#emit('conversation.item.done', { previous_item_id: previous ?? null, item });
  }

  /** conversation.item.create: an item the client writes, or a force_message the model speaks. */
  create(event: ClientEvent, model: ItemModel): void {
    const item = isRecord(event.item) ? event.item : undefined;
    if (!item || typeof item.type !== 'string') {
      this.#refuse('missing_item', 'conversation.item.create needs an item with a type.', event.event_id, 'item');
      return;
    }
    if (item.type !== 'force_message') {
      if (item.id !== undefined && (typeof item.id !== 'string' || item.id === '')) {
        this.#refuse('invalid_value', 'item.id must be a non-empty string when it is given.', event.event_id, 'item.id');
        return;
      }
      if (typeof item.id === 'string' && this.#conversation.has(item.id)) {
        this.#refuse('invalid_value', `The conversation already has an item ${item.id}.`, event.event_id, 'item.id');
        return;
      }
      if (item.type === 'message' && !this.#messageFits(item, event.event_id)) return;
      if (item.type === 'function_call_output' && !model.acceptOutput(item, event.event_id)) return;
      // A call the client writes into the conversation (history it restores) may be answered like the model's own.
      if (item.type === 'function_call' && typeof item.call_id === 'string' && !model.knowsCall(item.call_id))
        model.rememberCall(item.call_id, undefined);
      const created = {
        ...item,
        id: typeof item.id === 'string' ? item.id : newId('item'),
        object: 'realtime.item',
        status: typeof item.status === 'string' ? item.status : 'completed',
      };
      this.add(created);
      this.finish(created);
      return;
    }
    const content = Array.isArray(item.content) ? item.content : [];
    const text = content
      .map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
      .join(' ')
      .trim();
    if (item.role !== 'assistant' || text === '') {
      this.#refuse('invalid_force_message', 'A force_message needs role assistant and output_text content.', event.event_id, 'item');
      return;
    }
    if (text.length > MAX_FORCE_MESSAGE_CHARS) {
      this.#refuse(
        'invalid_force_message',
        `A force_message's text may be at most ${MAX_FORCE_MESSAGE_CHARS} characters.`,
        event.event_id,
        'item.content',
      );
      return;
    }
    model.forceMessage(text, item.interruptible !== false, event.event_id);
  }

  /**
   * A message item a client writes (history it restores, text it sends): a role the protocol knows, and
   * content parts of the types that role's items carry, each text part with its text. False after answering why not.
   */
  #messageFits(item: Readonly<Record<string, unknown>>, clientEventId: unknown): boolean {
    if (!this.#messageItems()) {
      this.#refuse('invalid_value', 'This conversation does not take message items.', clientEventId, 'item.type');
      return false;
    }
    const role = typeof item.role === 'string' ? item.role : '';
    const partTypes = ownValue(MESSAGE_PART_TYPES, role);
    if (!partTypes) {
      this.#refuse('invalid_value', 'A message item needs a role: user, assistant or system.', clientEventId, 'item.role');
      return false;
    }
    const parts = item.content === undefined ? [] : item.content;
    const fits =
      Array.isArray(parts) &&
      parts.every(
        (part: unknown) =>
          isRecord(part) &&
          typeof part.type === 'string' &&
          partTypes.includes(part.type) &&
          (!TEXT_PART_TYPES.has(part.type) || typeof part.text === 'string'),
      );
    if (!fits) {
      this.#refuse(
        'invalid_value',
        `A ${role} message's content is a list of parts of type ${partTypes.join(', ')}; a text part carries its text.`,
        clientEventId,
        'item.content',
      );
    }
    return fits;
  }

  /** The item id a client event names, or undefined after answering that it names none. */
  #itemIdOf(event: ClientEvent): string | undefined {
    if (typeof event.item_id === 'string' && event.item_id !== '') return event.item_id;
    this.#refuse('missing_field', `${String(event.type)} needs an item_id.`, event.event_id, 'item_id');
    return undefined;
  }

  #notFound(event: ClientEvent, itemId: string): void {
    this.#refuse('item_not_found', `The conversation has no item ${itemId}.`, event.event_id, 'item_id');
  }

  /** conversation.item.retrieve */
  retrieve(event: ClientEvent): void {
    const itemId = this.#itemIdOf(event);
    if (itemId === undefined) return;
    const found = this.#conversation.get(itemId);
    if (!found) return this.#notFound(event, itemId);
    this.#emit('conversation.item.retrieved', { item: found.item });
  }

  /** conversation.item.delete */
  delete(event: ClientEvent): void {
    const itemId = this.#itemIdOf(event);
    if (itemId === undefined) return;
    if (!this.#conversation.delete(itemId)) return this.#notFound(event, itemId);
    this.#emit('conversation.item.deleted', { item_id: itemId });
  }
}
