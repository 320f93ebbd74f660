import type { ChatInputCommandInteraction, ModalSubmitInteraction } from 'discord.js';
import { answerPrivately, showForm } from '../../discord/answer.ts';
import { t } from '../../i18n/index.ts';
import type { Services } from '../../services.ts';
import { uploadFormId } from '../../video/actions.ts';
import { guildOf, memberLocale } from '../requirements.ts';
import { interactionContext } from './context.ts';
import { formEstimate } from './form-defaults.ts';
import { FORM_FIELDS, uploadedFile } from './form-fields.ts';
import { submitPrepared } from './submission.ts';
import { SECONDS_TO_ADD, readVideoForm, videoForm } from './video-form.ts';

// `/video edit` and `/video extend` given no source (neither `video` nor `task`): a form with the prompt
// (and seconds) given, and the `.mp4` to upload, checked as the `video` option is.

/** The longest model name an upload form's id carries (custom ids are at most 100 characters). */
const MAX_MODEL_IN_FORM_ID = 64;

/** The `.mp4` a form asks for, checked as the `video` option is. */
const VIDEO_UPLOAD = {
  id: FORM_FIELDS.video,
  label: 'video.form.video-upload',
  description: 'video.form.video-upload.description',
  required: true,
} as const;

/** Whether this is `/video edit` or `/video extend` given no source: it opens a form that takes the `.mp4`. */
export function opensUploadForm(interaction: ChatInputCommandInteraction): boolean {
  const subcommand = interaction.options.getSubcommand(false);
  const { options } = interaction;
  return (subcommand === 'edit' || subcommand === 'extend') && !options.getAttachment('video') && !options.getString('task');
}

/** `/video edit` or `/video extend` without a source: a form with the prompt (and seconds) given, and the `.mp4` to upload. */
export async function openUploadForm(
  interaction: ChatInputCommandInteraction,
  services: Services,
  operation: 'edit' | 'extend',
): Promise<void> {
  const options = interaction.options;
  const locale = memberLocale(interaction);
  const model = options.getString('model') ?? undefined;
  if (model !== undefined && model.length > MAX_MODEL_IN_FORM_ID) {
    await answerPrivately(interaction, t(locale, 'video.refusal.not-a-model', { model: model.slice(0, MAX_MODEL_IN_FORM_ID) }));
    return;
  }
  const estimate = await formEstimate(services, guildOf(interaction), operation);
  await showForm(
    interaction,
    videoForm(locale, {
      id: uploadFormId(operation, model),
      title: operation === 'extend' ? 'video.form.extend-title' : 'video.form.edit-title',
      estimate,
      ...(operation === 'extend' ? { seconds: SECONDS_TO_ADD } : {}),
      prefill: { prompt: options.getString('prompt') ?? undefined, seconds: options.getInteger('duration') ?? undefined },
      uploads: [VIDEO_UPLOAD],
    }),
  );
}

/** The upload form submitted: the uploaded `.mp4` edited or extended with `model`, behind a status card. */
export async function submitUploadForm(
  interaction: ModalSubmitInteraction,
  services: Services,
  operation: 'edit' | 'extend',
  model: string | undefined,
): Promise<void> {
  const form = readVideoForm(interaction, operation === 'extend' ? SECONDS_TO_ADD : undefined);
  if (!form.ok) {
    await answerPrivately(interaction, form.message);
    return;
  }
  const video = uploadedFile(interaction, FORM_FIELDS.video);
  if (!video) {
    await answerPrivately(interaction, t(memberLocale(interaction), 'video.refusal.upload-the-mp4', { operation }));
    return;
  }
  const context = interactionContext(interaction);
  const prepared = await services.video.prepare.editOrExtension(context, operation, {
    prompt: form.prompt,
    model,
    duration: form.seconds,
    source: { attachment: video },
  });
  await submitPrepared(interaction, services, context, prepared);
}
