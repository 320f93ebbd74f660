import { isDeepStrictEqual } from 'node:util';
import { isRecord } from '../lib/json.ts';
import { BUILT_IN_VOICES, isVoiceId, realtimeModelNames } from '../gateway/spec.ts';
import type { SubcommandDefinition } from '../discord/command-options.ts';
import { refuse, type Result } from '../lib/result.ts';
import type { RespondMode, TurnDetectionMode, VoiceSettings } from '../ports/voice-settings.ts';

// How a server's voice conversations behave, kept with the rest of its settings and changed with /voice
// settings; the voice part reads them through the VoiceSettingsSource port.

export const TURN_DETECTION_MODES: readonly TurnDetectionMode[] = ['server', 'discord'];
export const RESPOND_MODES: readonly RespondMode[] = ['auto', 'always', 'when_named'];

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

/**
 * What a server chose, as stored: each setting that reads right, the rest left to the defaults (which
 * name the vendor's models, so they are applied by whoever knows the vendor).
 */
export type StoredVoiceSettings = Partial<VoiceSettings>;

export function parseStoredVoiceSettings(raw: unknown): StoredVoiceSettings {
  if (!isRecord(raw)) throw new Error('voice settings must be an object');
  const stored: StoredVoiceSettings = {};
  const keep = <K extends keyof VoiceSettings>(key: K, check: (value: unknown) => value is VoiceSettings[K]): void => {
    const value = raw[key];
    if (check(value)) stored[key] = value;
  };
  const isString = (value: unknown): value is string => typeof value === 'string';
  const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
  const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean';
  const isMode = (value: unknown): value is TurnDetectionMode => TURN_DETECTION_MODES.some((mode) => mode === value);
  const isRespond = (value: unknown): value is RespondMode => RESPOND_MODES.some((mode) => mode === value);
  const isWords = (value: unknown): value is string[] => Array.isArray(value) && value.every((word) => typeof word === 'string');
  keep('voice', isString);
  keep('instructions', isString);
  keep('model', isString);
  keep('turnDetection', isMode);
  keep('vadThreshold', isNumber);
  keep('silenceMs', isNumber);
  keep('transcripts', isBoolean);
  keep('idleMinutes', isNumber);
  keep('respond', isRespond);
  keep('wakeWords', isWords);
  keep('tools', isBoolean);
  keep('updatedBy', isString);
  keep('updatedAt', isNumber);
  return stored;
}

export type VoiceSettingsChange = Partial<Omit<VoiceSettings, 'updatedBy' | 'updatedAt'>>;

/** Whether a wake word keeps a letter or digit once the voice part normalises what it hears (NFKC, then letters and digits). */
function hasSomethingToHear(word: string): boolean {
  return /[\p{L}\p{N}]/u.test(word.normalize('NFKC'));
}

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
    if (change.wakeWords.length > VOICE_LIMITS.wakeWords)
      return `\`wake_words\` can list at most ${VOICE_LIMITS.wakeWords} names, separated by commas.`;
    const long = change.wakeWords.find((word) => word.length > VOICE_LIMITS.wakeWordLength);
    if (long !== undefined)
      return `\`wake_words\`: each name can be at most ${VOICE_LIMITS.wakeWordLength} characters; "${long.slice(0, 20)}…" is longer.`;
    const empty = change.wakeWords.find((word) => !hasSomethingToHear(word));
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
    change.wakeWords === undefined
      ? undefined
      : `wake_words ${change.wakeWords.length === 0 ? "(the bot's name)" : change.wakeWords.join(', ')}`,
    change.tools === undefined ? undefined : `tools ${change.tools ? 'on' : 'off'}`,
    // Instructions can be long: the history says they changed, /voice settings shows them.
    change.instructions === undefined ? undefined : 'new instructions',
  ].filter((part) => part !== undefined);
  return `changed voice settings: ${parts.join(', ')}`;
}

/**
 * `current` with `change` applied, stamped with who made it and when; undefined when the change sets
 * every setting to what it already is (nothing to write, nothing to record).
 */
export function applyVoiceSettingsChange(
  current: VoiceSettings,
  change: VoiceSettingsChange,
  by: string,
  at: number,
): VoiceSettings | undefined {
  const { updatedBy: _by, updatedAt: _at, ...settings } = current;
  const next: VoiceSettings = { ...settings, ...change };
  if (change.voice !== undefined) next.voice = change.voice.toLowerCase();
  if (isDeepStrictEqual(next, settings)) return undefined;
  return { ...next, updatedBy: by, updatedAt: at };
}

// ---- /voice settings ---------------------------------------------------------------------------

/** Instructions may be 2000 characters, as long as a whole Discord message: the reply shows their start. */
const INSTRUCTIONS_PREVIEW = 500;

/** Its words, in every language, are the catalogs' (`command.voice.settings.*` in src/i18n/catalogs/). */
export const VOICE_SETTINGS_SUBCOMMAND = {
  name: 'settings',
  options: [
    { type: 'string', name: 'voice', autocomplete: true },
    { type: 'string', name: 'instructions', maxLength: VOICE_LIMITS.instructionsLength },
    { type: 'string', name: 'model', autocomplete: true },
    {
      type: 'string',
      name: 'turn_detection',
      choices: [{ value: 'server' }, { value: 'discord' }],
    },
    {
      type: 'number',
      name: 'vad_threshold',
      min: VOICE_LIMITS.vadThreshold.min,
      max: VOICE_LIMITS.vadThreshold.max,
    },
    {
      type: 'integer',
      name: 'silence_ms',
      min: VOICE_LIMITS.silenceMs.min,
      max: VOICE_LIMITS.silenceMs.max,
    },
    { type: 'boolean', name: 'transcripts' },
    {
      type: 'integer',
      name: 'idle_minutes',
      min: VOICE_LIMITS.idleMinutes.min,
      max: VOICE_LIMITS.idleMinutes.max,
    },
    {
      type: 'string',
      name: 'respond',
      choices: [{ value: 'auto' }, { value: 'always' }, { value: 'when_named' }],
    },
    { type: 'string', name: 'wake_words', maxLength: 400 },
    { type: 'boolean', name: 'tools' },
  ],
} as const satisfies SubcommandDefinition;

/** The options of /voice settings as given, by the names of VoiceSettings; null: left out. */
export interface VoiceSettingsGiven {
  voice: string | null;
  instructions: string | null;
  model: string | null;
  turnDetection: string | null;
  vadThreshold: number | null;
  silenceMs: number | null;
  transcripts: boolean | null;
  idleMinutes: number | null;
  respond: string | null;
  wakeWords: string | null;
  tools: boolean | null;
}

/** The change the options ask for (empty: they ask to see the settings), or why it is refused. */
export function voiceSettingsChange(given: VoiceSettingsGiven, vendor: string): Result<{ change: VoiceSettingsChange }> {
  const change: VoiceSettingsChange = {};
  if (given.voice !== null) change.voice = given.voice;
  if (given.instructions !== null) change.instructions = given.instructions;
  if (given.model !== null) change.model = given.model;
  const mode = TURN_DETECTION_MODES.find((candidate) => candidate === given.turnDetection);
  if (mode) change.turnDetection = mode;
  if (given.vadThreshold !== null) change.vadThreshold = given.vadThreshold;
  if (given.silenceMs !== null) change.silenceMs = given.silenceMs;
  if (given.transcripts !== null) change.transcripts = given.transcripts;
  if (given.idleMinutes !== null) change.idleMinutes = given.idleMinutes;
  if (given.respond !== null) {
    const chosen = RESPOND_MODES.find((candidate) => candidate === given.respond);
    if (!chosen) return refuse(`\`respond\` must be one of ${RESPOND_MODES.join(', ')}; got "${given.respond}".`);
    change.respond = chosen;
  }
  if (given.wakeWords !== null) change.wakeWords = parseWakeWords(given.wakeWords);
  if (given.tools !== null) change.tools = given.tools;
  if (Object.keys(change).length === 0) return { ok: true, change };
  const problem = checkVoiceSettingsChange(change, vendor);
  return problem ? refuse(problem) : { ok: true, change };
}

function describeRespond(settings: VoiceSettings): string {
  const names = settings.wakeWords.length > 0 ? settings.wakeWords.map((word) => `"${word}"`).join(', ') : 'its display name';
  const when =
    settings.respond === 'always'
      ? 'every turn'
      : settings.respond === 'when_named'
        ? 'only turns that name it'
        : 'every turn with one person in the channel, only turns that name it with more';
  return `${settings.respond}: ${when} (its names: ${names})`;
}

/** `/voice settings`, and what every change answers with. */
export function describeVoiceSettings(settings: VoiceSettings): string {
  return [
    `**Voice:** ${settings.voice}`,
    `**Model:** ${settings.model}`,
    `**Turn detection:** ${settings.turnDetection}${settings.turnDetection === 'server' ? ` (threshold ${settings.vadThreshold}, ${settings.silenceMs} ms of silence ends a turn)` : ''}`,
    `**Transcripts:** ${settings.transcripts ? 'on, in a thread' : 'off'}`,
    `**Leaves after:** ${settings.idleMinutes} min without speech`,
    `**Answers:** ${describeRespond(settings)}`,
    `**Tools:** ${settings.tools === false ? 'off' : 'on (generate_video, video_status, with the rules of /video)'}`,
    `**Instructions:** ${settings.instructions.length > INSTRUCTIONS_PREVIEW ? `${settings.instructions.slice(0, INSTRUCTIONS_PREVIEW - 1)}… (${settings.instructions.length} characters)` : settings.instructions}`,
    settings.updatedBy ? `Last changed by <@${settings.updatedBy}> <t:${Math.floor((settings.updatedAt ?? 0) / 1000)}:R>.` : '',
  ]
    .filter((line) => line !== '')
    .join('\n');
}
