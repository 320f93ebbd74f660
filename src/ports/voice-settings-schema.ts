import { z } from 'zod';
import { isVoiceId } from '../gateway/spec.ts';
import { CONSENT_MODES, RESPOND_MODES, TURN_DETECTION_MODES, type VoiceSettings } from './voice-settings.ts';

// Voice settings have one schema, with the bounds /voice settings enforces: the settings part checks a
// change against it and reads a server's stored settings with it, the voice part reads a conversation's
// record with it. A stored setting out of its bounds (a hand edit, a bug, an older version) is read as
// its default, and said in one warning; the rest of the record stays.

export const VOICE_LIMITS = {
  vadThreshold: { min: 0.05, max: 1 },
  silenceMs: { min: 200, max: 3000 },
  idleMinutes: { min: 1, max: 120 },
  instructionsLength: 2000,
  wakeWords: 10,
  wakeWordLength: 40,
} as const;

/** Whether a wake word keeps a letter or digit once the voice part normalises what it hears (NFKC, then letters and digits). */
export function hasSomethingToHear(word: string): boolean {
  return /[\p{L}\p{N}]/u.test(word.normalize('NFKC'));
}

/** Each voice setting's schema; `languages`: the locales a conversation may speak, the bot's catalogs' (src/i18n). */
export function voiceSettingSchemas(languages: readonly string[]) {
  const range = ({ min, max }: { min: number; max: number }) => z.number().min(min).max(max);
  const fields = {
    voice: z.string().refine(isVoiceId),
    instructions: z.string().max(VOICE_LIMITS.instructionsLength),
    // Whose realtime model it is depends on the vendor, which /voice settings checks; stored, any name.
    model: z.string().min(1),
    turnDetection: z.enum(TURN_DETECTION_MODES),
    vadThreshold: range(VOICE_LIMITS.vadThreshold),
    silenceMs: range(VOICE_LIMITS.silenceMs).int(),
    transcripts: z.boolean(),
    idleMinutes: range(VOICE_LIMITS.idleMinutes).int(),
    respond: z.enum(RESPOND_MODES),
    wakeWords: z.array(z.string().max(VOICE_LIMITS.wakeWordLength).refine(hasSomethingToHear)).max(VOICE_LIMITS.wakeWords),
    tools: z.boolean(),
    language: z.string().refine((language) => languages.includes(language)),
    consent: z.enum(CONSENT_MODES),
    updatedBy: z.string(),
    updatedAt: z.number(),
  } as const satisfies { [K in keyof VoiceSettings]-?: z.ZodType<Exclude<VoiceSettings[K], undefined>> };
  return { fields, stored: z.object(fields).partial() };
}

export type VoiceSettingSchemas = ReturnType<typeof voiceSettingSchemas>;

/** Settings as read from a stored record: those that fit, and the names of those that were there but did not. */
export interface ReadVoiceSettings {
  settings: Partial<VoiceSettings>;
  outOfBounds: string[];
}

/** The voice settings a stored record holds (`raw`, an object), each checked against its schema. */
export function readVoiceSettings(raw: Readonly<Record<string, unknown>>, schemas: VoiceSettingSchemas): ReadVoiceSettings {
  const read = schemas.stored.safeParse(raw);
  if (read.success) return { settings: read.data, outOfBounds: [] };
  const outOfBounds = [...new Set(read.error.issues.map((issue) => String(issue.path[0])))];
  const fitting = Object.fromEntries(Object.entries(raw).filter(([key]) => !outOfBounds.includes(key)));
  return { settings: schemas.stored.parse(fitting), outOfBounds };
}
