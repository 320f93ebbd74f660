import { resolveLocale, t } from '../i18n/index.ts';
import { silentLogger, type Logger } from '../lib/log.ts';
import { brokenLimit, brokenModalLimit, type BrokenLimit, type MessageParts } from './message-limits.ts';
import type { ComponentsV2Message } from './outbox.ts';
import {
  MessageFlags,
  type APIActionRowComponent,
  type APIComponentInMessageActionRow,
  type APIEmbed,
  type ButtonInteraction,
  type InteractionEditReplyOptions,
  type InteractionReplyOptions,
  type APIModalInteractionResponseCallbackData,
  type Interaction,
  type ModalBuilder,
  type RepliableInteraction,
} from 'discord.js';

// Answering an interaction, the one way handlers and the dispatcher do it. Discord drops an interaction
// that is not answered within 3 s; work that needs the store or the network may take longer (a stalled
// store answers only at its deadline), so acknowledgeWhileSlow() defers it after ACKNOWLEDGE_WITHIN_MS
// with the placeholder the command chose. Every answer below waits for that deferral and adapts to it, and
// the deferral never starts while an answer is on its way: the two never cross.

/**
 * Where an answer over Discord's limits is reported: the log of whoever handles the interaction (the
 * dispatcher's, at the operator's LOG_LEVEL), set by reportAnswersTo(); answers are given from every
 * handler, which need not hand one down for this alone.
 */
const answerLogs = new WeakMap<Interaction, Logger>();

/** Answers to `interaction` report what Discord would refuse of them to `log`. Unset, nothing is logged. */
export function reportAnswersTo(interaction: Interaction, log: Logger): void {
  answerLogs.set(interaction, log);
}

/** Logs, once, that an answer was not sent as it was, with the limit it breaks. */
function logBrokenLimit(interaction: RepliableInteraction, what: string, broken: BrokenLimit): void {
  (answerLogs.get(interaction) ?? silentLogger).warn(`${what} over a Discord limit, not sent`, {
    interaction: interaction.id,
    command: interaction.isCommand() ? interaction.commandName : undefined,
    ...broken,
  });
}

/** The short answer that stands for one Discord would refuse, in the member's language. */
export function tooLongAnswer(interaction: Interaction): string {
  return t(resolveLocale(interaction.locale, interaction.guildLocale, 'member'), 'answer.too-long');
}

/** Leaves a second and a half of Discord's three for the deferral to arrive. */
const ACKNOWLEDGE_WITHIN_MS = 1_500;

/** Who sees an answer (and its "thinking…" placeholder while it is slow): everyone in the channel, or the member. */
export type AnswerVisibility = 'public' | 'private';

/** Deferrals started by acknowledgeWhileSlow(), which every answer waits for first. */
const deferrals = new WeakMap<RepliableInteraction, Promise<unknown>>();
/** Interactions an answer has started for: no deferral may start after that. */
const answering = new WeakSet<RepliableInteraction>();

/** Marks the interaction as being answered, once any deferral under way has arrived. */
async function startAnswer(interaction: RepliableInteraction): Promise<void> {
  answering.add(interaction);
  await deferrals.get(interaction);
}

/**
 * Runs `handle`; if the interaction is still unanswered after ACKNOWLEDGE_WITHIN_MS, defers it meanwhile
 * with a placeholder only `visibility` sees. Answers given through this module adapt to the deferral.
 */
export async function acknowledgeWhileSlow(
  interaction: RepliableInteraction,
  visibility: AnswerVisibility,
  handle: () => Promise<void>,
): Promise<void> {
  const timer = setTimeout(() => {
    if (answering.has(interaction) || interaction.deferred || interaction.replied) return;
    const deferral = interaction.deferReply(visibility === 'private' ? { flags: MessageFlags.Ephemeral } : {});
    // Its failure reaches whoever answers next (startAnswer awaits it); unanswered, it must not go unheard.
    deferral.catch(() => undefined);
    deferrals.set(interaction, deferral);
  }, ACKNOWLEDGE_WITHIN_MS);
  try {
    await handle();
  } finally {
    clearTimeout(timer);
  }
}

/** A public "thinking…" placeholder that a later edit (the status card) replaces; nothing when one is shown already. */
export async function deferPublicly(interaction: RepliableInteraction): Promise<void> {
  await startAnswer(interaction);
  if (!interaction.deferred && !interaction.replied) await interaction.deferReply();
}

export type PrivateAnswer =
  | string
  | {
      content?: string;
      embeds?: APIEmbed[];
      files?: { name: string; data: Buffer }[];
      /** Buttons only the member sees (a question to answer). */
      components?: APIActionRowComponent<APIComponentInMessageActionRow>[];
    }
  /** A card laid out in Components V2 (a status card, shown to the member alone). */
  | { card: ComponentsV2Message };

/** Which message an interaction's private answer is, for an edit through its token: `@original`, or a follow-up's id. */
export type AnswerMessageId = string;

/**
 * Tells only the member who acted, whatever the interaction has answered so far: a first reply is
 * ephemeral; a private "thinking…" placeholder becomes the message; a public one is removed rather than
 * edited (the whole channel would read it) and the message follows privately; after a deferUpdate the
 * message with the component stays as it was. Mentions never ping anyone.
 */
export async function answerPrivately(interaction: RepliableInteraction, answer: PrivateAnswer): Promise<void> {
  await askPrivately(interaction, answer);
}

/**
 * answerPrivately(), for an answer the bot edits later through the interaction's token (a question whose
 * buttons are pressed): which message it is, `@original` or the follow-up's id.
 */
export async function askPrivately(interaction: RepliableInteraction, answer: PrivateAnswer): Promise<AnswerMessageId> {
  await startAnswer(interaction);
  const { message, edit } = privatePayloads(withinLimits(interaction, answer));
  if (!interaction.deferred && !interaction.replied) {
    await interaction.reply(message);
    return '@original';
  }
  const placeholderShown = interaction.deferred && !interaction.replied;
  // deferReply sets `ephemeral` to true or false; deferUpdate leaves it null (no placeholder of its own).
  if (placeholderShown && interaction.ephemeral === true) {
    await interaction.editReply(edit);
    return '@original';
  }
  if (placeholderShown && interaction.ephemeral === false) {
    // A placeholder that cannot be removed (already gone, say) must not keep the member from the answer.
    await interaction.deleteReply().catch(() => undefined);
  }
  return (await interaction.followUp(message)).id;
}

/** What of an answer Discord's limits apply to. */
function partsOf(answer: PrivateAnswer): MessageParts {
  if (typeof answer === 'string') return { content: answer };
  if ('card' in answer) return { card: answer.card.components };
  return answer;
}

/**
 * `answer`, or when it breaks one of Discord's limits (Discord would refuse it whole, and the member would
 * hear only that something went wrong), a short answer in the member's language that says it was too long
 * to show; the log names the limit, never the answer's text.
 */
function withinLimits<Answer extends PrivateAnswer>(interaction: RepliableInteraction, answer: Answer): Answer | string {
  const broken = brokenLimit(partsOf(answer), interaction.attachmentSizeLimit);
  if (!broken) return answer;
  logBrokenLimit(interaction, 'private answer', broken);
  return tooLongAnswer(interaction);
}

/** An interaction a form can answer: a command, or a press on a button or a menu. */
type FormAsker = Extract<RepliableInteraction, { showModal: unknown }>;

/**
 * Shows a form (a modal); one Discord would refuse (a title or label too long, too many rows) is not
 * shown: the member reads privately that it was too long to show, and the log names the limit.
 */
export async function showForm(interaction: FormAsker, form: ModalBuilder | APIModalInteractionResponseCallbackData): Promise<void> {
  await startAnswer(interaction);
  const broken = brokenModalLimit('toJSON' in form ? form.toJSON() : form);
  if (!broken) {
    await interaction.showModal(form);
    return;
  }
  logBrokenLimit(interaction, 'form', broken);
  await answerPrivately(interaction, tooLongAnswer(interaction));
}

/**
 * A private answer as a new message (a reply or a follow-up, ephemeral) and as the edit of a private
 * placeholder (which is ephemeral already, and whose content, buttons and embeds it replaces). A
 * Components V2 card carries its flag and no content or embeds.
 */
function privatePayloads(answer: PrivateAnswer): { message: InteractionReplyOptions; edit: InteractionEditReplyOptions } {
  if (typeof answer !== 'string' && 'card' in answer) {
    const { components, flags } = answer.card;
    return {
      message: { components, flags: flags | MessageFlags.Ephemeral, allowedMentions: { parse: [] } },
      edit: { components, flags, allowedMentions: { parse: [] } },
    };
  }
  const { files: given, ...body } = typeof answer === 'string' ? { content: answer } : answer;
  const files = (given ?? []).map((file) => ({ attachment: file.data, name: file.name }));
  return {
    message: { ...body, files, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } },
    edit: {
      content: body.content ?? null,
      components: body.components ?? [],
      embeds: body.embeds ?? [],
      files,
      allowedMentions: { parse: [] },
    },
  };
}

/**
 * Replaces the private message a member's button sits on (a question they answered) with `content`, its
 * buttons removed; when the press was already deferred (a slow store), the content comes as a private
 * answer instead.
 */
export async function replacePrivateMessage(interaction: ButtonInteraction, content: string): Promise<void> {
  await startAnswer(interaction);
  if (interaction.deferred || interaction.replied) {
    await answerPrivately(interaction, content);
    return;
  }
  await interaction.update({ content: withinLimits(interaction, content), components: [], embeds: [], allowedMentions: { parse: [] } });
}
