import { ActionRowBuilder, ModalBuilder, TextInputBuilder, TextInputStyle, type Attachment, type ModalSubmitInteraction, type RepliableInteraction } from 'discord.js';
import { answerPrivately, deferPublicly } from '../discord/answer.ts';
import type { DurationRange } from '../gateway/spec.ts';
import { refuse, type Result } from '../lib/result.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import type { Services } from '../services.ts';
import type { Prepared } from '../video/plan.ts';
import type { AttachmentInput } from '../video/requests.ts';
import { SubmissionRefusedError } from '../video/submit.ts';

// What the commands that make videos share (/video, its buttons and forms, and the message commands that
// act on a message's picture or video): the interaction as the video part sees it, submitting a prepared
// request behind its status card, and the forms that ask for a prompt and a number of seconds.

const DEFAULT_ATTACHMENT_LIMIT = 10 * 1024 * 1024;
/** The fields of a video form. */
export const FORM_FIELDS = { prompt: 'prompt', seconds: 'duration' } as const;
const MAX_PROMPT_LENGTH = 4000;
/** Two digits: every duration the gateway takes. */
const MAX_SECONDS_LENGTH = 2;

/** An attachment as the video part takes it. */
export function attachmentInput(attachment: Attachment): AttachmentInput {
  return { url: attachment.url, filename: attachment.name, contentType: attachment.contentType ?? undefined, size: attachment.size };
}

/**
 * The interaction's context, made as soon as its handler runs (the dispatcher checked access, a store
 * read): "received" is now to within milliseconds, and its token lives 15 minutes from about then.
 */
export function interactionContext(interaction: RepliableInteraction): InteractionContext {
  if (!interaction.guildId || !interaction.channelId) throw new Error('videos are made in servers only');
  return {
    guildId: interaction.guildId,
    channelId: interaction.channelId,
    userId: interaction.user.id,
    applicationId: interaction.applicationId,
    interactionToken: interaction.token,
    interactionReceivedAt: Date.now(),
    attachmentSizeLimit: interaction.attachmentSizeLimit || DEFAULT_ATTACHMENT_LIMIT,
  };
}

/**
 * Answers a prepared request: refused at once (ephemeral), or deferred and submitted with a status card.
 * Preparing reads only the local store, so the answer is well within Discord's 3 s; whatever needs the
 * network (Discord, the gateway) comes after the deferral.
 */
export async function submitPrepared(interaction: RepliableInteraction, services: Services, context: InteractionContext, prepared: Prepared): Promise<void> {
  if (!prepared.ok) {
    await answerPrivately(interaction, prepared.message);
    return;
  }
  await deferPublicly(interaction);
  try {
    await services.video.submit(prepared.plan, context);
  } catch (error) {
    if (!(error instanceof SubmissionRefusedError)) throw error;
    await answerPrivately(interaction, error.message);
  }
}

export interface VideoFormShape {
  id: string;
  title: string;
  /** Whether the prompt may be left empty (a picture to animate says enough by itself). */
  promptOptional?: boolean;
  /** A field for a number of seconds, with what the label calls it (`Seconds to add`) and its range. */
  seconds?: { label: string; range: DurationRange };
}

/** A form asking for a prompt and, when `seconds` is given, a number of seconds. */
export function videoForm(shape: VideoFormShape): ModalBuilder {
  const modal = new ModalBuilder().setCustomId(shape.id).setTitle(shape.title);
  const prompt = new TextInputBuilder()
    .setCustomId(FORM_FIELDS.prompt)
    .setLabel(shape.promptOptional ? 'Prompt (optional)' : 'Prompt')
    .setStyle(TextInputStyle.Paragraph)
    .setRequired(!shape.promptOptional)
    .setMaxLength(MAX_PROMPT_LENGTH);
  modal.addComponents(new ActionRowBuilder<TextInputBuilder>().addComponents(prompt));
  if (shape.seconds) {
    const { label, range } = shape.seconds;
    const seconds = new TextInputBuilder()
      .setCustomId(FORM_FIELDS.seconds)
      .setLabel(`${label} (${range.min}-${range.max}, default ${range.default})`)
      .setStyle(TextInputStyle.Short)
      .setRequired(false)
      .setMaxLength(MAX_SECONDS_LENGTH);
    modal.addComponents(new ActionRowBuilder<TextInputBuilder>().addComponents(seconds));
  }
  return modal;
}

/** What a video form's member typed: the prompt (empty when left out) and the seconds (undefined when left out), or why the seconds will not do. */
export function readVideoForm(interaction: ModalSubmitInteraction, seconds?: { label: string; range: DurationRange }): Result<{ prompt: string; seconds: number | undefined }> {
  const prompt = interaction.fields.getTextInputValue(FORM_FIELDS.prompt).trim();
  if (!seconds) return { ok: true, prompt, seconds: undefined };
  const text = interaction.fields.getTextInputValue(FORM_FIELDS.seconds).trim();
  if (text === '') return { ok: true, prompt, seconds: undefined };
  const value = Number(text);
  const { min, max } = seconds.range;
  if (!Number.isInteger(value) || value < min || value > max) return refuse(`${seconds.label} must be a whole number from ${min} to ${max} (got "${text}").`);
  return { ok: true, prompt, seconds: value };
}
