import { isRecord } from '../lib/json.ts';
import { BUILT_IN_VOICES, isVoiceId, realtimeModelNames } from '../gateway/spec.ts';
import type { Collection, Store } from '../store.ts';
import { normalizeSpeech } from './addressing.ts';

// How a server's voice conversations behave, stored per server and changed with /voice settings.

export const TURN_DETECTION_MODES = ['server', 'discord'] as const;
export type TurnDetectionMode = (typeof TURN_DETECTION_MODES)[number];

/**
 * When the bot answers a turn. `auto`: every turn with one person in the channel, only turns that name
 * it with two or more; `always` and `when_named` fix one of those.
 */
export const RESPOND_MODES = ['auto', 'always', 'when_named'] as const;
export type RespondMode = (typeof RESPOND_MODES)[number];

export interface VoiceSettings {
  voice: string;
  instructions: string;
  model: string;
  /** `server`: the gateway's voice activity detection; `discord`: a turn ends when Discord says everyone stopped. */
  turnDetection: TurnDetectionMode;
  vadThreshold: number;
  silenceMs: number;
  /** Post what is said, both ways, in a thread of the text channel. */
  transcripts: boolean;
  /** Leave after this many minutes without anyone speaking. */
  idleMinutes: number;
  respond: RespondMode;
  /** What counts as the bot's name; empty: its display name in the server. */
  wakeWords: string[];
  /** Declare the video tools to the model; undefined: on when the server lets members use /video. */
  tools?: boolean;
  updatedBy?: string;
  updatedAt?: number;
}

export const VOICE_LIMITS = {
  vadThreshold: { min: 0.05, max: 1 },
  silenceMs: { min: 200, max: 3000 },
  idleMinutes: { min: 1, max: 120 },
  instructionsLength: 2000,
  wakeWords: 10,
  wakeWordLength: 40,
} as const;

export function defaultVoiceSettings(vendor: string): VoiceSettings {
  return {
    voice: 'eve',
    instructions: 'You are a friendly voice assistant in a Discord voice channel. Keep answers short and conversational.',
    model: realtimeModelNames(vendor)[0]!,
    turnDetection: 'server',
    vadThreshold: 0.5,
    silenceMs: 500,
    transcripts: false,
    idleMinutes: 10,
    respond: 'auto',
    wakeWords: [],
  };
}

/** `wake_words` as typed (comma-separated) to the list kept; blanks dropped. */
export function parseWakeWords(text: string): string[] {
  return text
    .split(',')
    .map((word) => word.trim())
    .filter((word) => word !== '');
}

function parseVoiceSettings(raw: unknown, defaults: VoiceSettings): VoiceSettings {
  if (!isRecord(raw)) throw new Error('voice settings must be an object');
  const pick = <T>(key: keyof VoiceSettings, check: (value: unknown) => value is T, fallback: T): T => {
    const value = raw[key];
    return value === undefined ? fallback : check(value) ? value : fallback;
  };
  const isString = (value: unknown): value is string => typeof value === 'string';
  const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
  const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean';
  const isMode = (value: unknown): value is TurnDetectionMode => TURN_DETECTION_MODES.some((mode) => mode === value);
  const isRespond = (value: unknown): value is RespondMode => RESPOND_MODES.some((mode) => mode === value);
  const isWords = (value: unknown): value is string[] => Array.isArray(value) && value.every((word) => typeof word === 'string');
  const tools = pick<boolean | undefined>('tools', isBoolean, undefined);
  const updatedBy = pick<string | undefined>('updatedBy', isString, undefined);
  const updatedAt = pick<number | undefined>('updatedAt', isNumber, undefined);
  return {
    voice: pick('voice', isString, defaults.voice),
    instructions: pick('instructions', isString, defaults.instructions),
    model: pick('model', isString, defaults.model),
    turnDetection: pick('turnDetection', isMode, defaults.turnDetection),
    vadThreshold: pick('vadThreshold', isNumber, defaults.vadThreshold),
    silenceMs: pick('silenceMs', isNumber, defaults.silenceMs),
    transcripts: pick('transcripts', isBoolean, defaults.transcripts),
    idleMinutes: pick('idleMinutes', isNumber, defaults.idleMinutes),
    respond: pick('respond', isRespond, defaults.respond),
    wakeWords: pick('wakeWords', isWords, defaults.wakeWords),
    ...(tools === undefined ? {} : { tools }),
    ...(updatedBy === undefined ? {} : { updatedBy }),
    ...(updatedAt === undefined ? {} : { updatedAt }),
  };
}

export type VoiceSettingsChange = Partial<Omit<VoiceSettings, 'updatedBy' | 'updatedAt'>>;

/** Checks a change before it is stored; the message names the option and the rule. */
export function checkVoiceSettingsChange(change: VoiceSettingsChange, vendor: string): string | undefined {
  if (change.voice !== undefined && !isVoiceId(change.voice)) {
    return `\`voice\` must be a voice id such as ${BUILT_IN_VOICES.slice(0, 4).join(', ')} (letters, digits, - and _); got "${change.voice}".`;
  }
  if (change.model !== undefined && !change.model.toLowerCase().startsWith(`${vendor.toLowerCase()}-voice-`)) {
    return `\`model\` must be a realtime voice model such as ${realtimeModelNames(vendor).join(', ')}; got "${change.model}".`;
  }
  if (change.instructions !== undefined && change.instructions.length > VOICE_LIMITS.instructionsLength) {
    return `\`instructions\` can be at most ${VOICE_LIMITS.instructionsLength} characters.`;
  }
  if (change.wakeWords !== undefined) {
    if (change.wakeWords.length > VOICE_LIMITS.wakeWords) return `\`wake_words\` can list at most ${VOICE_LIMITS.wakeWords} names, separated by commas.`;
    const long = change.wakeWords.find((word) => word.length > VOICE_LIMITS.wakeWordLength);
    if (long !== undefined) return `\`wake_words\`: each name can be at most ${VOICE_LIMITS.wakeWordLength} characters; "${long.slice(0, 20)}…" is longer.`;
    const empty = change.wakeWords.find((word) => normalizeSpeech(word) === '');
    if (empty !== undefined) return `\`wake_words\`: "${empty}" has no letters or digits to listen for.`;
  }
  const ranges: [keyof typeof VOICE_LIMITS, number | undefined, string][] = [
    ['vadThreshold', change.vadThreshold, 'vad_threshold'],
    ['silenceMs', change.silenceMs, 'silence_ms'],
    ['idleMinutes', change.idleMinutes, 'idle_minutes'],
  ];
  for (const [key, value, option] of ranges) {
    const range = VOICE_LIMITS[key];
    if (value !== undefined && typeof range === 'object' && (value < range.min || value > range.max)) {
      return `\`${option}\` must be from ${range.min} to ${range.max}; got ${value}.`;
    }
  }
  return undefined;
}

/** A change in words for the server's change history, named by the options of /voice settings. */
export function describeVoiceSettingsChange(change: VoiceSettingsChange): string {
  const parts = [
    change.voice === undefined ? undefined : `voice ${change.voice.toLowerCase()}`,
    change.model === undefined ? undefined : `model ${change.model}`,
    change.turnDetection === undefined ? undefined : `turn_detection ${change.turnDetection}`,
    change.vadThreshold === undefined ? undefined : `vad_threshold ${change.vadThreshold}`,
    change.silenceMs === undefined ? undefined : `silence_ms ${change.silenceMs}`,
    change.transcripts === undefined ? undefined : `transcripts ${change.transcripts ? 'on' : 'off'}`,
    change.idleMinutes === undefined ? undefined : `idle_minutes ${change.idleMinutes}`,
    change.respond === undefined ? undefined : `respond ${change.respond}`,
    change.wakeWords === undefined ? undefined : `wake_words ${change.wakeWords.length === 0 ? '(the bot\'s name)' : change.wakeWords.join(', ')}`,
    change.tools === undefined ? undefined : `tools ${change.tools ? 'on' : 'off'}`,
    // Instructions can be long: the history says they changed, /voice settings shows them.
    change.instructions === undefined ? undefined : 'new instructions',
  ].filter((part) => part !== undefined);
  return `changed voice settings: ${parts.join(', ')}`;
}

export class VoiceSettingsStore {
  readonly #collection: Collection<VoiceSettings>;
  readonly #defaults: VoiceSettings;

  constructor(store: Store, vendor: string) {
    this.#defaults = defaultVoiceSettings(vendor);
    this.#collection = store.collection('voice_settings', (raw) => parseVoiceSettings(raw, this.#defaults));
  }

  async get(guildId: string): Promise<VoiceSettings> {
    return (await this.#collection.get(guildId)) ?? this.#defaults;
  }

  /** One atomic step on the store: two admins changing different settings at once both keep theirs. */
  async update(guildId: string, change: VoiceSettingsChange, by: string): Promise<VoiceSettings> {
    const updated = await this.#collection.update(guildId, (current) => {
      const next: VoiceSettings = { ...(current ?? this.#defaults), ...change, updatedBy: by, updatedAt: Date.now() };
      if (change.voice !== undefined) next.voice = change.voice.toLowerCase();
      return next;
    });
    if (!updated) throw new Error('a voice settings change wrote no record'); // the change above always returns one
    return updated;
  }
}
