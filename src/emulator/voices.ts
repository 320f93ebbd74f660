import { BUILT_IN_VOICES } from '../gateway/spec.ts';

// docs/gateway.md, "Voices": the emulator knows exactly the built-in voices, in any letter case, and an
// unknown one is refused with the list of those it knows (video voice_id and realtime voice alike).

/** The voice as the list spells it, or undefined when the emulator has no such voice. */
export function knownVoice(value: string): string | undefined {
  const lower = value.toLowerCase();
  return BUILT_IN_VOICES.find((voice) => voice === lower);
}

/** The message of a refused voice: which value, in which field, and the voices there are. */
export function unknownVoiceMessage(field: string, value: string): string {
  return `Unknown ${field} "${value}". Available voices: ${BUILT_IN_VOICES.join(', ')}.`;
}
