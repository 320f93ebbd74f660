import { ChannelType, type SlashCommandIntegerOption, type SlashCommandNumberOption, type SlashCommandSubcommandBuilder } from 'discord.js';
import { catalogChoice, describedKey, literalChoice, localized, type DescribedBuilder, type DescribedKey } from '../i18n/commands.ts';
import type { MessageValues } from '../i18n/index.ts';

// A subcommand's options as plain definitions: the part that owns what an option means names it and
// bounds it, the command turns it into Discord's builder with subcommand(). The words, in every language,
// are the catalogs': `<command>.<subcommand>.name` / `.description`, `<…>.<option>.name` / `.description`,
// `<…>.<option>.choice.<value>` (src/i18n/catalogs/).

export interface OptionChoice {
  value: string;
  /** Shown as its value in every language (a resolution, a layer's name): no words in the catalogs. */
  literal?: boolean;
}

interface OptionBase {
  name: string;
  required?: boolean;
  /** What fills the description's placeholders (`at most {maxDays}`). */
  descriptionValues?: MessageValues;
}

export type OptionDefinition =
  | (OptionBase & { type: 'string'; choices?: readonly OptionChoice[]; autocomplete?: boolean; maxLength?: number })
  | (OptionBase & { type: 'integer' | 'number'; min?: number; max?: number })
  | (OptionBase & { type: 'boolean' | 'role' | 'user' })
  /** A text channel of the server (Discord offers no other kind). */
  | (OptionBase & { type: 'text-channel' })
  /** A text channel or a forum of the server: where members ask for things (Discord offers no other kind). */
  | (OptionBase & { type: 'text-or-forum-channel' });

export interface SubcommandDefinition {
  name: string;
  descriptionValues?: MessageValues;
  options?: readonly OptionDefinition[];
}

/** `sub` of the command at `commandKey` (`command.config`), named, described in every language and given its options, in the order of the definition. */
export function subcommand(
  sub: SlashCommandSubcommandBuilder,
  definition: SubcommandDefinition,
  commandKey: DescribedKey,
): SlashCommandSubcommandBuilder {
  const subKey = `${commandKey}.${definition.name}`;
  localized(sub.setName(definition.name), describedKey(subKey), definition.descriptionValues);
  for (const option of definition.options ?? []) {
    const required = option.required ?? false;
    const optionKey = `${subKey}.${option.name}`;
    const described = <B extends DescribedBuilder>(built: B): B => localized(built, describedKey(optionKey), option.descriptionValues);
    switch (option.type) {
      case 'string':
        sub.addStringOption((built) => {
          described(built.setName(option.name)).setRequired(required);
          if (option.choices)
            built.addChoices(
              ...option.choices.map((choice) => (choice.literal ? literalChoice(choice.value) : catalogChoice(optionKey, choice.value))),
            );
          if (option.autocomplete) built.setAutocomplete(true);
          if (option.maxLength !== undefined) built.setMaxLength(option.maxLength);
          return built;
        });
        break;
      case 'integer':
        sub.addIntegerOption((built) => bounded(described(built.setName(option.name)).setRequired(required), option));
        break;
      case 'number':
        sub.addNumberOption((built) => bounded(described(built.setName(option.name)).setRequired(required), option));
        break;
      case 'boolean':
        sub.addBooleanOption((built) => described(built.setName(option.name)).setRequired(required));
        break;
      case 'role':
        sub.addRoleOption((built) => described(built.setName(option.name)).setRequired(required));
        break;
      case 'user':
        sub.addUserOption((built) => described(built.setName(option.name)).setRequired(required));
        break;
      case 'text-channel':
        sub.addChannelOption((built) =>
          described(built.setName(option.name)).setRequired(required).addChannelTypes(ChannelType.GuildText, ChannelType.GuildAnnouncement),
        );
        break;
      case 'text-or-forum-channel':
        sub.addChannelOption((built) =>
          described(built.setName(option.name))
            .setRequired(required)
            .addChannelTypes(ChannelType.GuildText, ChannelType.GuildAnnouncement, ChannelType.GuildForum),
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
