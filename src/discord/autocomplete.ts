import type { AutocompleteInteraction } from 'discord.js';
import { graphemePrefix } from '../lib/text.ts';

// Discord refuses an autocomplete answer with more than 25 suggestions or a name over 100 characters
// (400 / 50035): every answer goes through suggest(), which keeps within both.

export const MAX_AUTOCOMPLETE_CHOICES = 25;
const MAX_CHOICE_NAME_LENGTH = 100;

/** A suggestion: a name that is also its value, or a name shown for a value. */
export type Choice = string | { name: string; value: string };

/** Answers with the first suggestions that fit, names cut to what Discord shows. */
export async function suggest(interaction: AutocompleteInteraction, choices: readonly Choice[]): Promise<void> {
  // Answered already (empty, when these came too late for Discord's 3 s): a second answer is refused.
  if (interaction.responded) return;
  await interaction.respond(
    choices.slice(0, MAX_AUTOCOMPLETE_CHOICES).map((choice) => {
      const { name, value } = typeof choice === 'string' ? { name: choice, value: choice } : choice;
      return { name: graphemePrefix(name, MAX_CHOICE_NAME_LENGTH), value };
    }),
  );
}

/** The names that contain what the member typed, ignoring case. */
export function containing(names: readonly string[], typed: string): string[] {
  const wanted = typed.toLowerCase();
  return names.filter((name) => name.toLowerCase().includes(wanted));
}
