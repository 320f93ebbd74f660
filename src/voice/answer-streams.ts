// Which stream of the bot's voice each audio delta belongs to, and which answers a barge-in cut off.
//
// The spec promises only `delta` (base64 audio) on an audio delta. Playback is keyed on the item id when
// the delta names one, else on its response id, else on a synthetic id for the response in progress.
// A truncation must name a real item, so item ids announced by `response.output_item.added` or
// `conversation.item.created` are remembered for deltas that do not carry one. After a barge-in, deltas
// and done events of the answer that was cut off may still be in flight: they are recognised and
// dropped, so the answer is not heard again.

export interface AnswerAudio {
  /** The playback stream this audio belongs to. */
  key: string;
  /** The response's id, or a synthetic one when the server gave none. */
  responseId: string;
  /** The real item id, when the server said it: only then can the answer be truncated. */
  itemId: string | undefined;
  /** From the latest delta (0 when no delta said). */
  contentIndex: number;
}

export interface AudioDeltaIds {
  responseId: string | undefined;
  itemId: string | undefined;
  contentIndex?: number | undefined;
}

/** Enough to recognise the late events of recent answers; older ids are long out of flight. */
const REMEMBERED_IDS = 256;

function remember<T>(collection: Map<string, T>, key: string, value: T): void {
  collection.delete(key);
  collection.set(key, value);
  if (collection.size > REMEMBERED_IDS) collection.delete(collection.keys().next().value!);
}

export class AnswerStreams {
  #syntheticCount = 0;
  /**
   * The latest response (real or synthetic id). It stays current after its response.done: audio that
   * arrives before the next response.created can only be late audio of that response.
   */
  #currentResponse: string | undefined;
  /** The current response was inferred from audio, with no response.created: the next user turn ends it. */
  #currentIsInferred = false;
  /** Response id -> the assistant item it added. */
  readonly #itemOfResponse = new Map<string, string>();
  /** Streams being played (or queued), by key. */
  readonly #streams = new Map<string, AnswerAudio>();
  /** Keys, item ids and response ids of answers that were cut off. */
  readonly #cutOff = new Map<string, true>();

  responseCreated(responseId: string | undefined): void {
    this.#currentResponse = responseId ?? this.#syntheticId();
    this.#currentIsInferred = false;
  }

  /** A user turn was committed: an answer the server never announced cannot continue past it. */
  turnCommitted(): void {
    if (this.#currentIsInferred) this.#currentResponse = undefined;
  }

  /**
   * An item was added: an assistant item names the answer. Without a role, only an item a response says
   * it added (response.output_item.added with its response id) counts.
   */
  itemAdded(responseId: string | undefined, itemId: string | undefined, role: string | undefined): void {
    if (itemId === undefined || (role === undefined ? responseId === undefined : role !== 'assistant')) return;
    const response = responseId ?? this.#currentResponse;
    if (response === undefined || this.#itemOfResponse.has(response)) return;
    remember(this.#itemOfResponse, response, itemId);
  }

  /** The stream an audio delta belongs to, or undefined when its answer was cut off (drop it). */
  audio(delta: AudioDeltaIds): AnswerAudio | undefined {
    let responseId = delta.responseId ?? this.#currentResponse;
    if (responseId === undefined) {
      responseId = this.#currentResponse = this.#syntheticId();
      this.#currentIsInferred = true;
    }
    const key = delta.itemId ?? responseId;
    if (this.#wasCutOff(key, delta.itemId, responseId)) return undefined;
    let stream = this.#streams.get(key);
    if (!stream) {
      stream = { key, responseId, itemId: delta.itemId, contentIndex: 0 };
      this.#streams.set(key, stream);
    }
    if (delta.contentIndex !== undefined) stream.contentIndex = delta.contentIndex;
    return stream;
  }

  /** The stream an output_audio.done ends, or undefined when it is unknown or was cut off. */
  audioDone(done: AudioDeltaIds): string | undefined {
    const responseId = done.responseId ?? this.#currentResponse;
    const key = done.itemId ?? responseId;
    if (key === undefined || this.#wasCutOff(key, done.itemId, responseId)) return undefined;
    return this.#streams.has(key) ? key : undefined;
  }

  /** response.done: the streams of that response (a server that never sent output_audio.done ends them here). */
  responseDone(responseId: string | undefined): string[] {
    const response = responseId ?? this.#currentResponse;
    return [...this.#streams.values()].filter((stream) => stream.responseId === response).map((stream) => stream.key);
  }

  /** Whether an event of this response or item belongs to an answer that was cut off. */
  isCutOff(responseId: string | undefined, itemId: string | undefined): boolean {
    return this.#wasCutOff(undefined, itemId, responseId ?? this.#currentResponse);
  }

  /**
   * A barge-in stopped this stream: its later deltas and done events are dropped. Returns the stream,
   * with the item id learned since its first delta, to truncate it.
   */
  cutOff(key: string): AnswerAudio | undefined {
    const stream = this.#streams.get(key);
    this.#streams.delete(key);
    remember(this.#cutOff, key, true);
    if (!stream) return undefined;
    const itemId = stream.itemId ?? this.#itemOfResponse.get(stream.responseId);
    remember(this.#cutOff, stream.responseId, true);
    if (itemId !== undefined) remember(this.#cutOff, itemId, true);
    return { ...stream, itemId };
  }

  /** The stream was played to its end. */
  finished(key: string): void {
    this.#streams.delete(key);
  }

  #wasCutOff(key: string | undefined, itemId: string | undefined, responseId: string | undefined): boolean {
    return [key, itemId, responseId].some((id) => id !== undefined && this.#cutOff.has(id));
  }

  #syntheticId(): string {
    this.#syntheticCount++;
    return `(response ${this.#syntheticCount})`;
  }
}
