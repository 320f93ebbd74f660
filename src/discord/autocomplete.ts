import type { AutocompleteInteraction } from 'discord.js';
import { graphemePrefix } from '../lib/text.ts';

// Discord refuses an autocomplete answer with more than 25 suggestions, or a name or a value over 100
// characters (400 / 50035): every answer goes through suggest(), which keeps within all three.

export const MAX_AUTOCOMPLETE_CHOICES = 25;
const MAX_CHOICE_NAME_LENGTH = 100;
const MAX_CHOICE_VALUE_LENGTH = 100;

/** A suggestion: a name that is also its value, or a name shown for a value. */
export type Choice = string | { name: string; value: string };

/**
 * The first suggestions Discord takes, names cut to what it shows (between whole characters). A value
 * longer than Discord allows is left out: cut, it would be another value, which the member never chose.
 */
export function fittingChoices(choices: readonly Choice[]): { name: string; value: string }[] {
  return choices
    .map((choice) => (typeof choice === 'string' ? { name: choice, value: choice } : choice))
    .filter(({ value }) => value.length <= MAX_CHOICE_VALUE_LENGTH)
    .slice(0, MAX_AUTOCOMPLETE_CHOICES)
    .map(({ name, value }) => ({ name: graphemePrefix(name, MAX_CHOICE_NAME_LENGTH), value }));
}

/** Answers with the first suggestions that fit (fittingChoices()). */
export async function suggest(interaction: AutocompleteInteraction, choices: readonly Choice[]): Promise<void> {
  // Answered already (empty, when these came too late for Discord's 3 s): a second answer is refused.
  if (interaction.responded) return;
  await interaction.respond(fittingChoices(choices));
}

/** The names that contain what the member typed, ignoring case. */
export function containing(names: readonly string[], typed: string): string[] {
  const wanted = typed.toLowerCase();
  return names.filter((name) => name.toLowerCase().includes(wanted));
}
