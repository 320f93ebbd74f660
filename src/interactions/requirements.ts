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
import { settledWithin } from '../lib/wait-until.ts';
import type { Feature, ServerRules } from '../settings/guild-settings.ts';
import { channelRefusal, memberRefusal } from '../settings/rules.ts';
import { word, type Notice, type Outcome } from '../wording/notice.ts';

// What a member needs before a command's handler runs, declared by the command and checked once, here,
// by the dispatcher (the preconditions of mature command frameworks): no handler repeats these checks,
// and every refusal reads the same way. The server's moderators' rules (`/config rules`) apply to every
// command, button and form in a server, whatever it requires: a member they denied is refused them all.

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
   * Only in the channels the server keeps this feature to (`/config rules video_channels`), a thread
   * counting as its channel: for every `/video` subcommand, a message command and its form, not for a
   * press under a card already posted (nor its form), which is where the card is.
   */
  channelsOf?: Feature;
  /**
   * What the member tried, for the refusal (default: the command as typed, e.g. `/video usage`): words in the
   * member's language, or a name that reads the same in every language (`**Animate image**`).
   */
  what?: string | ((locale: Locale) => string);
  /**
   * Even a member the moderators denied may do this: a member's own choice about the bot (not to be heard
   * by it) is never refused.
   */
  evenDenied?: boolean;
}

/** Whether a member with these roles may use a feature on a server (the server's role rules), or why not. */
export type FeatureAccess = (
  guildId: string,
  feature: Feature,
  memberRoleIds: readonly string[],
  isServerManager: boolean,
) => Promise<Outcome>;

/** A server's moderators' rules, as the dispatcher checks them (read once per interaction). */
export type ServerRulesReader = (guildId: string) => Promise<Pick<ServerRules, 'denied' | 'videoChannels'>>;

/** What a requirement is checked against: the server's role rules and its moderators' rules. */
export interface ServerAccess {
  feature: FeatureAccess;
  rules: ServerRulesReader;
}

/** How long an interaction answered with a form waits for the server's rules: Discord's 3 s run from the click. */
export const FORM_RULES_WITHIN_MS = 1_000;

/** The language of a private answer to this interaction: the member's, else the server's, else English. */
export function memberLocale(interaction: Pick<HandledInteraction, 'locale' | 'guildLocale'>): Locale {
  return resolveLocale(interaction.locale, interaction.guildLocale, 'member');
}

/** The language of what the bot posts where everyone in the server reads it: the server's, else the member's, else English. */
export function channelLocale(interaction: Pick<HandledInteraction, 'locale' | 'guildLocale'>): Locale {
  return resolveLocale(interaction.locale, interaction.guildLocale, 'channel');
}

/** What a slash command's name may be (Discord's rule for names in lowercase scripts). */
const SLASH_COMMAND_NAME = /^[-_\p{Ll}\p{Lo}\p{N}]{1,32}$/u;

/** The command as the member invoked it: `/voice settings`, **Animate image** from a message's Apps menu, or `/video` for its buttons and forms. */
export function invoked(interaction: HandledInteraction): string {
  if (interaction.isMessageContextMenuCommand()) return `**${interaction.commandName}**`;
  if (!interaction.isChatInputCommand()) {
    const name = customIdParts(interaction.customId)[0] ?? '';
    // A message command's form carries the command's name, which no slash command could have (capitals, spaces).
    return SLASH_COMMAND_NAME.test(name) ? `\`/${name}\`` : `**${name}**`;
  }
  const sub = interaction.options.getSubcommand(false);
  return `\`/${interaction.commandName}${sub ? ` ${sub}` : ''}\``;
}

/** Where the interaction happened: its channel, and a thread's parent (which the interaction's channel object carries). */
function placeOf(interaction: HandledInteraction): string[] {
  const channel = interaction.channel;
  const parentId = channel?.isThread() ? channel.parentId : null;
  return [interaction.channelId, parentId].filter((id): id is string => typeof id === 'string');
}

/**
 * The server's rules; for an interaction answered with a form (`withinMs`), only when the store gives them
 * in time for the form, else undefined: the form's submission is checked in any case, and reads them again.
 */
async function rulesFor(guildId: string, access: ServerAccess, withinMs: number | undefined) {
  if (withinMs === undefined) return access.rules(guildId);
  // A read that fails is the submission's to report: it reads the store again, and says when it cannot.
  return settledWithin(
    access.rules(guildId).catch(() => undefined),
    withinMs,
  );
}

/**
 * A requirement checked: let through, or refused in the member's words; a refusal by one of the server's
 * rules (a denied member, its role rules, its video channels) carries that rule's notice as well, for the
 * server's moderation log (a refusal for want of a server or of Manage Server is no rule of the server's).
 */
export type RequirementVerdict = Result<object, { byRule?: Notice }>;

/**
 * Checks a requirement in order (server, the member not denied, permission, role rules, channel); a
 * refusal says what is missing and for what. In a server the moderators' rules are read whatever the
 * requirement (none: `{}`): a denied member is refused even what needs nothing else. `formWithinMs`: the
 * interaction is answered with a form, which must come at once; the rules are waited for that long at most.
 */
export async function checkRequirement(
  interaction: HandledInteraction,
  requirement: Requirement,
  access: ServerAccess,
  formWithinMs?: number,
): Promise<RequirementVerdict> {
  const locale = memberLocale(interaction);
  const what = typeof requirement.what === 'function' ? requirement.what(locale) : (requirement.what ?? invoked(interaction));
  const guildId = interaction.guildId;
  const needsServer =
    requirement.inServer === true ||
    requirement.manageServer === true ||
    requirement.feature !== undefined ||
    requirement.channelsOf !== undefined;
  if (needsServer && !guildId) return refuse(t(locale, 'requirement.in-server', { what }));
  if (!guildId) return { ok: true };
  const rules = await rulesFor(guildId, access, formWithinMs);
  // Admins too: /config keeps a member from denying themselves or the owner, so the server can always undo it.
  const denied = rules && memberRefusal(rules, interaction.user.id);
  if (denied && !denied.ok && !requirement.evenDenied) return byRule(locale, denied.notice);
  const manager = isServerManager(interaction);
  if (requirement.manageServer && !manager) return refuse(t(locale, 'requirement.manage-server', { what }));
  if (requirement.feature) {
    const allowed = await access.feature(guildId, requirement.feature, memberRoleIds(interaction), manager);
    if (!allowed.ok) return byRule(locale, allowed.notice);
  }
  if (requirement.channelsOf && rules) {
    const here = channelRefusal(rules, requirement.channelsOf, { channelIds: placeOf(interaction), what });
    if (!here.ok) return byRule(locale, here.notice);
  }
  return { ok: true };
}

function byRule(locale: Locale, rule: Notice): RequirementVerdict {
  return { ...refuse(word(locale, rule)), byRule: rule };
}

/** The server of an interaction the dispatcher let through only in a server (an invariant, not input). */
export function guildOf(interaction: HandledInteraction): string {
  if (!interaction.guildId) throw new Error(`${invoked(interaction)} reached its handler outside a server`);
  return interaction.guildId;
}
