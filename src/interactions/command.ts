import {
  ApplicationCommandType,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type MessageContextMenuCommandInteraction,
  type ModalSubmitInteraction,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord.js';
import type { AnswerVisibility } from '../discord/answer.ts';
import { isRecord } from '../lib/json.ts';
import type { Services } from '../services.ts';
import type { HandledInteraction, Requirement } from './requirements.ts';

/**
 * An application command module (`commands/<name>.ts`, default export), after the discord.js guide's
 * layout: its definition and thin handlers that hand the work to a service. A slash command is handled by
 * `execute`; a message command (the Apps menu on a message, `data` of type Message) by `messageCommand`.
 * Buttons and modals whose `custom_id` starts with `<name>:` come back to the same module, so their state
 * lives in the id or the store and survives a restart. `S` is what handlers receive: the bot's services (tests may pass less).
 * What a member needs (in a server, Manage Server, a feature's role) is declared in `requires` and
 * checked by the dispatcher before any handler runs.
 */
export interface Command<S = Services> {
  data: { name: string; toJSON(): RESTPostAPIApplicationCommandsJSONBody };
  /** A slash command's handler. */
  execute?(interaction: ChatInputCommandInteraction, services: S): Promise<void>;
  /** A message command's handler: the member picked it on a message (`interaction.targetMessage`). */
  messageCommand?(interaction: MessageContextMenuCommandInteraction, services: S): Promise<void>;
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
  answers?(interaction: HandledInteraction): AnswerVisibility | 'form';
  /**
   * Whether a member may use this through their own install of the app (a DM, a private channel, a server
   * without the bot), when the operator allows user installs (USER_INSTALLS=on): a command that has it is
   * registered for user installs too, and the interactions it answers false for (a subcommand, a button)
   * are answered privately that they need the server's install. Without it: server installs only.
   */
  userInstall?(interaction: HandledInteraction): boolean;
}

function hasFunction(value: object, key: string): boolean {
  return typeof Reflect.get(value, key) === 'function';
}

function isDefinition(value: unknown): value is { name: string; toJSON(): unknown } {
  return typeof value === 'object' && value !== null && typeof Reflect.get(value, 'name') === 'string' && hasFunction(value, 'toJSON');
}

/** Each kind of application command and the handler a module of that kind has (and a module of another kind has not). */
const HANDLER_OF_KIND = new Map<unknown, 'execute' | 'messageCommand'>([
  [ApplicationCommandType.ChatInput, 'execute'],
  [ApplicationCommandType.Message, 'messageCommand'],
]);

/**
 * Checks a dynamically imported module's default export before it is trusted as a command: a definition,
 * and the handler its kind needs (`execute` for a slash command, `messageCommand` for a message command).
 */
export function isCommand(value: unknown): value is Command {
  if (typeof value !== 'object' || value === null) return false;
  const data: unknown = Reflect.get(value, 'data');
  if (!isDefinition(data)) return false;
  const json = data.toJSON();
  // A definition without a type is a slash command, as Discord takes it.
  const handler = HANDLER_OF_KIND.get((isRecord(json) ? json.type : undefined) ?? ApplicationCommandType.ChatInput);
  const otherHandlers = [...HANDLER_OF_KIND.values()].filter((other) => other !== handler);
  return (
    handler !== undefined &&
    hasFunction(value, handler) &&
    otherHandlers.every((other) => Reflect.get(value, other) === undefined) &&
    ['autocomplete', 'button', 'modal', 'requires', 'answers', 'userInstall'].every(
      (key) => Reflect.get(value, key) === undefined || hasFunction(value, key),
    )
  );
}
