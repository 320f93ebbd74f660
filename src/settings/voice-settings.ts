import { isDeepStrictEqual } from 'node:util';
import { isRecord } from '../lib/json.ts';
import { BUILT_IN_VOICES, realtimeModelNames } from '../gateway/spec.ts';
import type { SubcommandDefinition } from '../discord/command-options.ts';
import { SPOKEN_LANGUAGES } from '../i18n/index.ts';
import { notice, refuse, type NoticeOf, type Outcome } from '../wording/notice.ts';
import type { RecordWarning } from '../store/index.ts';
import { CONSENT_MODES, RESPOND_MODES, TURN_DETECTION_MODES, type VoiceSettings } from '../ports/voice-settings.ts';
import { hasSomethingToHear, readVoiceSettings, VOICE_LIMITS, voiceSettingSchemas } from '../ports/voice-settings-schema.ts';
import { graphemePrefix } from '../lib/text.ts';

// How a server's voice conversations behave, kept with the rest of its settings and changed with /voice
// settings; the voice part reads them through the VoiceSettingsSource port. Their schema, bounds
// included, is the port's (src/ports/voice-settings-schema.ts): a change is checked against it, and a
// stored record read with it.

/** The voice settings' schema, for the languages the bot speaks. */
const VOICE_SETTINGS = voiceSettingSchemas(SPOKEN_LANGUAGES);

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
    consent: 'open',
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

/** A server's stored voice settings: each one out of its bounds is left to its default, and said in one warning. */
export function parseStoredVoiceSettings(raw: unknown, warn: RecordWarning = () => undefined): StoredVoiceSettings {
  if (!isRecord(raw)) throw new Error('voice settings must be an object');
  const { settings, outOfBounds } = readVoiceSettings(raw, VOICE_SETTINGS);
  if (outOfBounds.length > 0) warn('stored voice settings out of their bounds are read as their defaults', { settings: outOfBounds });
  return settings;
}

export type VoiceSettingsChange = Partial<Omit<VoiceSettings, 'updatedBy' | 'updatedAt'>>;

/** `/voice settings language`'s choice that leaves the language to the server's (its Community setting). */
export const SERVER_LANGUAGE = 'server';

/** Why a voice settings change is refused: a notice naming the option and the rule. */
export type VoiceSettingsRefusal = NoticeOf<'voice.settings.'>;

/**
 * Checks a change before it is stored, against the voice settings' schema (and, for `model`, the vendor's
 * models); a refusal names the option and the rule.
 */
export function checkVoiceSettingsChange(change: VoiceSettingsChange, vendor: string): VoiceSettingsRefusal | undefined {
  const fits = (key: keyof VoiceSettingsChange): boolean =>
    change[key] === undefined || VOICE_SETTINGS.fields[key].safeParse(change[key]).success;
  if (!fits('voice')) {
    return notice('voice.settings.bad-voice', { examples: BUILT_IN_VOICES.slice(0, 4).join(', '), given: change.voice ?? '' });
  }
  if (change.model !== undefined && !change.model.toLowerCase().startsWith(`${vendor.toLowerCase()}-voice-`)) {
    return notice('voice.settings.bad-model', { examples: realtimeModelNames(vendor).join(', '), given: change.model });
  }
  if (!fits('instructions')) return notice('voice.settings.instructions-too-long', { max: VOICE_LIMITS.instructionsLength });
  const words = change.wakeWords ?? [];
  if (!fits('wakeWords')) {
    if (words.length > VOICE_LIMITS.wakeWords) return notice('voice.settings.too-many-wake-words', { max: VOICE_LIMITS.wakeWords });
    const long = words.find((word) => word.length > VOICE_LIMITS.wakeWordLength);
    if (long !== undefined)
      return notice('voice.settings.wake-word-too-long', { max: VOICE_LIMITS.wakeWordLength, word: graphemePrefix(long, 20) });
    return notice('voice.settings.wake-word-silent', { word: words.find((word) => !hasSomethingToHear(word)) ?? '' });
  }
  const ranges = [
    ['vadThreshold', change.vadThreshold, 'vad_threshold'],
    ['silenceMs', change.silenceMs, 'silence_ms'],
    ['idleMinutes', change.idleMinutes, 'idle_minutes'],
  ] as const;
  for (const [key, value, option] of ranges) {
    if (value === undefined || fits(key)) continue;
    const range = VOICE_LIMITS[key];
    return notice('voice.settings.range', {
      option: `\`${option}\``,
      min: { phrase: 'number', value: range.min },
      max: { phrase: 'number', value: range.max },
      given: { phrase: 'number', value },
    });
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
    change.consent === undefined ? undefined : `consent ${change.consent}`,
    'language' in change ? `language ${change.language ?? SERVER_LANGUAGE}` : undefined,
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
    {
      type: 'string',
      name: 'language',
      choices: [{ value: SERVER_LANGUAGE }, ...SPOKEN_LANGUAGES.map((value) => ({ value }))],
    },
    { type: 'string', name: 'consent', choices: CONSENT_MODES.map((value) => ({ value })) },
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
  /** A language the bot speaks, or `server` for the server's language. */
  language: string | null;
  /** Whom the bot hears: `open` or `opt-in`. */
  consent: string | null;
}

/** The change the options ask for (empty: they ask to see the settings), or why it is refused. */
export function voiceSettingsChange(
  given: VoiceSettingsGiven,
  vendor: string,
): Outcome<{ change: VoiceSettingsChange }, object, VoiceSettingsRefusal> {
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
    if (!chosen)
      return refuse('voice.settings.bad-choice', { option: '`respond`', values: RESPOND_MODES.join(', '), given: given.respond });
    change.respond = chosen;
  }
  if (given.wakeWords !== null) change.wakeWords = parseWakeWords(given.wakeWords);
  if (given.tools !== null) change.tools = given.tools;
  if (given.language !== null) {
    const language = SPOKEN_LANGUAGES.find((candidate) => candidate === given.language);
    if (!language && given.language !== SERVER_LANGUAGE) {
      const values = [SERVER_LANGUAGE, ...SPOKEN_LANGUAGES].join(', ');
      return refuse('voice.settings.bad-choice', { option: '`language`', values, given: given.language });
    }
    // Undefined: back to the server's language (the key is there, so it is a change).
    change.language = language;
  }
  if (given.consent !== null) {
    const consent = CONSENT_MODES.find((candidate) => candidate === given.consent);
    if (!consent)
      return refuse('voice.settings.bad-choice', { option: '`consent`', values: CONSENT_MODES.join(', '), given: given.consent });
    change.consent = consent;
  }
  if (Object.keys(change).length === 0) return { ok: true, change };
  const problem = checkVoiceSettingsChange(change, vendor);
  return problem ? { ok: false, notice: problem } : { ok: true, change };
}
