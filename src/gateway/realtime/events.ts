import { isRecord, ownValue, readNumber, readRecord, readString, type JsonRecord } from '../../lib/json.ts';

// Realtime server events, parsed from untrusted JSON into one typed union. The provider uses two names
// for some deltas (`response.output_audio.delta` and `response.audio.delta`, …): both arrive here under
// the spec's name. The spec promises only `delta` on an audio delta: item, response and content index
// are read when present and never required.

/**
 * Audio as a server event carries it, base64, decoded only when asked: a client that drops it (an answer
 * cut off, or past its bound: docs/gateway.md, "Realtime client") spends nothing on it.
 */
export class Base64Audio {
  readonly #base64: string;

  constructor(base64: string) {
    this.#base64 = base64;
  }

  /** The bytes it decodes to at most, from its length alone (padding and stray characters make it less). */
  get maxBytes(): number {
    return Math.floor((this.#base64.length * 3) / 4);
  }

  decode(): Buffer {
    return Buffer.from(this.#base64, 'base64');
  }
}

/** A function the model calls (docs/gateway.md, "Function tools"): `arguments` is the JSON text it sent. */
export interface RealtimeFunctionCall {
  callId: string;
  name: string;
  arguments: string;
  responseId: string | undefined;
  itemId: string | undefined;
}

export type RealtimeServerEvent =
  | { type: 'session.created' | 'session.updated'; session: JsonRecord }
  | { type: 'input_audio_buffer.speech_started'; itemId: string | undefined; audioStartMs: number | undefined }
  | { type: 'input_audio_buffer.speech_stopped'; itemId: string | undefined; audioEndMs: number | undefined }
  | { type: 'input_audio_buffer.committed'; itemId: string | undefined }
  | { type: 'conversation.item.input_audio_transcription.completed'; itemId: string | undefined; transcript: string }
  | { type: 'response.created'; responseId: string | undefined }
  /** An item the response adds (its id is what a truncation names). */
  | { type: 'response.output_item.added'; responseId: string | undefined; itemId: string | undefined; role: string | undefined }
  | { type: 'conversation.item.created'; itemId: string | undefined; role: string | undefined }
  | {
      type: 'response.output_audio.delta';
      responseId: string | undefined;
      itemId: string | undefined;
      contentIndex: number | undefined;
      audio: Base64Audio;
    }
  | { type: 'response.output_audio.done'; responseId: string | undefined; itemId: string | undefined }
  | { type: 'response.output_audio_transcript.delta'; responseId: string | undefined; itemId: string | undefined; delta: string }
  | { type: 'response.output_audio_transcript.done'; responseId: string | undefined; itemId: string | undefined; transcript: string }
  | { type: 'response.output_text.delta'; responseId: string | undefined; itemId: string | undefined; delta: string }
  /** `functionCalls`: the calls the response's `output` lists (a server may announce a call only here). */
  | { type: 'response.done'; responseId: string | undefined; status: string | undefined; functionCalls: RealtimeFunctionCall[] }
  | { type: 'response.function_call_arguments.done'; call: RealtimeFunctionCall }
  | { type: 'conversation.item.truncated'; itemId: string | undefined; audioEndMs: number | undefined }
  | {
      type: 'error';
      code: string | undefined;
      message: string;
      errorType: string | undefined;
      param: string | undefined;
      /** The id of the client event that caused the error, when the server says. */
      clientEventId: string | undefined;
      /** The type of that client event, when the client still knows it (set by RealtimeClient, not parsed). */
      clientEventType?: string | undefined;
    }
  | { type: 'other'; name: string; raw: JsonRecord };

const ALIASES: Record<string, string> = {
  'response.audio.delta': 'response.output_audio.delta',
  'response.audio.done': 'response.output_audio.done',
  'response.audio_transcript.delta': 'response.output_audio_transcript.delta',
  'response.audio_transcript.done': 'response.output_audio_transcript.done',
  'response.text.delta': 'response.output_text.delta',
  'response.text.done': 'response.output_text.done',
};

/**
 * A function call from an output item (`{ type: 'function_call', call_id, name, arguments }`) or an
 * arguments' done event (`{ call_id, name, arguments, item_id }`); undefined when it is not one.
 */
function functionCallOf(value: unknown, responseId: string | undefined, itemId: string | undefined): RealtimeFunctionCall | undefined {
  if (!isRecord(value)) return undefined;
  const type = readString(value, 'type');
  if (type !== 'function_call' && type !== 'response.function_call_arguments.done') return undefined;
  const callId = readString(value, 'call_id');
  const name = readString(value, 'name');
  if (callId === undefined || name === undefined) return undefined;
  return {
    callId,
    name,
    arguments: readString(value, 'arguments') ?? '',
    responseId: readString(value, 'response_id') ?? responseId,
    itemId: type === 'function_call' ? readString(value, 'id') : (readString(value, 'item_id') ?? itemId),
  };
}

/** The event, or undefined when the message is not an event at all (not JSON, no type). */
export function parseServerEvent(text: string): RealtimeServerEvent | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(raw)) return undefined;
  const name = readString(raw, 'type');
  if (name === undefined) return undefined;
  const type = ownValue(ALIASES, name) ?? name;
  const responseId = readString(raw, 'response_id');
  const itemId = readString(raw, 'item_id');
  switch (type) {
    case 'session.created':
    case 'session.updated':
      return { type, session: readRecord(raw, 'session') ?? {} };
    case 'input_audio_buffer.speech_started':
      return { type, itemId, audioStartMs: readNumber(raw, 'audio_start_ms') };
    case 'input_audio_buffer.speech_stopped':
      return { type, itemId, audioEndMs: readNumber(raw, 'audio_end_ms') };
    case 'input_audio_buffer.committed':
      return { type, itemId };
    case 'conversation.item.input_audio_transcription.completed':
      return { type, itemId, transcript: readString(raw, 'transcript') ?? '' };
    case 'response.created':
      return { type, responseId: readString(readRecord(raw, 'response'), 'id') ?? responseId };
    case 'response.output_item.added': {
      const item = readRecord(raw, 'item');
      return { type, responseId, itemId: readString(item, 'id') ?? itemId, role: readString(item, 'role') };
    }
    case 'conversation.item.created': {
      const item = readRecord(raw, 'item');
      return { type, itemId: readString(item, 'id') ?? itemId, role: readString(item, 'role') };
    }
    case 'response.output_audio.delta': {
      const delta = readString(raw, 'delta');
      if (delta === undefined) return { type: 'other', name, raw };
      return { type, responseId, itemId, contentIndex: readNumber(raw, 'content_index'), audio: new Base64Audio(delta) };
    }
    case 'response.output_audio.done':
      return { type, responseId, itemId };
    case 'response.output_audio_transcript.delta':
    case 'response.output_text.delta':
      return { type, responseId, itemId, delta: readString(raw, 'delta') ?? '' };
    case 'response.output_audio_transcript.done':
      return { type, responseId, itemId, transcript: readString(raw, 'transcript') ?? '' };
    case 'response.done': {
      const response = readRecord(raw, 'response');
      const id = readString(response, 'id') ?? responseId;
      const output = response?.output;
      const functionCalls = Array.isArray(output)
        ? output.map((item) => functionCallOf(item, id, undefined)).filter((call) => call !== undefined)
        : [];
      return { type, responseId: id, status: readString(response, 'status'), functionCalls };
    }
    case 'response.function_call_arguments.done': {
      const call = functionCallOf(raw, responseId, itemId);
      return call ? { type, call } : { type: 'other', name, raw };
    }
    case 'conversation.item.truncated':
      return { type, itemId, audioEndMs: readNumber(raw, 'audio_end_ms') };
    case 'error': {
      // The common shape is `error: {type, code, message, param, event_id}`; the native layer's style, a
      // string `error` with the code at the top level, is read too.
      const error = readRecord(raw, 'error');
      return {
        type,
        code: readString(error, 'code') ?? readString(raw, 'code'),
        message:
          readString(error, 'message') ??
          readString(raw, 'error') ??
          readString(raw, 'message') ??
          'The realtime session reported an error.',
        errorType: readString(error, 'type'),
        param: readString(error, 'param'),
        clientEventId: readString(error, 'event_id'),
      };
    }
    default:
      return { type: 'other', name, raw };
  }
}
