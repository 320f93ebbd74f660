import { randomBytes } from 'node:crypto';
import type { AutocompleteInteraction, Interaction } from 'discord.js';
import { acknowledgeWhileSlow, answerPrivately, reportAnswersTo, tooLongAnswer } from '../discord/answer.ts';
import { refusedFields } from '../discord/message-limits.ts';
import { StoreUnavailableError } from '../store/index.ts';
import type { Logger } from '../lib/log.ts';
import { customIdParts } from '../discord/custom-id.ts';
import type { Command } from './command.ts';
import { t, type Locale } from '../i18n/index.ts';
import {
  FORM_RULES_WITHIN_MS,
  checkRequirement,
  invoked,
  memberLocale,
  type FeatureAccess,
  type HandledInteraction,
  type ServerAccess,
  type ServerRulesReader,
} from './requirements.ts';
import { userInstallUse } from './installation.ts';
import type { ModerationLogPort } from '../ports/moderation-log.ts';

// Routes every interaction to its command module, and keeps the bot alive whatever a handler does: a
// handler that throws gives the user an ephemeral "something went wrong (ref ...)" and the log a line
// with the same reference; one whose answer Discord refused as an invalid form (a limit broken, 50035)
// tells them it was too long to show, and the log names the fields Discord named.

export interface Dispatcher {
  handle(interaction: Interaction): Promise<void>;
  /** Stop taking new interactions (they get a "restarting" answer) and wait for those in flight. */
  drain(): Promise<void>;
}

/** Discord drops autocomplete answers after 3 s; this leaves time for the answer to travel. */
const AUTOCOMPLETE_WITHIN_MS = 2_500;

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
  /** The server's moderators' rules (`/config rules`), for every interaction in a server (default: none). */
  serverRules?: ServerRulesReader;
  /** Whether members may use the bot through their own install of the app (USER_INSTALLS); default not. */
  userInstalls?: boolean;
  /** The servers' moderation logs, told of each interaction refused by a rule of its server's; default none. */
  moderationLog?: Pick<ModerationLogPort, 'refused'>;
}

const EVERYONE: FeatureAccess = () => Promise.resolve({ ok: true });
const NO_RULES: ServerRulesReader = () => Promise.resolve({ denied: [], videoChannels: [] });

/** `services` goes to every handler; the dispatcher itself only logs through it. */
export function createDispatcher<S extends { log: Logger }>(
  commands: ReadonlyMap<string, Command<S>>,
  services: S,
  options: DispatcherOptions = {},
): Dispatcher {
  const log = services.log;
  /** What a handler gets: the services, with a log whose every line names the interaction (one grep follows it). */
  const servicesFor = (interaction: Interaction): S => ({ ...services, log: log.child({ interaction: interaction.id }) });
  const access: ServerAccess = { feature: options.featureAccess ?? EVERYONE, rules: options.serverRules ?? NO_RULES };
  const inFlight = new Set<Promise<void>>();
  let accepting = true;

  /**
   * Why a use through the member's own install of the app is refused (user installs are off, or this
   * needs the server's install), in their language; undefined for a use that may go on. Such a use is
   * bound by no server's requirements (its role rules, Manage Server): the operator's limits apply instead.
   */
  function userInstallRefusal(command: Command<S>, interaction: HandledInteraction): string | undefined {
    const locale = memberLocale(interaction);
    if (!options.userInstalls) return t(locale, 'user-install.off');
    if (!command.userInstall?.(interaction)) return t(locale, 'user-install.server-only', { what: invoked(interaction) });
    return undefined;
  }

  /**
   * The command's requirement checked, then its handler, with the interaction deferred meanwhile if that
   * takes long (a requirement may read the store); a form must come first, so nothing is deferred for one.
   */
  async function handleWith(command: Command<S>, interaction: HandledInteraction, handler: () => Promise<void>): Promise<void> {
    const first = command.answers?.(interaction) ?? 'private';
    const handle = async () => {
      if (userInstallUse(interaction)) {
        const refusal = userInstallRefusal(command, interaction);
        if (refusal === undefined) await handler();
        else await answerPrivately(interaction, refusal);
        return;
      }
      // A command that requires nothing still meets the server's rules: a denied member is refused it.
      const requirement = command.requires?.(interaction) ?? {};
      const verdict = await checkRequirement(interaction, requirement, access, first === 'form' ? FORM_RULES_WITHIN_MS : undefined);
      if (verdict.ok) return handler();
      if (verdict.byRule && interaction.guildId)
        options.moderationLog?.refused({
          guildId: interaction.guildId,
          userId: interaction.user.id,
          what: 'command',
          command: invoked(interaction),
          why: verdict.byRule,
        });
      await answerPrivately(interaction, verdict.message);
    };
    if (first === 'form') await handle();
    else await acknowledgeWhileSlow(interaction, first, handle);
  }

  async function route(interaction: Interaction): Promise<void> {
    if (interaction.isAutocomplete()) {
      const command = commands.get(interaction.commandName);
      if (command?.autocomplete) await suggestInTime(interaction, command.autocomplete(interaction, servicesFor(interaction)));
      else await interaction.respond([]);
    } else if (interaction.isChatInputCommand()) {
      const command = commands.get(interaction.commandName);
      if (!command?.execute) throw new Error(`no slash command named ${interaction.commandName}`);
      await handleWith(command, interaction, () => command.execute?.(interaction, servicesFor(interaction)) ?? Promise.resolve());
    } else if (interaction.isMessageContextMenuCommand()) {
      const command = commands.get(interaction.commandName);
      if (!command?.messageCommand) throw new Error(`no message command named ${interaction.commandName}`);
      await handleWith(command, interaction, () => command.messageCommand?.(interaction, servicesFor(interaction)) ?? Promise.resolve());
    } else if (interaction.isButton()) {
      const command = commands.get(customIdParts(interaction.customId)[0] ?? '');
      if (!command?.button) throw new Error(`no button handler for ${interaction.customId}`);
      await handleWith(command, interaction, () => command.button?.(interaction, servicesFor(interaction)) ?? Promise.resolve());
    } else if (interaction.isModalSubmit()) {
      const command = commands.get(customIdParts(interaction.customId)[0] ?? '');
      if (!command?.modal) throw new Error(`no modal handler for ${interaction.customId}`);
      await handleWith(command, interaction, () => command.modal?.(interaction, servicesFor(interaction)) ?? Promise.resolve());
    }
  }

  /**
   * Discord drops suggestions that come after 3 s: when the handler is slower than that (a store at its
   * deadline), none are offered this keystroke, and what the handler suggests later is not sent.
   */
  async function suggestInTime(interaction: AutocompleteInteraction, suggesting: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), AUTOCOMPLETE_WITHIN_MS);
    });
    try {
      if ((await Promise.race([suggesting, late])) !== 'late') return;
    } finally {
      clearTimeout(timer);
    }
    suggesting.catch((error: unknown) => log.warn('a slow autocomplete failed after it was answered', { ...describe(interaction), error }));
    await interaction.respond([]);
  }

  async function run(interaction: Interaction): Promise<void> {
    reportAnswersTo(interaction, log.child({ interaction: interaction.id }));
    try {
      await route(interaction);
    } catch (error) {
      const fields = refusedFields(error);
      if (fields) {
        await tellTooLong(interaction, fields);
        return;
      }
      const reference = errorReference();
      const storeDown = error instanceof StoreUnavailableError;
      if (storeDown) log.warn('interaction stopped: the store is unavailable', { ...describe(interaction), reference, error });
      else log.error('interaction handler failed', { ...describe(interaction), reference, error });
      if (!interaction.isRepliable()) return;
      try {
        const locale: Locale = memberLocale(interaction);
        await answerPrivately(interaction, t(locale, storeDown ? 'dispatch.store-unavailable' : 'dispatch.failed', { reference }));
      } catch (replyError) {
        log.warn('could not tell the user about a failed interaction', { ...describe(interaction), reference, error: replyError });
      }
    }
  }

  /** A handler's answer that Discord refused field by field: logged with those fields, and the member told it was too long. */
  async function tellTooLong(interaction: Interaction, fields: string[]): Promise<void> {
    log.warn('Discord refused an answer as an invalid form (a limit broken), not sent', { ...describe(interaction), fields });
    if (!interaction.isRepliable()) return;
    await answerPrivately(interaction, tooLongAnswer(interaction)).catch((error: unknown) =>
      log.warn('could not tell the user their answer was too long to show', { ...describe(interaction), error }),
    );
  }

  return {
    async handle(interaction) {
      if (!accepting) {
        if (interaction.isRepliable())
          await answerPrivately(interaction, t(memberLocale(interaction), 'dispatch.restarting')).catch(() => undefined);
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
