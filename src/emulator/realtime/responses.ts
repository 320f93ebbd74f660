import { appendBounded } from '../journal.ts';
import { encodeAudio } from './audio-format.ts';
import { MAX_REMEMBERED_ITEMS, type ConversationItems, type ItemModel } from './items.ts';
import type { RealtimeOptions } from './options.ts';
import type { ScriptedCall, TurnScript } from './script.ts';
import type { SessionConfig } from './session-config.ts';
import { newId, type ClientEvent, type Emit, type Refuse } from './session-io.ts';

// The model's side of a session: it hears each user turn and answers it, one response after another, by
// playing the user's own audio back (the echo), or as the turn's script says: a line of text (spoken as a
// tone), or a call of a function tool whose output it then speaks. Responses stream audio and transcript
// out at the configured pace, and may be cancelled or truncated.

/** Every line the model speaks from text (a force_message, a scripted answer, a function's output) is a tone of this pitch. */
export const FORCE_MESSAGE_TONE_HZ = 880;
/**
 * User turns the server VAD answers on its own may wait behind the one playing, up to this many (more
 * are dropped with `conversation_already_has_active_response`); a response the client asks for is never
 * queued: it is refused while another is active, as realtime services refuse a second response.
 */
const MAX_QUEUED_RESPONSES = 8;
/** The refusal of a response the client asked for while another was active (docs/gateway.md, "Emulator choices"). */
export const ACTIVE_RESPONSE_CODE = 'conversation_already_has_active_response';
const ACTIVE_RESPONSE_MESSAGE = 'A response is already in progress.';
/** The most of a text the model speaks (a function's output may be longer; the tone is at most maxToneMs anyway). */
const MAX_SPOKEN_CHARS = 4096;
/** A function call's arguments arrive in this many deltas (fewer when shorter), then whole. */
const ARGUMENT_DELTAS = 3;

interface Turn {
  audio: Int16Array;
  /** What was posted for this turn; cleared once the turn is answered. */
  script: TurnScript | undefined;
}

interface FunctionCall {
  /** The scripted text the model says once the output is back, instead of the output itself. */
  followUpText: string | undefined;
  answered: boolean;
}

interface ActiveResponse {
  id: string;
  itemId: string;
  cancelled: boolean;
  /** A force_message with `interruptible: false`: the caller's audio is dropped while it plays. */
  interruptible: boolean;
}

function tone(hz: number, ms: number, rate: number): Int16Array {
  const samples = new Int16Array(Math.round((ms * rate) / 1000));
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * hz * i) / rate));
  return samples;
}

/** What the responses need of their session. */
export interface ResponsesDeps {
  options: RealtimeOptions;
  config: SessionConfig;
  items: ConversationItems;
  emit: Emit;
  refuse: Refuse;
  /** A response failed: answered as a server error, and the session goes on. */
  fault: (error: unknown) => void;
  closed: () => boolean;
  /** The script of the user turn just committed, if one was posted (script.ts). */
  takeScript: () => TurnScript | undefined;
}

export class Responses implements ItemModel {
  /** Truncations the client asked for: what it says was really played. */
  readonly truncations: { itemId: string; audioEndMs: number }[] = [];
  readonly #deps: ResponsesDeps;
  /** The last user turn, until a response.create answers it (manual mode). */
  #lastTurn: Turn | undefined;
  /** The function calls of the conversation by call_id (the newest MAX_REMEMBERED_ITEMS). */
  readonly #calls = new Map<string, FunctionCall>();
  /** Function outputs the client gave since the last response.create: the next one speaks them. */
  #pendingOutputs: { callId: string; output: string }[] = [];
  /** Audio items the assistant produced, by id, for truncation. */
  readonly #assistantItems = new Map<string, number>();
  #current: ActiveResponse | undefined;
  #queue: Promise<void> = Promise.resolve();
  /** Responses queued or playing. */
  #responses = 0;

  constructor(deps: ResponsesDeps) {
    this.#deps = deps;
  }

  /** Whether the caller's audio is dropped now: a force_message with `interruptible: false` plays. */
  get muted(): boolean {
    return this.#current !== undefined && !this.#current.interruptible && !this.#current.cancelled;
  }

  /** The session closed: what plays stops, and nothing waits to be answered. */
  close(): void {
    if (this.#current) this.#current.cancelled = true;
    this.#lastTurn = undefined;
    this.#pendingOutputs = [];
  }

  /** A user turn ended (its audio committed as `itemId`): heard, transcribed, and answered at once when `respond`. */
  hear(audio: Int16Array, itemId: string, respond: boolean): void {
    const { emit, items, config } = this.#deps;
    emit('input_audio_buffer.committed', { previous_item_id: items.lastId, item_id: itemId });
    const item = {
      id: itemId,
      object: 'realtime.item',
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_audio', transcript: null }],
    };
    items.add(item);
    const script = this.#deps.takeScript();
    const transcript = script?.transcript ?? `(${(audio.length / config.inputFormat.rate).toFixed(1)} s of speech)`;
    emit('conversation.item.input_audio_transcription.completed', { item_id: itemId, content_index: 0, transcript });
    items.finish({ ...item, content: [{ type: 'input_audio', transcript }] });
    const turn: Turn = { audio, script };
    this.#lastTurn = turn;
    if (respond) this.#answerTurn(turn);
  }

  /**
   * Whether a response is playing or waiting to: one cancelled is not (its response.done is on the way), so
   * a client that cancels and asks again at once is answered.
   */
  get #active(): boolean {
    return this.#responses > (this.#current?.cancelled ? 1 : 0);
  }

  /** Refuses a response the client asked for while another is active; true when it did. */
  #refusedWhileActive(clientEventId: unknown): boolean {
    if (!this.#active) return false;
    this.#deps.refuse(ACTIVE_RESPONSE_CODE, ACTIVE_RESPONSE_MESSAGE, clientEventId);
    return true;
  }

  /**
   * response.create: speaks about the function outputs given since the last one, or answers the last turn.
   * Refused while a response is active, with the turn and the outputs kept for the next one.
   */
  create(event: ClientEvent): void {
    if (this.#refusedWhileActive(event.event_id)) return;
    if (this.#pendingOutputs.length > 0) {
      // docs/gateway.md, "Function tools": after the outputs, response.create makes the model speak about them.
      const outputs = this.#pendingOutputs;
      this.#pendingOutputs = [];
      const scripted = outputs.map((output) => this.#calls.get(output.callId)?.followUpText).find((text) => text !== undefined);
      this.#speak(scripted ?? outputs.map((output) => output.output).join(' '), true, event.event_id);
      return;
    }
    const turn = this.#lastTurn ?? { audio: new Int16Array(0), script: undefined };
    this.#lastTurn = undefined;
    this.#answerTurn(turn, event.event_id);
  }

  /** response.cancel */
  cancel(event: ClientEvent): void {
    if (!this.#current || this.#current.cancelled) {
      this.#deps.refuse('response_cancel_not_active', 'There is no active response to cancel.', event.event_id);
      return;
    }
    this.#current.cancelled = true;
  }

  /** conversation.item.truncate: what of an assistant audio item the client really played. */
  truncate(event: ClientEvent): void {
    const { refuse } = this.#deps;
    const itemId = typeof event.item_id === 'string' ? event.item_id : undefined;
    const audioEndMs = typeof event.audio_end_ms === 'number' ? event.audio_end_ms : undefined;
    if (!itemId || audioEndMs === undefined) {
      refuse(
        'missing_field',
        'conversation.item.truncate needs item_id and audio_end_ms.',
        event.event_id,
        itemId ? 'audio_end_ms' : 'item_id',
      );
      return;
    }
    const lengthMs = this.#assistantItems.get(itemId);
    if (lengthMs === undefined) {
      refuse('item_not_found', `No assistant audio item ${itemId}.`, event.event_id, 'item_id');
      return;
    }
    if (audioEndMs > lengthMs) {
      refuse(
        'invalid_audio_end_ms',
        `audio_end_ms ${audioEndMs} is past the item's ${Math.round(lengthMs)} ms.`,
        event.event_id,
        'audio_end_ms',
      );
      return;
    }
    appendBounded(this.truncations, { itemId, audioEndMs }, MAX_REMEMBERED_ITEMS);
    this.#deps.emit('conversation.item.truncated', {
      item_id: itemId,
      content_index: typeof event.content_index === 'number' ? event.content_index : 0,
      audio_end_ms: audioEndMs,
    });
  }

  /** The model's answer to a turn: the echo, or what the turn's script says (used once). */
  #answerTurn(turn: Turn, clientEventId?: unknown): void {
    const { script } = turn;
    turn.script = undefined;
    if (script?.functionCall) return this.#respondWithCall(script.functionCall, script.text, clientEventId);
    if (script?.text !== undefined) return this.#speak(script.text, true, clientEventId);
    this.#respond(
      turn.audio,
      `Echo of ${(turn.audio.length / this.#deps.config.inputFormat.rate).toFixed(1)} seconds.`,
      true,
      clientEventId,
    );
  }

  /** A force_message: a response turn of its own, so refused while another response is active. */
  forceMessage(text: string, interruptible: boolean, clientEventId: unknown): void {
    if (this.#refusedWhileActive(clientEventId)) return;
    this.#speak(text, interruptible, clientEventId);
  }

  /** Queues a response that says `text` as a tone whose length follows it. */
  #speak(text: string, interruptible: boolean, clientEventId?: unknown): void {
    const { options, config } = this.#deps;
    const spoken = text.slice(0, MAX_SPOKEN_CHARS);
    const ms = Math.min(options.maxToneMs, Math.max(200, spoken.length * options.toneMsPerCharacter));
    this.#respond(tone(FORCE_MESSAGE_TONE_HZ, ms, config.outputFormat.rate), spoken, interruptible, clientEventId);
  }

  /** Queues a response that speaks `audio` and says `transcript`. */
  #respond(audio: Int16Array, transcript: string, interruptible = true, clientEventId?: unknown): void {
    this.#enqueue(() => this.#stream(audio, transcript, interruptible), clientEventId);
  }

  /** Queues a response that calls a function (docs/gateway.md, "Function tools"); `followUpText` is said once its output is back. */
  #respondWithCall(call: ScriptedCall, followUpText: string | undefined, clientEventId?: unknown): void {
    this.#enqueue(() => this.#streamCall(call, followUpText), clientEventId);
  }

  /** Runs a response after those before it; a full queue refuses it (`clientEventId` caused it). */
  #enqueue(run: () => Promise<void> | void, clientEventId: unknown): void {
    if (this.#responses > MAX_QUEUED_RESPONSES) {
      this.#deps.refuse(
        ACTIVE_RESPONSE_CODE,
        `A response is playing and ${MAX_QUEUED_RESPONSES} more are waiting; this one was not queued.`,
        clientEventId,
      );
      return;
    }
    this.#responses++;
    this.#queue = this.#queue
      .then(run)
      .catch((error: unknown) => {
        this.#current = undefined;
        this.#deps.fault(error);
      })
      .finally(() => this.#responses--);
  }

  knowsCall(callId: string): boolean {
    return this.#calls.has(callId);
  }

  rememberCall(callId: string, followUpText: string | undefined): void {
    this.#calls.set(callId, { followUpText, answered: false });
    if (this.#calls.size > MAX_REMEMBERED_ITEMS) {
      const [oldest] = this.#calls.keys();
      if (oldest !== undefined) this.#calls.delete(oldest);
    }
  }

  /** Checks a function_call_output item (a call of this conversation, answered once, a string output); false after answering why not. */
  acceptOutput(item: Readonly<Record<string, unknown>>, clientEventId: unknown): boolean {
    const { refuse } = this.#deps;
    const callId = item.call_id;
    const call = typeof callId === 'string' ? this.#calls.get(callId) : undefined;
    if (typeof callId !== 'string' || !call) {
      refuse(
        'invalid_value',
        `No function call ${typeof callId === 'string' ? callId : JSON.stringify(callId)} in this conversation: item.call_id must name one.`,
        clientEventId,
        'item.call_id',
      );
      return false;
    }
    if (call.answered) {
      refuse('invalid_value', `The function call ${callId} already has its output.`, clientEventId, 'item.call_id');
      return false;
    }
    if (typeof item.output !== 'string') {
      refuse('invalid_value', 'item.output must be a string (usually JSON).', clientEventId, 'item.output');
      return false;
    }
    call.answered = true;
    this.#pendingOutputs.push({ callId, output: item.output });
    return true;
  }

  /** The tool-call flow: the call's item, its arguments (in a few deltas, then whole), and response.done listing it. */
  #streamCall(call: ScriptedCall, followUpText: string | undefined): void {
    if (this.#deps.closed()) return;
    const { emit, items } = this.#deps;
    const responseId = newId('resp');
    const callId = newId('call');
    this.rememberCall(callId, followUpText);
    const item = {
      id: newId('item'),
      object: 'realtime.item',
      type: 'function_call',
      status: 'in_progress',
      call_id: callId,
      name: call.name,
      arguments: '',
    };
    const ids = { response_id: responseId, item_id: item.id, output_index: 0, call_id: callId };
    emit('response.created', { response: { id: responseId, object: 'realtime.response', status: 'in_progress', output: [] } });
    emit('response.output_item.added', { response_id: responseId, output_index: 0, item });
    items.add(item);
    const pieceLength = Math.max(1, Math.ceil(call.arguments.length / ARGUMENT_DELTAS));
    for (let offset = 0; offset < call.arguments.length; offset += pieceLength) {
      emit('response.function_call_arguments.delta', { ...ids, delta: call.arguments.slice(offset, offset + pieceLength) });
    }
    emit('response.function_call_arguments.done', { ...ids, name: call.name, arguments: call.arguments });
    const done = { ...item, status: 'completed', arguments: call.arguments };
    emit('response.output_item.done', { response_id: responseId, output_index: 0, item: done });
    items.finish(done);
    emit('response.done', { response: { id: responseId, object: 'realtime.response', status: 'completed', output: [done] } });
  }

  async #stream(audio: Int16Array, transcript: string, interruptible: boolean): Promise<void> {
    if (this.#deps.closed()) return;
    const { emit, items, options, config } = this.#deps;
    const response: ActiveResponse = { id: newId('resp'), itemId: newId('item'), cancelled: false, interruptible };
    this.#current = response;
    const ids = { response_id: response.id, item_id: response.itemId, output_index: 0, content_index: 0 };
    const lengthMs = (audio.length / config.outputFormat.rate) * 1000;
    this.#assistantItems.set(response.itemId, lengthMs);
    if (this.#assistantItems.size > MAX_REMEMBERED_ITEMS) {
      const [oldest] = this.#assistantItems.keys();
      if (oldest !== undefined) this.#assistantItems.delete(oldest);
    }
    const item = { id: response.itemId, object: 'realtime.item', type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    emit('response.created', { response: { id: response.id, object: 'realtime.response', status: 'in_progress', output: [] } });
    emit('response.output_item.added', { response_id: response.id, output_index: 0, item });
    items.add(item);
    emit('response.content_part.added', { ...ids, part: { type: 'audio', transcript: '' } });

    const chunkSamples = Math.max(1, Math.round((options.chunkMs * config.outputFormat.rate) / 1000));
    const words = transcript.split(' ');
    const started = Date.now();
    let chunk = 0;
    for (let offset = 0; offset < audio.length && !response.cancelled && !this.#deps.closed(); offset += chunkSamples, chunk++) {
      const piece = audio.subarray(offset, offset + chunkSamples);
      emit('response.output_audio.delta', { ...ids, delta: encodeAudio(piece, config.outputFormat).toString('base64') });
      const word = words[chunk];
      if (word !== undefined) emit('response.output_audio_transcript.delta', { ...ids, delta: chunk === 0 ? word : ` ${word}` });
      const due = started + ((chunk + 1) * options.chunkMs) / options.paceFactor;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
    }
    const rest = words.slice(chunk).join(' ');
    if (rest && !response.cancelled) emit('response.output_audio_transcript.delta', { ...ids, delta: chunk === 0 ? rest : ` ${rest}` });
    const status = response.cancelled ? 'cancelled' : 'completed';
    emit('response.output_audio.done', ids);
    emit('response.output_audio_transcript.done', { ...ids, transcript });
    emit('response.content_part.done', { ...ids, part: { type: 'audio', transcript } });
    const done = { ...item, status: status === 'completed' ? 'completed' : 'incomplete', content: [{ type: 'audio', transcript }] };
    emit('response.output_item.done', { response_id: response.id, output_index: 0, item: done });
    items.finish(done);
    emit('response.done', { response: { id: response.id, object: 'realtime.response', status, output: [done] } });
    this.#current = undefined;
  }
}
