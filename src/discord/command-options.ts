import { ChannelType, type SlashCommandIntegerOption, type SlashCommandNumberOption, type SlashCommandSubcommandBuilder } from 'discord.js';

// A subcommand's options as plain definitions: the part that owns what an option means words it and
// bounds it, the command turns it into Discord's builder with subcommand().

export interface OptionChoice {
  name: string;
  value: string;
}

interface OptionBase {
  name: string;
  description: string;
  required?: boolean;
}

export type OptionDefinition =
  | (OptionBase & { type: 'string'; choices?: readonly OptionChoice[]; autocomplete?: boolean; maxLength?: number })
  | (OptionBase & { type: 'integer' | 'number'; min?: number; max?: number })
  | (OptionBase & { type: 'boolean' | 'role' })
  /** A text channel of the server (Discord offers no other kind). */
  | (OptionBase & { type: 'text-channel' });

export interface SubcommandDefinition {
  name: string;
  description: string;
  options?: readonly OptionDefinition[];
}

/** `sub` named, described and given its options, in the order of the definition. */
export function subcommand(sub: SlashCommandSubcommandBuilder, definition: SubcommandDefinition): SlashCommandSubcommandBuilder {
  sub.setName(definition.name).setDescription(definition.description);
  for (const option of definition.options ?? []) {
    const required = option.required ?? false;
    switch (option.type) {
      case 'string':
        sub.addStringOption((built) => {
          built.setName(option.name).setDescription(option.description).setRequired(required);
          if (option.choices) built.addChoices(...option.choices);
          if (option.autocomplete) built.setAutocomplete(true);
          if (option.maxLength !== undefined) built.setMaxLength(option.maxLength);
          return built;
        });
        break;
      case 'integer':
        sub.addIntegerOption((built) =>
          bounded(built.setName(option.name).setDescription(option.description).setRequired(required), option),
        );
        break;
      case 'number':
        sub.addNumberOption((built) =>
          bounded(built.setName(option.name).setDescription(option.description).setRequired(required), option),
        );
        break;
      case 'boolean':
        sub.addBooleanOption((built) => built.setName(option.name).setDescription(option.description).setRequired(required));
        break;
      case 'role':
        sub.addRoleOption((built) => built.setName(option.name).setDescription(option.description).setRequired(required));
        break;
      case 'text-channel':
        sub.addChannelOption((built) =>
          built
            .setName(option.name)
            .setDescription(option.description)
            .setRequired(required)
            .addChannelTypes(ChannelType.GuildText, ChannelType.GuildAnnouncement),
        );
        break;
    }
  }
  return sub;
}

function bounded<T extends SlashCommandIntegerOption | SlashCommandNumberOption>(built: T, bounds: { min?: number; max?: number }): T {
  if (bounds.min !== undefined) built.setMinValue(bounds.min);
  if (bounds.max !== undefined) built.setMaxValue(bounds.max);
  return built;
}
