import type {
  AutocompleteInteraction,
  ButtonInteraction,
  ChatInputCommandInteraction,
  ModalSubmitInteraction,
  RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import type { Placeholder } from '../discord/answer.ts';
import type { Services } from '../services.ts';
import type { HandledInteraction, Requirement } from './requirements.ts';

/**
 * A slash command module (`commands/<name>.ts`, default export), after the discord.js guide's layout:
 * its definition and thin handlers that hand the work to a service. Buttons and modals whose
 * `custom_id` starts with `<name>:` come back to the same module, so their state lives in the id or the
 * store and survives a restart. `S` is what handlers receive: the bot's services (tests may pass less).
 * What a member needs (in a server, Manage Server, a feature's role) is declared in `requires` and
 * checked by the dispatcher before any handler runs.
 */
export interface Command<S = Services> {
  data: { name: string; toJSON(): RESTPostAPIChatInputApplicationCommandsJSONBody };
  execute(interaction: ChatInputCommandInteraction, services: S): Promise<void>;
  autocomplete?(interaction: AutocompleteInteraction, services: S): Promise<void>;
  button?(interaction: ButtonInteraction, services: S): Promise<void>;
  modal?(interaction: ModalSubmitInteraction, services: S): Promise<void>;
  /** What the member needs for this subcommand, button or form; nothing when absent. */
  requires?(interaction: HandledInteraction): Requirement | undefined;
  /**
   * How this interaction is first answered: with a form (`form`: it must be the first answer, so nothing
   * slow may come before it), or a message everyone sees (`public`, e.g. a status card) or only the member
   * (`private`, the default). A slow answer is deferred meanwhile with a placeholder of that kind.
   */
  answers?(interaction: HandledInteraction): Placeholder | 'form';
}

function hasFunction(value: object, key: string): boolean {
  return typeof Reflect.get(value, key) === 'function';
}

/** Checks a dynamically imported module's default export before it is trusted as a command. */
export function isCommand(value: unknown): value is Command {
  if (typeof value !== 'object' || value === null) return false;
  const data: unknown = Reflect.get(value, 'data');
  return (
    typeof data === 'object' &&
    data !== null &&
    typeof Reflect.get(data, 'name') === 'string' &&
    hasFunction(data, 'toJSON') &&
    hasFunction(value, 'execute') &&
    ['autocomplete', 'button', 'modal', 'requires', 'answers'].every((key) => Reflect.get(value, key) === undefined || hasFunction(value, key))
  );
}
