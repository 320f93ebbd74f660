import { randomBytes } from 'node:crypto';
import { isRecord } from '../../lib/json.ts';
import type { Logger } from '../../lib/log.ts';
import { appendBounded, BoundedJournal, type JournalLimits } from '../journal.ts';
import { DEFAULT_AUDIO_FORMAT, decodeAudio, encodeAudio, readAudioFormat, type AudioFormat } from './audio-format.ts';
import { DEFAULT_VAD, EnergyVad, VAD_WINDOW_MS, type VadSettings } from './vad.ts';
import { Conversation, type ConversationItem, type ConversationLimits } from './conversation.ts';
import type { ScriptedCall, TurnScript } from './script.ts';
import { knownVoice, unknownVoiceMessage } from '../voices.ts';

// One realtime session: `session.update` first, then audio in, and an echo model that answers each user
// turn by playing the user's own audio back, unless a script (script.ts) says what the turn is heard as
// and how it is answered: a line of text, or a call of a function tool whose output the model then
// speaks. Events follow the realtime API's shapes (event ids, item ids, response ids, output and content
// indexes), and every item is announced as the ecosystem's SDKs read it (added, then done).

export interface RealtimeOptions {
  /** Audio is streamed this many times faster than real time (clients must buffer). */
  paceFactor: number;
  /** Milliseconds of audio per output delta. */
  chunkMs: number;
  /** A force_message is spoken as a tone this long per character of text. */
  toneMsPerCharacter: number;
  maxToneMs: number;
  /** A closed session stays in `sessions` (for tests to inspect) this long, until the next connection. */
  closedSessionRetentionMs: number;
}

export const DEFAULT_REALTIME_OPTIONS: RealtimeOptions = { paceFactor: 1.25, chunkMs: 100, toneMsPerCharacter: 60, maxToneMs: 5000, closedSessionRetentionMs: 60_000 };
/** Every line the model speaks from text (a force_message, a scripted answer, a function's output) is a tone of this pitch. */
export const FORCE_MESSAGE_TONE_HZ = 880;

/**
 * The journals keep what tests and demos look at, not the audio itself: of a run of audio events of
 * one type only the first is kept; an event over JOURNALED_EVENT_MAX_BYTES is kept by its type and id
 * alone; and each journal keeps its newest entries within these bounds.
 */
const JOURNAL_LIMITS: JournalLimits = { maxEntries: 5000, maxBytes: 1024 * 1024 };
const JOURNALED_EVENT_MAX_BYTES = 16 * 1024;
/** In an event journaled by its type and id alone, each is kept to this many characters. */
const JOURNALED_NAME_MAX_CHARS = 256;
const AUDIO_EVENTS: ReadonlySet<unknown> = new Set(['input_audio_buffer.append', 'response.output_audio.delta']);

/** Journals `event`, whose JSON text is `size` characters long. */
function journal(journal: BoundedJournal<JournaledEvent>, event: Readonly<Record<string, unknown>>, size: number): void {
  if (AUDIO_EVENTS.has(event.type) && journal.entries.at(-1)?.event.type === event.type) return;
  if (size <= JOURNALED_EVENT_MAX_BYTES) {
    journal.append({ at: Date.now(), event }, size);
    return;
  }
  const name = (value: unknown) => (typeof value === 'string' ? value.slice(0, JOURNALED_NAME_MAX_CHARS) : undefined);
  const stub = { type: name(event.type), ...(name(event.event_id) === undefined ? {} : { event_id: name(event.event_id) }) };
  journal.append({ at: Date.now(), event: stub }, JSON.stringify(stub).length);
}

export interface JournaledEvent {
  at: number;
  event: Readonly<Record<string, unknown>>;
}

/** Sends one event, already written as JSON. */
type Send = (text: string) => void;

interface ActiveResponse {
  id: string;
  itemId: string;
  cancelled: boolean;
  /** A force_message with `interruptible: false`: the caller's audio is dropped while it plays. */
  interruptible: boolean;
}

function id(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The emulator's bounds on turn_detection (the spec shows none): enough for any real use, and no more audio kept. */
const MAX_VAD_MS = 10_000;
/**
 * The most input audio a session holds uncommitted, at any rate (the spec gives no bound): in manual
 * mode what does not fit is dropped, with server VAD a turn keeps its newest part; either way the client
 * hears of it in an `input_audio_buffer_full` error.
 */
export const MAX_BUFFERED_AUDIO_MS = 180_000;
/** Responses waiting behind the one playing: more is answered `conversation_already_has_active_response`. */
const MAX_QUEUED_RESPONSES = 8;
/** A force_message is spoken in at most a few seconds: longer text is refused rather than kept and echoed. */
const MAX_FORCE_MESSAGE_CHARS = 4096;
/** Assistant items remembered for truncation, and truncations kept for tests: the newest this many. */
const MAX_REMEMBERED_ITEMS = 1000;
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

/** The conversation's items kept for conversation.item.retrieve: the newest, within these bounds. */
const CONVERSATION_LIMITS: ConversationLimits = { maxItems: MAX_REMEMBERED_ITEMS, maxChars: 1024 * 1024 };

function tone(hz: number, ms: number, rate: number): Int16Array {
  const samples = new Int16Array(Math.round((ms * rate) / 1000));
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * hz * i) / rate));
  return samples;
}

/** The voice of a session that names none (the emulator speaks tones: the voice is only reported). */
export const DEFAULT_REALTIME_VOICE = 'eve';
/** The longest instructions and the most tools a session keeps (the spec gives no bound; a session holds them for hours). */
export const MAX_INSTRUCTIONS_CHARS = 32_768;
export const MAX_TOOLS = 128;
export const MAX_TOOLS_JSON_CHARS = 256 * 1024;
/** A function name as the widely used realtime protocol allows it. */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

type Reading<T> = { ok: true; value: T } | { ok: false; param: string; message: string };

/** `session.voice`: undefined keeps `current`; a voice of the list in any letter case, kept as the list spells it. */
function readVoice(value: unknown, current: string): Reading<string> {
  if (value === undefined) return { ok: true, value: current };
  const param = 'session.voice';
  const voice = typeof value === 'string' ? knownVoice(value) : undefined;
  if (voice === undefined) return { ok: false, param, message: unknownVoiceMessage(param, typeof value === 'string' ? value : JSON.stringify(value)) };
  return { ok: true, value: voice };
}

function readInstructions(value: unknown, current: string): Reading<string> {
  if (value === undefined) return { ok: true, value: current };
  const param = 'session.instructions';
  if (typeof value !== 'string') return { ok: false, param, message: `${param} must be a string.` };
  if (value.length > MAX_INSTRUCTIONS_CHARS) return { ok: false, param, message: `${param} may be at most ${MAX_INSTRUCTIONS_CHARS} characters.` };
  return { ok: true, value };
}

/**
 * `session.tools`: undefined keeps `current`. Each tool is an object with a `type` (the native layer passes
 * new tool types on, so any is kept); a `function` tool needs a name of its own. Kept as sent.
 */
function readTools(value: unknown, current: readonly Readonly<Record<string, unknown>>[]): Reading<readonly Readonly<Record<string, unknown>>[]> {
  if (value === undefined) return { ok: true, value: current };
  const param = 'session.tools';
  if (!Array.isArray(value)) return { ok: false, param, message: `${param} must be an array.` };
  if (value.length > MAX_TOOLS) return { ok: false, param, message: `${param} may hold at most ${MAX_TOOLS} tools.` };
  if (JSON.stringify(value).length > MAX_TOOLS_JSON_CHARS) return { ok: false, param, message: `${param} may be at most ${MAX_TOOLS_JSON_CHARS} characters of JSON.` };
  const tools: Readonly<Record<string, unknown>>[] = [];
  const names = new Set<string>();
  for (const [index, tool] of value.entries()) {
    const at = `${param}[${index}]`;
    if (!isRecord(tool) || typeof tool.type !== 'string' || tool.type === '') return { ok: false, param: `${at}.type`, message: `${at} must be an object with a type.` };
    if (tool.type === 'function') {
      if (typeof tool.name !== 'string' || !FUNCTION_NAME.test(tool.name)) return { ok: false, param: `${at}.name`, message: `${at}.name must be 1 to 64 letters, digits, _ or -.` };
      if (names.has(tool.name)) return { ok: false, param: `${at}.name`, message: `${at}.name: another function tool is already named ${tool.name}.` };
      names.add(tool.name);
    }
    tools.push(tool);
  }
  return { ok: true, value: tools };
}

export class RealtimeSession {
  readonly id = id('sess');
  readonly model: string;
  readonly keyId: string;
  readonly #clientJournal = new BoundedJournal<JournaledEvent>(JOURNAL_LIMITS);
  readonly #serverJournal = new BoundedJournal<JournaledEvent>(JOURNAL_LIMITS);
  /** The client's events, newest last, within the journal's bounds. */
  readonly clientEvents: JournaledEvent[] = this.#clientJournal.entries;
  /** The events sent, newest last, within the journal's bounds. */
  readonly serverEvents: JournaledEvent[] = this.#serverJournal.entries;
  /** Truncations the client asked for: what it says was really played. */
  readonly truncations: { itemId: string; audioEndMs: number }[] = [];
  readonly #send: Send;
  readonly #options: RealtimeOptions;
  #configured = false;
  #inputFormat: AudioFormat = DEFAULT_AUDIO_FORMAT;
  #outputFormat: AudioFormat = DEFAULT_AUDIO_FORMAT;
  #voice: string = DEFAULT_REALTIME_VOICE;
  #instructions = '';
  #tools: readonly Readonly<Record<string, unknown>>[] = [];
  #vad: EnergyVad | undefined = new EnergyVad(DEFAULT_VAD);
  #vadSettings: VadSettings = DEFAULT_VAD;
  /** Input not yet committed, starting at #bufferStartMs of the session's input timeline. */
  #buffer: Int16Array[] = [];
  #bufferSamples = 0;
  #bufferStartMs = 0;
  /** Samples that do not yet fill a whole VAD window. */
  #window = new Int16Array(0);
  #turnStartMs = 0;
  /** Whether the turn in progress (server VAD) outgrew the buffer and the client was told. */
  #turnOverflowReported = false;
  /** The last user turn, until a response.create answers it (manual mode). */
  #lastTurn: Turn | undefined;
  readonly #takeScript: (session: RealtimeSession) => TurnScript | undefined;
  /** The function calls of the conversation by call_id (the newest MAX_REMEMBERED_ITEMS). */
  readonly #calls = new Map<string, FunctionCall>();
  /** Function outputs the client gave since the last response.create: the next one speaks them. */
  #pendingOutputs: { callId: string; output: string }[] = [];
  readonly #conversation = new Conversation(CONVERSATION_LIMITS);
  #pendingUserItem: string | undefined;
  /** Audio items the assistant produced, by id, for truncation. */
  readonly #assistantItems = new Map<string, number>();
  #current: ActiveResponse | undefined;
  #queue: Promise<void> = Promise.resolve();
  /** Responses queued or playing. */
  #responses = 0;
  #closedAt: number | undefined;

  readonly #log: Logger;

  /** `takeScript` gives the script of each user turn, if one was posted (script.ts). */
  constructor(model: string, keyId: string, send: Send, options: RealtimeOptions, log: Logger, takeScript: (session: RealtimeSession) => TurnScript | undefined = () => undefined) {
    this.#takeScript = takeScript;
    this.model = model;
    this.keyId = keyId;
    this.#send = send;
    this.#options = options;
    this.#log = log;
  }

  emit(type: string, fields: Record<string, unknown> = {}): void {
    if (this.#closedAt !== undefined) return;
    const event = { event_id: id('event'), type, ...fields };
    const text = JSON.stringify(event);
    journal(this.#serverJournal, event, text.length);
    this.#send(text);
  }

  #error(code: string, message: string, clientEventId?: unknown, param: string | null = null): void {
    this.emit('error', { error: { type: 'invalid_request_error', code, message, param, event_id: typeof clientEventId === 'string' ? clientEventId : null } });
  }

  /** When the session ended, or undefined while it is open. */
  get closedAt(): number | undefined {
    return this.#closedAt;
  }

  /** Ends the session; its audio goes at once, its journals stay while the session is retained for tests. */
  close(): void {
    this.#closedAt ??= Date.now();
    if (this.#current) this.#current.cancelled = true;
    this.#buffer = [];
    this.#bufferSamples = 0;
    this.#window = new Int16Array(0);
    this.#lastTurn = undefined;
    this.#pendingOutputs = [];
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
    this.emit('error', { error: { type: 'server_error', code: 'server_error', message: 'The emulator failed to handle an event.', param: null, event_id: null } });
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
    journal(this.#clientJournal, event, text.length);
    if (!this.#configured && event.type !== 'session.update') {
      this.#error('session_not_configured', 'The first event must be session.update.', event.event_id);
      return;
    }
    switch (event.type) {
      case 'session.update':
        return this.#sessionUpdate(event);
      case 'input_audio_buffer.append':
        return this.#append(event);
      case 'input_audio_buffer.commit':
        return this.#commit(event);
      case 'input_audio_buffer.clear':
        this.#trimBuffer(this.#bufferEndMs());
        this.#window = new Int16Array(0);
        return this.emit('input_audio_buffer.cleared');
      case 'conversation.item.create':
        return this.#itemCreate(event);
      case 'conversation.item.delete':
        return this.#deleteItem(event);
      case 'conversation.item.retrieve':
        return this.#retrieveItem(event);
      case 'conversation.item.truncate':
        return this.#truncate(event);
      case 'response.create':
        return this.#respondToLastTurn(event);
      case 'response.cancel':
        return this.#cancel(event);
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
    const audio = isRecord(session.audio) ? session.audio : {};
    const formatOf = (direction: 'input' | 'output', current: AudioFormat) => {
      const settings = audio[direction];
      return readAudioFormat(isRecord(settings) ? settings.format : undefined, `session.audio.${direction}.format`, current);
    };
    const input = formatOf('input', this.#inputFormat);
    const output = formatOf('output', this.#outputFormat);
    const detection = this.#readTurnDetection(session);
    const voice = readVoice(session.voice, this.#voice);
    const instructions = readInstructions(session.instructions, this.#instructions);
    const tools = readTools(session.tools, this.#tools);
    // All or nothing: a bad value leaves every previous setting in force.
    const refuse = (problem: { param: string; message: string }) => this.#error('invalid_value', problem.message, event.event_id, problem.param);
    if (!input.ok) return refuse(input);
    if (!output.ok) return refuse(output);
    if (!detection.ok) return refuse(detection);
    if (!voice.ok) return refuse(voice);
    if (!instructions.ok) return refuse(instructions);
    if (!tools.ok) return refuse(tools);
    this.#inputFormat = input.format;
    this.#outputFormat = output.format;
    this.#voice = voice.value;
    this.#instructions = instructions.value;
    this.#tools = tools.value;
    if (detection.settings === null) {
      this.#vad = undefined;
      this.#window = new Int16Array(0);
    } else if (detection.settings !== undefined) {
      this.#vadSettings = detection.settings;
      // The VAD keeps its place in the input: restarting its clock would misplace every later turn.
      if (this.#vad) this.#vad.settings = this.#vadSettings;
      else this.#vad = new EnergyVad(this.#vadSettings, this.#bufferEndMs());
    }
    if (!this.#configured) {
      this.#configured = true;
      this.emit('session.created', { session: this.#describe() });
      this.emit('conversation.created', { conversation: { id: id('conv'), object: 'realtime.conversation' } });
    }
    this.emit('session.updated', { session: this.#describe() });
  }

  /** The whole session as it now stands, as session.created and session.updated describe it. */
  #describe(): Record<string, unknown> {
    return {
      id: this.id,
      object: 'realtime.session',
      model: this.model,
      voice: this.#voice,
      instructions: this.#instructions,
      turn_detection: this.#vad ? { type: 'server_vad', threshold: this.#vadSettings.threshold, silence_duration_ms: this.#vadSettings.silenceDurationMs, prefix_padding_ms: this.#vadSettings.prefixPaddingMs } : null,
      audio: { input: { format: { ...this.#inputFormat } }, output: { format: { ...this.#outputFormat } } },
      tools: this.#tools,
    };
  }

  /** Whether the session declared a function tool of this name. */
  declaresFunction(name: string): boolean {
    return this.#tools.some((tool) => tool.type === 'function' && tool.name === name);
  }

  /** The names of the function tools the session declared. */
  get functionNames(): string[] {
    return this.#tools.flatMap((tool) => (tool.type === 'function' && typeof tool.name === 'string' ? [tool.name] : []));
  }

  /** `turn_detection`: undefined keeps the current mode, null is manual mode. */
  #readTurnDetection(session: Readonly<Record<string, unknown>>): { ok: true; settings: VadSettings | null | undefined } | { ok: false; param: string; message: string } {
    const detection = session.turn_detection;
    if (detection === undefined || detection === null) return { ok: true, settings: detection };
    const param = 'session.turn_detection';
    if (!isRecord(detection)) return { ok: false, param, message: `${param} must be an object or null.` };
    if (detection.type !== undefined && detection.type !== 'server_vad') return { ok: false, param: `${param}.type`, message: `${param}.type must be server_vad.` };
    const threshold = detection.threshold ?? DEFAULT_VAD.threshold;
    if (typeof threshold !== 'number' || threshold < 0 || threshold > 1) return { ok: false, param: `${param}.threshold`, message: `${param}.threshold must be a number from 0 to 1.` };
    const silence = detection.silence_duration_ms ?? DEFAULT_VAD.silenceDurationMs;
    const prefix = detection.prefix_padding_ms ?? DEFAULT_VAD.prefixPaddingMs;
    const isDuration = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_VAD_MS;
    const durationProblem = (key: string) => ({ ok: false as const, param: `${param}.${key}`, message: `${param}.${key} must be a whole number of milliseconds from 0 to ${MAX_VAD_MS}.` });
    if (!isDuration(silence)) return durationProblem('silence_duration_ms');
    if (!isDuration(prefix)) return durationProblem('prefix_padding_ms');
    return { ok: true, settings: { threshold, silenceDurationMs: silence, prefixPaddingMs: prefix } };
  }

  #bufferEndMs(): number {
    return this.#bufferStartMs + (this.#bufferSamples / this.#inputFormat.rate) * 1000;
  }

  /** The buffered audio between two points of the input timeline. */
  #bufferedAudio(fromMs: number, toMs: number): Int16Array {
    const all = new Int16Array(this.#bufferSamples);
    let offset = 0;
    for (const part of this.#buffer) {
      all.set(part, offset);
      offset += part.length;
    }
    const toSample = (ms: number) => Math.min(all.length, Math.max(0, Math.round(((ms - this.#bufferStartMs) * this.#inputFormat.rate) / 1000)));
    return all.slice(toSample(fromMs), Math.max(toSample(fromMs), toSample(toMs)));
  }

  /** Forgets the input before `untilMs`: whole appended parts at once, so it costs little however often it runs. */
  #trimBuffer(untilMs: number): void {
    let drop = Math.min(this.#bufferSamples, Math.max(0, Math.round(((untilMs - this.#bufferStartMs) * this.#inputFormat.rate) / 1000)));
    this.#bufferSamples -= drop;
    let whole = 0;
    while (whole < this.#buffer.length && this.#buffer[whole]!.length <= drop) drop -= this.#buffer[whole++]!.length;
    this.#buffer.splice(0, whole);
    // A copy, so the dropped head's memory goes with it.
    if (drop > 0) this.#buffer[0] = this.#buffer[0]!.slice(drop);
    this.#bufferStartMs = untilMs;
  }

  #maxBufferedSamples(): number {
    return Math.round((MAX_BUFFERED_AUDIO_MS * this.#inputFormat.rate) / 1000);
  }

  #bufferFull(clientEventId: unknown, dropped: string): void {
    this.#error('input_audio_buffer_full', `The input audio buffer holds at most ${MAX_BUFFERED_AUDIO_MS / 1000} s of uncommitted audio; ${dropped}.`, clientEventId, 'audio');
  }

  #append(event: Readonly<Record<string, unknown>>): void {
    const text = typeof event.audio === 'string' ? event.audio : undefined;
    if (text === undefined || !BASE64.test(text) || text.length % 4 !== 0) {
      this.#error('invalid_audio', `input_audio_buffer.append needs audio: base64 ${this.#inputFormat.type}.`, event.event_id, 'audio');
      return;
    }
    // docs/gateway.md, "force_message": while a force_message with interruptible false plays, the caller's audio is dropped.
    if (this.#current && !this.#current.interruptible && !this.#current.cancelled) return;
    let samples = decodeAudio(Buffer.from(text, 'base64'), this.#inputFormat);
    if (!this.#vad) {
      // Manual mode: what does not fit waits for no commit; it is dropped, and the client is told.
      const room = Math.max(0, this.#maxBufferedSamples() - this.#bufferSamples);
      if (samples.length > room) {
        this.#bufferFull(event.event_id, room === 0 ? 'this audio was dropped: commit or clear the buffer' : 'the end of this audio was dropped');
        samples = samples.slice(0, room);
      }
      if (samples.length === 0) return;
      this.#buffer.push(samples);
      this.#bufferSamples += samples.length;
      return;
    }
    this.#buffer.push(samples);
    this.#bufferSamples += samples.length;
    const windowSamples = Math.round((this.#inputFormat.rate * VAD_WINDOW_MS) / 1000);
    let pending = new Int16Array(this.#window.length + samples.length);
    pending.set(this.#window);
    pending.set(samples, this.#window.length);
    while (pending.length >= windowSamples) {
      const verdict = this.#vad.window(pending.subarray(0, windowSamples), VAD_WINDOW_MS);
      pending = pending.subarray(windowSamples);
      if (verdict?.type === 'speech_started') {
        this.#turnOverflowReported = false;
        this.#turnStartMs = Math.max(this.#bufferStartMs, verdict.atMs - this.#vadSettings.prefixPaddingMs);
        this.#pendingUserItem = id('item');
        this.emit('input_audio_buffer.speech_started', { audio_start_ms: this.#turnStartMs, item_id: this.#pendingUserItem });
      } else if (verdict?.type === 'speech_stopped') {
        this.emit('input_audio_buffer.speech_stopped', { audio_end_ms: verdict.atMs, item_id: this.#pendingUserItem });
        // The turn is the speech itself: from the prefix padding to the last voiced window.
        this.#commitTurn(this.#bufferedAudio(this.#turnStartMs, verdict.atMs - this.#vadSettings.silenceDurationMs), true);
        this.#trimBuffer(verdict.atMs);
      }
    }
    this.#window = Int16Array.from(pending);
    if (this.#vad.speaking && this.#bufferSamples > this.#maxBufferedSamples()) {
      // A turn that never pauses keeps its newest part; the client hears of it once per turn.
      this.#trimBuffer(this.#bufferEndMs() - MAX_BUFFERED_AUDIO_MS);
      this.#turnStartMs = Math.max(this.#turnStartMs, this.#bufferStartMs);
      if (!this.#turnOverflowReported) this.#bufferFull(event.event_id, 'this turn keeps only its newest audio');
      this.#turnOverflowReported = true;
    }
    if (!this.#vad.speaking) {
      // Between turns only the prefix padding can still matter; silence fed for hours must not pile up.
      const processedEndMs = this.#bufferEndMs() - (this.#window.length / this.#inputFormat.rate) * 1000;
      this.#trimBuffer(Math.max(this.#bufferStartMs, processedEndMs - this.#vadSettings.prefixPaddingMs));
    }
  }

  #commitTurn(audio: Int16Array, respond: boolean): void {
    const itemId = this.#pendingUserItem ?? id('item');
    this.#pendingUserItem = undefined;
    this.emit('input_audio_buffer.committed', { previous_item_id: this.#conversation.lastId, item_id: itemId });
    const item = { id: itemId, object: 'realtime.item', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] };
    this.#addItem(item);
    const script = this.#takeScript(this);
    const transcript = script?.transcript ?? `(${(audio.length / this.#inputFormat.rate).toFixed(1)} s of speech)`;
    this.emit('conversation.item.input_audio_transcription.completed', { item_id: itemId, content_index: 0, transcript });
    this.#finishItem({ ...item, content: [{ type: 'input_audio', transcript }] });
    const turn: Turn = { audio, script };
    this.#lastTurn = turn;
    if (respond) this.#answerTurn(turn);
  }

  #commit(event: Readonly<Record<string, unknown>>): void {
    if (this.#vad) {
      this.#error('commit_in_server_vad', 'With server VAD the server commits turns; input_audio_buffer.commit is for manual mode.', event.event_id);
      return;
    }
    if (this.#bufferSamples === 0) {
      this.#error('input_audio_buffer_commit_empty', 'The input audio buffer is empty.', event.event_id);
      return;
    }
    const endMs = this.#bufferEndMs();
    this.#commitTurn(this.#bufferedAudio(this.#bufferStartMs, endMs), false);
    this.#trimBuffer(endMs);
  }

  #respondToLastTurn(event: Readonly<Record<string, unknown>>): void {
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

  /** The model's answer to a turn: the echo, or what the turn's script says (used once). */
  #answerTurn(turn: Turn, clientEventId?: unknown): void {
    const { script } = turn;
    turn.script = undefined;
    if (script?.functionCall) return this.#respondWithCall(script.functionCall, script.text, clientEventId);
    if (script?.text !== undefined) return this.#speak(script.text, true, clientEventId);
    this.#respond(turn.audio, `Echo of ${(turn.audio.length / this.#inputFormat.rate).toFixed(1)} seconds.`, true, clientEventId);
  }

  /** Queues a response that says `text` as a tone whose length follows it. */
  #speak(text: string, interruptible: boolean, clientEventId?: unknown): void {
    const spoken = text.slice(0, MAX_SPOKEN_CHARS);
    const ms = Math.min(this.#options.maxToneMs, Math.max(200, spoken.length * this.#options.toneMsPerCharacter));
    this.#respond(tone(FORCE_MESSAGE_TONE_HZ, ms, this.#outputFormat.rate), spoken, interruptible, clientEventId);
  }

  #itemCreate(event: Readonly<Record<string, unknown>>): void {
    const item = isRecord(event.item) ? event.item : undefined;
    if (!item || typeof item.type !== 'string') {
      this.#error('missing_item', 'conversation.item.create needs an item with a type.', event.event_id, 'item');
      return;
    }
    if (item.type !== 'force_message') {
      if (item.id !== undefined && (typeof item.id !== 'string' || item.id === '')) {
        this.#error('invalid_value', 'item.id must be a non-empty string when it is given.', event.event_id, 'item.id');
        return;
      }
      if (typeof item.id === 'string' && this.#conversation.has(item.id)) {
        this.#error('invalid_value', `The conversation already has an item ${item.id}.`, event.event_id, 'item.id');
        return;
      }
      if (item.type === 'function_call_output' && !this.#acceptOutput(item, event.event_id)) return;
      // A call the client writes into the conversation (history it restores) may be answered like the model's own.
      if (item.type === 'function_call' && typeof item.call_id === 'string' && !this.#calls.has(item.call_id)) this.#rememberCall(item.call_id, undefined);
      const created = { ...item, id: typeof item.id === 'string' ? item.id : id('item'), object: 'realtime.item', status: typeof item.status === 'string' ? item.status : 'completed' };
      this.#addItem(created);
      this.#finishItem(created);
      return;
    }
    const content = Array.isArray(item.content) ? item.content : [];
    const text = content.map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join(' ').trim();
    if (item.role !== 'assistant' || text === '') {
      this.#error('invalid_force_message', 'A force_message needs role assistant and output_text content.', event.event_id, 'item');
      return;
    }
    if (text.length > MAX_FORCE_MESSAGE_CHARS) {
      this.#error('invalid_force_message', `A force_message's text may be at most ${MAX_FORCE_MESSAGE_CHARS} characters.`, event.event_id, 'item.content');
      return;
    }
    this.#speak(text, item.interruptible !== false, event.event_id);
  }

  /** A new item at the end of the conversation: conversation.item.created (older clients) and conversation.item.added. */
  #addItem(item: ConversationItem): void {
    const previous = this.#conversation.add(item);
    this.emit('conversation.item.created', { previous_item_id: previous, item });
    this.emit('conversation.item.added', { previous_item_id: previous, item });
  }

  /** The item in its final state (a user turn with its transcript, an answer with its content): conversation.item.done. */
  #finishItem(item: ConversationItem): void {
    const previous = this.#conversation.update(item);
    this.emit('conversation.item.done', { previous_item_id: previous ?? null, item });
  }

  /** The item id a client event names, or undefined after answering that it names none. */
  #itemIdOf(event: Readonly<Record<string, unknown>>): string | undefined {
    if (typeof event.item_id === 'string' && event.item_id !== '') return event.item_id;
    this.#error('missing_field', `${String(event.type)} needs an item_id.`, event.event_id, 'item_id');
    return undefined;
  }

  #itemNotFound(event: Readonly<Record<string, unknown>>, itemId: string): void {
    this.#error('item_not_found', `The conversation has no item ${itemId}.`, event.event_id, 'item_id');
  }

  #retrieveItem(event: Readonly<Record<string, unknown>>): void {
    const itemId = this.#itemIdOf(event);
    if (itemId === undefined) return;
    const found = this.#conversation.get(itemId);
    if (!found) return this.#itemNotFound(event, itemId);
    this.emit('conversation.item.retrieved', { item: found.item });
  }

  #deleteItem(event: Readonly<Record<string, unknown>>): void {
    const itemId = this.#itemIdOf(event);
    if (itemId === undefined) return;
    if (!this.#conversation.delete(itemId)) return this.#itemNotFound(event, itemId);
    this.emit('conversation.item.deleted', { item_id: itemId });
  }

  #truncate(event: Readonly<Record<string, unknown>>): void {
    const itemId = typeof event.item_id === 'string' ? event.item_id : undefined;
    const audioEndMs = typeof event.audio_end_ms === 'number' ? event.audio_end_ms : undefined;
    if (!itemId || audioEndMs === undefined) {
      this.#error('missing_field', 'conversation.item.truncate needs item_id and audio_end_ms.', event.event_id, itemId ? 'audio_end_ms' : 'item_id');
      return;
    }
    const lengthMs = this.#assistantItems.get(itemId);
    if (lengthMs === undefined) {
      this.#error('item_not_found', `No assistant audio item ${itemId}.`, event.event_id, 'item_id');
      return;
    }
    if (audioEndMs > lengthMs) {
      this.#error('invalid_audio_end_ms', `audio_end_ms ${audioEndMs} is past the item's ${Math.round(lengthMs)} ms.`, event.event_id, 'audio_end_ms');
      return;
    }
    appendBounded(this.truncations, { itemId, audioEndMs }, MAX_REMEMBERED_ITEMS);
    this.emit('conversation.item.truncated', { item_id: itemId, content_index: typeof event.content_index === 'number' ? event.content_index : 0, audio_end_ms: audioEndMs });
  }

  #cancel(event: Readonly<Record<string, unknown>>): void {
    if (!this.#current || this.#current.cancelled) {
      this.#error('response_cancel_not_active', 'There is no active response to cancel.', event.event_id);
      return;
    }
    this.#current.cancelled = true;
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
      this.#error('conversation_already_has_active_response', `A response is playing and ${MAX_QUEUED_RESPONSES} more are waiting; this one was not queued.`, clientEventId);
      return;
    }
    this.#responses++;
    this.#queue = this.#queue
      .then(run)
      .catch((error: unknown) => {
        this.#current = undefined;
        this.#fault(error);
      })
      .finally(() => this.#responses--);
  }

  #rememberCall(callId: string, followUpText: string | undefined): void {
    this.#calls.set(callId, { followUpText, answered: false });
    if (this.#calls.size > MAX_REMEMBERED_ITEMS) {
      const [oldest] = this.#calls.keys();
      if (oldest !== undefined) this.#calls.delete(oldest);
    }
  }

  /** Checks a function_call_output item (a call of this conversation, answered once, a string output); false after answering why not. */
  #acceptOutput(item: Readonly<Record<string, unknown>>, clientEventId: unknown): boolean {
    const callId = item.call_id;
    const call = typeof callId === 'string' ? this.#calls.get(callId) : undefined;
    if (typeof callId !== 'string' || !call) {
      this.#error('invalid_value', `No function call ${typeof callId === 'string' ? callId : JSON.stringify(callId)} in this conversation: item.call_id must name one.`, clientEventId, 'item.call_id');
      return false;
    }
    if (call.answered) {
      this.#error('invalid_value', `The function call ${callId} already has its output.`, clientEventId, 'item.call_id');
      return false;
    }
    if (typeof item.output !== 'string') {
      this.#error('invalid_value', 'item.output must be a string (usually JSON).', clientEventId, 'item.output');
      return false;
    }
    call.answered = true;
    this.#pendingOutputs.push({ callId, output: item.output });
    return true;
  }

  /** The tool-call flow: the call's item, its arguments (in a few deltas, then whole), and response.done listing it. */
  #streamCall(call: ScriptedCall, followUpText: string | undefined): void {
    if (this.#closedAt !== undefined) return;
    const responseId = id('resp');
    const callId = id('call');
    this.#rememberCall(callId, followUpText);
    const item = { id: id('item'), object: 'realtime.item', type: 'function_call', status: 'in_progress', call_id: callId, name: call.name, arguments: '' };
    const ids = { response_id: responseId, item_id: item.id, output_index: 0, call_id: callId };
    this.emit('response.created', { response: { id: responseId, object: 'realtime.response', status: 'in_progress', output: [] } });
    this.emit('response.output_item.added', { response_id: responseId, output_index: 0, item });
    this.#addItem(item);
    const pieceLength = Math.max(1, Math.ceil(call.arguments.length / ARGUMENT_DELTAS));
    for (let offset = 0; offset < call.arguments.length; offset += pieceLength) {
      this.emit('response.function_call_arguments.delta', { ...ids, delta: call.arguments.slice(offset, offset + pieceLength) });
    }
    this.emit('response.function_call_arguments.done', { ...ids, name: call.name, arguments: call.arguments });
    const done = { ...item, status: 'completed', arguments: call.arguments };
    this.emit('response.output_item.done', { response_id: responseId, output_index: 0, item: done });
    this.#finishItem(done);
    this.emit('response.done', { response: { id: responseId, object: 'realtime.response', status: 'completed', output: [done] } });
  }

  async #stream(audio: Int16Array, transcript: string, interruptible: boolean): Promise<void> {
    if (this.#closedAt !== undefined) return;
    const response: ActiveResponse = { id: id('resp'), itemId: id('item'), cancelled: false, interruptible };
    this.#current = response;
    const ids = { response_id: response.id, item_id: response.itemId, output_index: 0, content_index: 0 };
    const lengthMs = (audio.length / this.#outputFormat.rate) * 1000;
    this.#assistantItems.set(response.itemId, lengthMs);
    if (this.#assistantItems.size > MAX_REMEMBERED_ITEMS) {
      const [oldest] = this.#assistantItems.keys();
      if (oldest !== undefined) this.#assistantItems.delete(oldest);
    }
    const item = { id: response.itemId, object: 'realtime.item', type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    this.emit('response.created', { response: { id: response.id, object: 'realtime.response', status: 'in_progress', output: [] } });
    this.emit('response.output_item.added', { response_id: response.id, output_index: 0, item });
    this.#addItem(item);
    this.emit('response.content_part.added', { ...ids, part: { type: 'audio', transcript: '' } });

    const chunkSamples = Math.max(1, Math.round((this.#options.chunkMs * this.#outputFormat.rate) / 1000));
    const words = transcript.split(' ');
    const started = Date.now();
    let chunk = 0;
    for (let offset = 0; offset < audio.length && !response.cancelled && this.#closedAt === undefined; offset += chunkSamples, chunk++) {
      const piece = audio.subarray(offset, offset + chunkSamples);
      this.emit('response.output_audio.delta', { ...ids, delta: encodeAudio(piece, this.#outputFormat).toString('base64') });
      const word = words[chunk];
      if (word !== undefined) this.emit('response.output_audio_transcript.delta', { ...ids, delta: chunk === 0 ? word : ` ${word}` });
      const due = started + ((chunk + 1) * this.#options.chunkMs) / this.#options.paceFactor;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
    }
    const rest = words.slice(chunk).join(' ');
    if (rest && !response.cancelled) this.emit('response.output_audio_transcript.delta', { ...ids, delta: chunk === 0 ? rest : ` ${rest}` });
    const status = response.cancelled ? 'cancelled' : 'completed';
    this.emit('response.output_audio.done', ids);
    this.emit('response.output_audio_transcript.done', { ...ids, transcript });
    this.emit('response.content_part.done', { ...ids, part: { type: 'audio', transcript } });
    const done = { ...item, status: status === 'completed' ? 'completed' : 'incomplete', content: [{ type: 'audio', transcript }] };
    this.emit('response.output_item.done', { response_id: response.id, output_index: 0, item: done });
    this.#finishItem(done);
    this.emit('response.done', { response: { id: response.id, object: 'realtime.response', status, output: [done] } });
    this.#current = undefined;
  }
}
