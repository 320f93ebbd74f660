import { isRecord } from '../../lib/json.ts';
import { knownVoice, unknownVoiceMessage } from '../voices.ts';
import { DEFAULT_AUDIO_FORMAT, readAudioFormat, type AudioFormat } from './audio-format.ts';
import { DEFAULT_VAD, type VadSettings } from './vad.ts';

// What a session is configured with (`session.update`): audio formats, voice, instructions, tools and
// turn detection, read all or nothing, and described as session.created and session.updated show it.

/** The voice of a session that names none (the emulator speaks tones: the voice is only reported). */
export const DEFAULT_REALTIME_VOICE = 'eve';
/** The longest instructions and the most tools a session keeps (the spec gives no bound; a session holds them for hours). */
export const MAX_INSTRUCTIONS_CHARS = 32_768;
export const MAX_TOOLS = 128;
export const MAX_TOOLS_JSON_CHARS = 256 * 1024;
/** A function name as the widely used realtime protocol allows it. */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** The emulator's bounds on turn_detection (the spec shows none): enough for any real use, and no more audio kept. */
const MAX_VAD_MS = 10_000;

/** A value that cannot be taken, and the param it was sent as. */
export interface ConfigProblem {
  param: string;
  message: string;
}

type Reading<T> = ({ ok: true } & T) | ({ ok: false } & ConfigProblem);

/** `session.voice`: undefined keeps `current`; a voice of the list in any letter case, kept as the list spells it. */
function readVoice(value: unknown, current: string): Reading<{ value: string }> {
  if (value === undefined) return { ok: true, value: current };
  const param = 'session.voice';
  const voice = typeof value === 'string' ? knownVoice(value) : undefined;
  if (voice === undefined)
    return { ok: false, param, message: unknownVoiceMessage(param, typeof value === 'string' ? value : JSON.stringify(value)) };
  return { ok: true, value: voice };
}

function readInstructions(value: unknown, current: string): Reading<{ value: string }> {
  if (value === undefined) return { ok: true, value: current };
  const param = 'session.instructions';
  if (typeof value !== 'string') return { ok: false, param, message: `${param} must be a string.` };
  if (value.length > MAX_INSTRUCTIONS_CHARS)
    return { ok: false, param, message: `${param} may be at most ${MAX_INSTRUCTIONS_CHARS} characters.` };
  return { ok: true, value };
}

type Tools = readonly Readonly<Record<string, unknown>>[];

/**
 * `session.tools`: undefined keeps `current`. Each tool is an object with a `type` (the native layer passes
 * new tool types on, so any is kept); a `function` tool needs a name of its own. Kept as sent.
 */
function readTools(value: unknown, current: Tools): Reading<{ value: Tools }> {
  if (value === undefined) return { ok: true, value: current };
  const param = 'session.tools';
  if (!Array.isArray(value)) return { ok: false, param, message: `${param} must be an array.` };
  if (value.length > MAX_TOOLS) return { ok: false, param, message: `${param} may hold at most ${MAX_TOOLS} tools.` };
  if (JSON.stringify(value).length > MAX_TOOLS_JSON_CHARS)
    return { ok: false, param, message: `${param} may be at most ${MAX_TOOLS_JSON_CHARS} characters of JSON.` };
  const tools: Readonly<Record<string, unknown>>[] = [];
  const names = new Set<string>();
  for (const [index, tool] of value.entries()) {
    const at = `${param}[${index}]`;
    if (!isRecord(tool) || typeof tool.type !== 'string' || tool.type === '')
      return { ok: false, param: `${at}.type`, message: `${at} must be an object with a type.` };
    if (tool.type === 'function') {
      if (typeof tool.name !== 'string' || !FUNCTION_NAME.test(tool.name))
        return { ok: false, param: `${at}.name`, message: `${at}.name must be 1 to 64 letters, digits, _ or -.` };
      if (names.has(tool.name))
        return { ok: false, param: `${at}.name`, message: `${at}.name: another function tool is already named ${tool.name}.` };
      names.add(tool.name);
    }
    tools.push(tool);
  }
  return { ok: true, value: tools };
}

/** `turn_detection`: undefined keeps the current mode, null is manual mode. */
function readTurnDetection(session: Readonly<Record<string, unknown>>): Reading<{ settings: VadSettings | null | undefined }> {
  const detection = session.turn_detection;
  if (detection === undefined || detection === null) return { ok: true, settings: detection };
  const param = 'session.turn_detection';
  if (!isRecord(detection)) return { ok: false, param, message: `${param} must be an object or null.` };
  if (detection.type !== undefined && detection.type !== 'server_vad')
    return { ok: false, param: `${param}.type`, message: `${param}.type must be server_vad.` };
  const threshold = detection.threshold ?? DEFAULT_VAD.threshold;
  if (typeof threshold !== 'number' || threshold < 0 || threshold > 1)
    return { ok: false, param: `${param}.threshold`, message: `${param}.threshold must be a number from 0 to 1.` };
  const silence = detection.silence_duration_ms ?? DEFAULT_VAD.silenceDurationMs;
  const prefix = detection.prefix_padding_ms ?? DEFAULT_VAD.prefixPaddingMs;
  const isDuration = (value: unknown): value is number =>
    typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_VAD_MS;
  const durationProblem = (key: string) => ({
    ok: false as const,
    param: `${param}.${key}`,
    message: `${param}.${key} must be a whole number of milliseconds from 0 to ${MAX_VAD_MS}.`,
  });
  if (!isDuration(silence)) return durationProblem('silence_duration_ms');
  if (!isDuration(prefix)) return durationProblem('prefix_padding_ms');
  return { ok: true, settings: { threshold, silenceDurationMs: silence, prefixPaddingMs: prefix } };
}

export class SessionConfig {
  #inputFormat: AudioFormat = DEFAULT_AUDIO_FORMAT;
  #outputFormat: AudioFormat = DEFAULT_AUDIO_FORMAT;
  #voice: string = DEFAULT_REALTIME_VOICE;
  #instructions = '';
  #tools: Tools = [];
  /** Server VAD's settings, or null in manual mode. */
  #turnDetection: VadSettings | null = DEFAULT_VAD;

  get inputFormat(): AudioFormat {
    return this.#inputFormat;
  }

  get outputFormat(): AudioFormat {
    return this.#outputFormat;
  }

  /**
   * Takes the settings of a session.update's `session`, all or nothing: a bad value leaves every previous
   * setting in force. Says how turn detection changed: undefined kept, null manual, or server VAD's settings.
   */
  update(session: Readonly<Record<string, unknown>>): Reading<{ detection: VadSettings | null | undefined }> {
    const audio = isRecord(session.audio) ? session.audio : {};
    const formatOf = (direction: 'input' | 'output', current: AudioFormat) => {
      const settings = audio[direction];
      return readAudioFormat(isRecord(settings) ? settings.format : undefined, `session.audio.${direction}.format`, current);
    };
    const input = formatOf('input', this.#inputFormat);
    const output = formatOf('output', this.#outputFormat);
    const detection = readTurnDetection(session);
    const voice = readVoice(session.voice, this.#voice);
    const instructions = readInstructions(session.instructions, this.#instructions);
    const tools = readTools(session.tools, this.#tools);
    if (!input.ok) return input;
    if (!output.ok) return output;
    if (!detection.ok) return detection;
    if (!voice.ok) return voice;
    if (!instructions.ok) return instructions;
    if (!tools.ok) return tools;
    this.#inputFormat = input.format;
    this.#outputFormat = output.format;
    this.#voice = voice.value;
    this.#instructions = instructions.value;
    this.#tools = tools.value;
    if (detection.settings !== undefined) this.#turnDetection = detection.settings;
    return { ok: true, detection: detection.settings };
  }

  /** The whole session as it now stands, as session.created and session.updated describe it. */
  describe(id: string, model: string): Record<string, unknown> {
    const vad = this.#turnDetection;
    return {
      id,
      object: 'realtime.session',
      model,
      voice: this.#voice,
      instructions: this.#instructions,
      turn_detection: vad
        ? {
            type: 'server_vad',
            threshold: vad.threshold,
            silence_duration_ms: vad.silenceDurationMs,
            prefix_padding_ms: vad.prefixPaddingMs,
          }
        : null,
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
}
