import type { Message, MessageContextMenuCommandInteraction, ModalSubmitInteraction } from 'discord.js';
import { answerPrivately, showForm } from '../../discord/answer.ts';
import { customId, customIdParts } from '../../discord/custom-id.ts';
import type { VideoOperation } from '../../gateway/spec.ts';
import { t, type MessageKey } from '../../i18n/index.ts';
import type { InteractionContext } from '../../ports/interaction-context.ts';
import type { Services } from '../../services.ts';
import { word } from '../../wording/notice.ts';
import { missingSource, pickImage, pickVideo, type EmbeddedPicture, type MessageMedia } from '../../video/message-sources.ts';
import type { Prepared } from '../../video/plan.ts';
import type { AttachmentInput } from '../../video/requests.ts';
import type { Command } from '../command.ts';
import { scopeOf, userInstallUse } from '../installation.ts';
import { memberLocale } from '../requirements.ts';
import { attachmentInput, interactionContext } from './context.ts';
import { formEstimate, formVariants } from './form-defaults.ts';
import { uploadedFile } from './form-fields.ts';
import { submitPrepared } from './submission.ts';
import { readVideoForm, selectedVariants, videoForm, type VideoFormShape } from './video-form.ts';

// Message commands: a video from a message's picture or .mp4 (the Apps menu on a message). Each command
// file declares what it needs and how its video is prepared; this makes its handlers.

/** A message command that makes a video from what a message carries. */
export interface MessageVideoCommand {
  /** Its name in the Apps menu, also the first part of its form's id. */
  name: string;
  /** Its name in each language (`command.<name>.name`), as the member's Apps menu shows it. */
  nameKey: MessageKey;
  /** What it needs of the message: a picture, or an .mp4. */
  needs: 'image' | 'video';
  /** What it makes of it (its form shows the estimate of that). */
  operation: VideoOperation;
  form: Omit<VideoFormShape, 'id' | 'variants'>;
  /** Whether its form asks how many variants to make (a generation), starting at the server's default. */
  variants?: boolean;
}

/** What a member filled in: the prompt, the seconds, the variants picked, and each upload field's file (by field id) they gave. */
export type FilledVideoForm = {
  prompt: string;
  seconds: number | undefined;
  variants: number | undefined;
  uploads: Partial<Record<string, AttachmentInput>>;
};

/** How a message command's video is prepared, from the source the member picked and what they filled in. */
export type PrepareFromSource = (
  services: Services,
  context: InteractionContext,
  source: AttachmentInput,
  form: FilledVideoForm,
) => Promise<Prepared>;

function embeddedPicture(picture: { url: string; proxyURL?: string } | null): EmbeddedPicture | undefined {
  return picture ? { url: picture.url, proxyUrl: picture.proxyURL } : undefined;
}

/** What a Discord message carries that could become a video's source, as the video part reads it. */
function messageMedia(message: Message): MessageMedia {
  return {
    attachments: message.attachments.map(attachmentInput),
    embeds: message.embeds.map((embed) => ({
      type: embed.data.type,
      image: embeddedPicture(embed.image),
      thumbnail: embeddedPicture(embed.thumbnail),
    })),
  };
}

/** Picks the message's picture or .mp4 and opens the command's form for it, or tells the member privately what the command needs. */
async function openSourceForm(
  interaction: MessageContextMenuCommandInteraction,
  services: Services,
  command: MessageVideoCommand,
): Promise<void> {
  const media = messageMedia(interaction.targetMessage);
  const source = command.needs === 'image' ? pickImage(media) : pickVideo(media);
  const locale = memberLocale(interaction);
  if (!source) {
    await answerPrivately(interaction, word(locale, missingSource(t(locale, command.nameKey), command.needs, media)));
    return;
  }
  // Kept beside the form rather than before it, so a slow store cannot make the form late; a form whose
  // pick was not kept asks the member to start again when it is submitted.
  const scope = scopeOf(interaction);
  const keeping = services.video.sourceForms
    .keep(interaction.id, { guildId: scope, userId: interaction.user.id, source })
    .catch((error: unknown) => {
      services.log.warn('could not keep the source picked with a message command; its form will ask to start again', {
        command: command.name,
        error,
      });
    });
  const [estimate, variants] = await Promise.all([
    formEstimate(services, scope, command.operation),
    command.variants ? formVariants(services, scope) : undefined,
  ]);
  // Through a member's own install no server's defaults apply: a default the form names is the bot's.
  const seconds =
    command.form.seconds && userInstallUse(interaction) ? { ...command.form.seconds, serverDefault: false } : command.form.seconds;
  await showForm(
    interaction,
    videoForm(locale, {
      ...command.form,
      ...(seconds ? { seconds } : {}),
      id: customId(command.name, interaction.id),
      estimate,
      ...(variants === undefined ? {} : { variants: { chosen: variants } }),
    }),
  );
  await keeping;
}

/**
 * Submits a message command's form: its source and fields, prepared by the video part (`prepare`) with the
 * same rules, limits and defaults as /video, and followed on a status card.
 */
async function submitSourceForm(
  interaction: ModalSubmitInteraction,
  services: Services,
  command: MessageVideoCommand,
  prepare: PrepareFromSource,
): Promise<void> {
  const formId = customIdParts(interaction.customId)[1] ?? '';
  const source = await services.video.sourceForms.find(formId, scopeOf(interaction), interaction.user.id);
  if (!source) {
    const locale = memberLocale(interaction);
    await answerPrivately(interaction, t(locale, 'video.form.no-longer-open', { command: t(locale, command.nameKey) }));
    return;
  }
  const form = readVideoForm(interaction, command.form.seconds);
  if (!form.ok) {
    await answerPrivately(interaction, form.message);
    return;
  }
  const uploads: FilledVideoForm['uploads'] = {};
  for (const field of command.form.uploads ?? []) uploads[field.id] = uploadedFile(interaction, field.id);
  const context = interactionContext(interaction);
  await submitPrepared(
    interaction,
    services,
    context,
    await prepare(services, context, source, { ...form, variants: selectedVariants(interaction), uploads }),
  );
}

/**
 * The handlers of a message command that makes a video from a message's picture or .mp4: its form
 * (opened at once, within Discord's 3 s), then, when the form is submitted, the server's role rules for
 * /video (read from the store, so only then, as for the Extend and Edit buttons) and the video, prepared
 * by `prepare` and followed on a status card everyone sees.
 */
export function messageVideoHandlers(
  command: MessageVideoCommand,
  prepare: PrepareFromSource,
): Required<Pick<Command, 'requires' | 'answers' | 'messageCommand' | 'modal' | 'userInstall'>> {
  return {
    // Anywhere the member is, through their own install too: the message's picture or .mp4 is all it needs.
    userInstall: () => true,
    // In the channels the server keeps videos to: the form is refused there at once when the store
    // answers in time for it, its submission in any case.
    requires: (interaction) =>
      interaction.isModalSubmit()
        ? { feature: 'video', channelsOf: 'video', what: (locale) => `**${t(locale, command.nameKey)}**` }
        : { inServer: true, channelsOf: 'video' },
    answers: (interaction) => (interaction.isModalSubmit() ? 'public' : 'form'),
    messageCommand: (interaction, services) => openSourceForm(interaction, services, command),
    modal: (interaction, services) => submitSourceForm(interaction, services, command, prepare),
  };
}
