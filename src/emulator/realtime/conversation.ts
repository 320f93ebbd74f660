// The items of one realtime conversation, in order, as `conversation.item.retrieve` answers them and
// `previous_item_id` places them. Only the newest are kept, by count and by size: a session lasts hours
// and a client may create items of any size, so the oldest are forgotten (a retrieve then finds nothing).

export type ConversationItem = Readonly<Record<string, unknown>> & { readonly id: string };

export interface ConversationLimits {
  maxItems: number;
  /** What the items kept may weigh together, each by the length of its JSON. */
  maxChars: number;
}

interface Entry {
  item: ConversationItem;
  /** The item before it when it was added (null: the first). */
  previousId: string | null;
  chars: number;
}

export class Conversation {
  /** By id, oldest first (a Map keeps the order of insertion). */
  readonly #entries = new Map<string, Entry>();
  readonly #limits: ConversationLimits;
  #chars = 0;
  #lastId: string | null = null;

  constructor(limits: ConversationLimits) {
    this.#limits = limits;
  }

  /** The id of the newest item, which a new item follows. */
  get lastId(): string | null {
    return this.#lastId;
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /** The item as it now stands, with the id it followed, or undefined when there is none (or it was forgotten). */
  get(id: string): { item: ConversationItem; previousId: string | null } | undefined {
    const entry = this.#entries.get(id);
    return entry && { item: entry.item, previousId: entry.previousId };
  }

  /** Appends an item and returns the id of the item before it. */
  add(item: ConversationItem): string | null {
    const previousId = this.#lastId;
    this.#lastId = item.id;
    this.#store({ item, previousId, chars: 0 });
    return previousId;
  }

  /** Replaces an item by a newer state of it, in its place; returns the id before it, or undefined when it is gone. */
  update(item: ConversationItem): string | null | undefined {
    const entry = this.#entries.get(item.id);
    if (!entry) return undefined;
    this.#chars -= entry.chars;
    this.#entries.delete(item.id);
    // Re-inserted at the end of the Map: its place in the conversation is its previousId, not the Map's order.
    this.#store({ item, previousId: entry.previousId, chars: 0 });
    return entry.previousId;
  }

  /** The items kept, in conversation order (each after the one it followed), oldest first. */
  items(): ConversationItem[] {
    const ordered: ConversationItem[] = [];
    for (let entry = this.#lastId === null ? undefined : this.#entries.get(this.#lastId); entry;) {
      ordered.push(entry.item);
      entry = entry.previousId === null ? undefined : this.#entries.get(entry.previousId);
    }
    return ordered.reverse();
  }

  delete(id: string): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    this.#chars -= entry.chars;
    this.#entries.delete(id);
    if (this.#lastId === id) this.#lastId = entry.previousId;
    // The item that followed it now follows the one before it: else the items in front drop out of the order.
    for (const next of this.#entries.values()) if (next.previousId === id) next.previousId = entry.previousId;
    return true;
  }

  #store(entry: Entry): void {
    entry.chars = JSON.stringify(entry.item).length;
    this.#entries.set(entry.item.id, entry);
    this.#chars += entry.chars;
    for (const [id, old] of this.#entries) {
      if (this.#entries.size <= this.#limits.maxItems && this.#chars <= this.#limits.maxChars) break;
      this.#entries.delete(id);
      this.#chars -= old.chars;
    }
  }
}
