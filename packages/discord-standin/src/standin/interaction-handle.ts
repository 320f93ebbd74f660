import { isRecord } from '../lib/json.ts';
import { CALLBACK, type Callback, type InteractionRecord } from '../rest/interactions.ts';
import type { Message } from '../world/state.ts';

// An interaction a simulated user started, and waits for what the bot made of it.

const LOADING = 128;

export interface AutocompleteChoice {
  name: string;
  value: string | number;
}

/** How a handle waits: on the stand-in's events, within Discord's deadline. */
export interface Waiting {
  readonly responseDeadlineMs: number;
  waitFor<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T>;
}

export class InteractionHandle {
  readonly record: InteractionRecord;
  readonly #standIn: Waiting;

  constructor(record: InteractionRecord, standIn: Waiting) {
    this.record = record;
    this.#standIn = standIn;
  }

  get interaction(): Record<string, unknown> {
    return this.record.payload;
  }

  get followUps(): Message[] {
    return this.record.followUps;
  }

  /** The first callback; rejects when none came before Discord's deadline. */
  response(): Promise<Callback> {
    return this.#standIn.waitFor(
      () => this.record.callbacks[0],
      this.#standIn.responseDeadlineMs + 500,
      `a response to /${this.record.name}`,
    );
  }

  /** The reply as it stands once it is more than a "thinking…" placeholder. */
  reply(timeoutMs?: number): Promise<Message> {
    return this.waitForReply(() => true, timeoutMs);
  }

  waitForReply(predicate: (message: Message) => boolean, timeoutMs = 10_000): Promise<Message> {
    return this.#standIn.waitFor(
      () => {
        const original = this.record.original;
        return original && (original.flags & LOADING) === 0 && predicate(original) ? original : undefined;
      },
      timeoutMs,
      `the reply to /${this.record.name}`,
    );
  }

  /** The first follow-up message that satisfies `predicate`. */
  waitForFollowUp(predicate: (message: Message) => boolean, timeoutMs = 10_000): Promise<Message> {
    return this.#standIn.waitFor(
      () => this.record.followUps.find((message) => !message.deleted && predicate(message)),
      timeoutMs,
      `a follow-up to /${this.record.name}`,
    );
  }

  /** Autocomplete choices offered (callback type 8). */
  async choices(): Promise<AutocompleteChoice[]> {
    const callback = await this.response();
    if (callback.type !== CALLBACK.autocomplete) throw new Error(`expected autocomplete choices, got callback type ${callback.type}`);
    const choices = Array.isArray(callback.data.choices) ? callback.data.choices : [];
    return choices.flatMap((choice: unknown) =>
      isRecord(choice) && typeof choice.name === 'string' && (typeof choice.value === 'string' || typeof choice.value === 'number')
        ? [{ name: choice.name, value: choice.value }]
        : [],
    );
  }

  /** The modal shown (callback type 9): its custom id and text inputs. */
  async modal(): Promise<{ customId: string; inputs: string[] }> {
    const callback = await this.response();
    if (callback.type !== CALLBACK.modal) throw new Error(`expected a modal, got callback type ${callback.type}`);
    const rows = Array.isArray(callback.data.components) ? callback.data.components : [];
    const inputs = rows.flatMap((row: unknown) => {
      const children: unknown[] =
        isRecord(row) && Array.isArray(row.components) ? row.components : isRecord(row) && isRecord(row.component) ? [row.component] : [];
      return children.flatMap((child) => (isRecord(child) && typeof child.custom_id === 'string' ? [child.custom_id] : []));
    });
    return { customId: typeof callback.data.custom_id === 'string' ? callback.data.custom_id : '', inputs };
  }
}
