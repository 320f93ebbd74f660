import type {
  ButtonInteraction,
  ChatInputCommandInteraction,
  MessageContextMenuCommandInteraction,
  ModalSubmitInteraction,
} from 'discord.js';
import { customIdParts } from '../discord/custom-id.ts';
import { isServerManager, memberRoleIds } from '../discord/member.ts';
import { resolveLocale, t, type Locale } from '../i18n/index.ts';
import { refuse, type Result } from '../lib/result.ts';
import type { Feature } from '../settings/guild-settings.ts';
import { word, type Outcome } from '../wording/notice.ts';

// What a member needs before a command's handler runs, declared by the command and checked once, here,
// by the dispatcher (the preconditions of mature command frameworks): no handler repeats these checks,
// and every refusal reads the same way.

/** An interaction a handler answers: a slash command, a message command, a button or a form. */
export type HandledInteraction =
  ChatInputCommandInteraction | MessageContextMenuCommandInteraction | ButtonInteraction | ModalSubmitInteraction;

export interface Requirement {
  /** Only in a server, not in direct messages. */
  inServer?: boolean;
  /** The Manage Server permission (server admins), whatever the server's role rules say. */
  manageServer?: boolean;
  /** The server's role rules for this feature (`/config roles`); admins always pass. */
  feature?: Feature;
  /**
   * What the member tried, for the refusal (default: the command as typed, e.g. `/video usage`): words in the
   * member's language, or a name that reads the same in every language (`**Animate image**`).
   */
  what?: string | ((locale: Locale) => string);
}

/** Whether a member with these roles may use a feature on a server (the server's role rules), or why not. */
export type FeatureAccess = (
  guildId: string,
  feature: Feature,
  memberRoleIds: readonly string[],
  isServerManager: boolean,
) => Promise<Outcome>;

/** The language of a private answer to this interaction: the member's, else the server's, else English. */
export function memberLocale(interaction: Pick<HandledInteraction, 'locale' | 'guildLocale'>): Locale {
  return resolveLocale(interaction.locale, interaction.guildLocale, 'member');
}

/** The language of what the bot posts where everyone in the server reads it: the server's, else the member's, else English. */
export function channelLocale(interaction: Pick<HandledInteraction, 'locale' | 'guildLocale'>): Locale {
  return resolveLocale(interaction.locale, interaction.guildLocale, 'channel');
}

/** The command as the member invoked it: `/voice settings`, **Animate image** from a message's Apps menu, or `/video` for its buttons and forms. */
export function invoked(interaction: HandledInteraction): string {
  if (interaction.isMessageContextMenuCommand()) return `**${interaction.commandName}**`;
  if (!interaction.isChatInputCommand()) return `\`/${customIdParts(interaction.customId)[0] ?? ''}\``;
  const sub = interaction.options.getSubcommand(false);
  return `\`/${interaction.commandName}${sub ? ` ${sub}` : ''}\``;
}

/** Checks a requirement in order (server, permission, role rules); a refusal says what is missing and for what. */
export async function checkRequirement(
  interaction: HandledInteraction,
  requirement: Requirement,
  featureAccess: FeatureAccess,
): Promise<Result> {
  const locale = memberLocale(interaction);
  const what = typeof requirement.what === 'function' ? requirement.what(locale) : (requirement.what ?? invoked(interaction));
  const guildId = interaction.guildId;
  const needsServer = requirement.inServer === true || requirement.manageServer === true || requirement.feature !== undefined;
  if (needsServer && !guildId) return refuse(t(locale, 'requirement.in-server', { what }));
  const manager = isServerManager(interaction);
  if (requirement.manageServer && !manager) return refuse(t(locale, 'requirement.manage-server', { what }));
  if (requirement.feature && guildId) {
    const access = await featureAccess(guildId, requirement.feature, memberRoleIds(interaction), manager);
    if (!access.ok) return refuse(word(locale, access.notice));
  }
  return { ok: true };
}

/** The server of an interaction the dispatcher let through only in a server (an invariant, not input). */
export function guildOf(interaction: HandledInteraction): string {
  if (!interaction.guildId) throw new Error(`${invoked(interaction)} reached its handler outside a server`);
  return interaction.guildId;
}
