import { randomBytes } from 'node:crypto';
import type { Interaction } from 'discord.js';
import { answerPrivately } from '../discord/answer.ts';
import type { Logger } from '../lib/log.ts';
import { customIdParts } from '../discord/custom-id.ts';
import type { Command } from './command.ts';
import { checkRequirement, type FeatureAccess, type HandledInteraction } from './requirements.ts';

// Routes every interaction to its command module, and keeps the bot alive whatever a handler does: a
// handler that throws gives the user an ephemeral "something went wrong (ref ...)" and the log a line
// with the same reference.

export interface Dispatcher {
  handle(interaction: Interaction): Promise<void>;
  /** Stop taking new interactions (they get a "restarting" answer) and wait for those in flight. */
  drain(): Promise<void>;
}

const RESTARTING = 'The bot is restarting. Try again in a minute.';

/** Short and unambiguous, so a user can read it out to an admin. */
function errorReference(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  return [...randomBytes(6)].map((byte) => alphabet[byte % alphabet.length]).join('');
}

function describe(interaction: Interaction): Record<string, unknown> {
  return {
    interaction: interaction.id,
    type: interaction.type,
    guild: interaction.guildId,
    user: interaction.user.id,
    command: interaction.isCommand() || interaction.isAutocomplete() ? interaction.commandName : undefined,
    customId: interaction.isMessageComponent() || interaction.isModalSubmit() ? interaction.customId : undefined,
  };
}

export interface DispatcherOptions {
  /** The server's role rules, for commands that require a feature (default: everyone may). */
  featureAccess?: FeatureAccess;
}

const EVERYONE: FeatureAccess = () => Promise.resolve({ ok: true });

/** `services` goes to every handler; the dispatcher itself only logs through it. */
export function createDispatcher<S extends { log: Logger }>(commands: ReadonlyMap<string, Command<S>>, services: S, options: DispatcherOptions = {}): Dispatcher {
  const log = services.log;
  const featureAccess = options.featureAccess ?? EVERYONE;
  const inFlight = new Set<Promise<void>>();
  let accepting = true;

  /** The command's requirement for this interaction, checked; false when the member was refused (and told why). */
  async function permitted(command: Command<S>, interaction: HandledInteraction): Promise<boolean> {
    const requirement = command.requires?.(interaction);
    if (!requirement) return true;
    const verdict = await checkRequirement(interaction, requirement, featureAccess);
    if (!verdict.ok) await answerPrivately(interaction, verdict.message);
    return verdict.ok;
  }

  async function route(interaction: Interaction): Promise<void> {
    if (interaction.isAutocomplete()) {
      const command = commands.get(interaction.commandName);
      if (command?.autocomplete) await command.autocomplete(interaction, services);
      else await interaction.respond([]);
    } else if (interaction.isChatInputCommand()) {
      const command = commands.get(interaction.commandName);
      if (!command) throw new Error(`no command named ${interaction.commandName}`);
      if (await permitted(command, interaction)) await command.execute(interaction, services);
    } else if (interaction.isButton()) {
      const command = commands.get(customIdParts(interaction.customId)[0] ?? '');
      if (!command?.button) throw new Error(`no button handler for ${interaction.customId}`);
      if (await permitted(command, interaction)) await command.button(interaction, services);
    } else if (interaction.isModalSubmit()) {
      const command = commands.get(customIdParts(interaction.customId)[0] ?? '');
      if (!command?.modal) throw new Error(`no modal handler for ${interaction.customId}`);
      if (await permitted(command, interaction)) await command.modal(interaction, services);
    }
  }

  async function run(interaction: Interaction): Promise<void> {
    try {
      await route(interaction);
    } catch (error) {
      const reference = errorReference();
      log.error('interaction handler failed', { ...describe(interaction), reference, error });
      if (!interaction.isRepliable()) return;
      try {
        await answerPrivately(interaction, `Something went wrong (ref ${reference}). If it keeps happening, give this reference to the bot's operator.`);
      } catch (replyError) {
        log.warn('could not tell the user about a failed interaction', { reference, error: replyError });
      }
    }
  }

  return {
    async handle(interaction) {
      if (!accepting) {
        if (interaction.isRepliable()) await answerPrivately(interaction, RESTARTING).catch(() => undefined);
        return;
      }
      const task = run(interaction);
      inFlight.add(task);
      try {
        await task;
      } finally {
        inFlight.delete(task);
      }
    },
    async drain() {
      accepting = false;
      await Promise.allSettled([...inFlight]);
    },
  };
}
