import { ModalBuilder, type ModalSubmitInteraction } from 'discord.js';
import { t, type Locale } from '../../i18n/index.ts';
import { settingOptions, shownSettings, type RequestChanges } from '../../video/changes.ts';
import type { FormEstimate } from '../../video/plan.ts';
import type { TaskRecord } from '../../video/record.ts';
import { formTitle } from '../../video/wording.ts';
import { FORM_FIELDS, promptField, selectField, selectedValue, uploadField, uploadedFile } from './form-fields.ts';

// The form of Change and regenerate, a button under a finished video: its task's request shown, to change
// and send again with the same model.

/** The form of Change and regenerate, in the member's `locale`: at most five fields, each showing what the task asked for. */
export function changeForm(
  locale: Locale,
  id: string,
  task: Pick<TaskRecord, 'operation' | 'prompt' | 'request'>,
  estimate?: FormEstimate,
): ModalBuilder {
  const shown = shownSettings(task.operation, task.prompt, task.request);
  const options = settingOptions(task.operation, locale);
  const modal = new ModalBuilder().setCustomId(id).setTitle(formTitle(locale, t(locale, 'video.form.change-title'), estimate));
  // A generation from a picture may go without a prompt; the gateway's rules say when (checked on submit).
  modal.addLabelComponents(promptField(locale, task.operation === 'generate', shown.prompt));
  const selects = [
    [
      FORM_FIELDS.seconds,
      task.operation === 'extend' ? 'video.form.seconds-to-add' : 'video.form.length',
      options.duration,
      shown.duration,
    ],
    [FORM_FIELDS.resolution, 'video.form.resolution', options.resolution, shown.resolution],
    [FORM_FIELDS.aspectRatio, 'video.form.aspect-ratio', options.aspectRatio, shown.aspectRatio],
  ] as const;
  for (const [field, label, offered, chosen] of selects) {
    if (offered && chosen !== undefined) modal.addLabelComponents(selectField(field, t(locale, label), offered, chosen));
  }
  if (task.operation === 'generate') {
    modal.addLabelComponents(
      uploadField(locale, {
        id: FORM_FIELDS.image,
        label: 'video.form.new-first-frame',
        description: 'video.form.new-first-frame.description',
        required: false,
      }),
    );
  }
  return modal;
}

/** What a member changed in the Change and regenerate form, as the video part takes it. */
export function readChangeForm(interaction: ModalSubmitInteraction): RequestChanges {
  return {
    prompt: interaction.fields.getTextInputValue(FORM_FIELDS.prompt).trim(),
    duration: selectedValue(interaction, FORM_FIELDS.seconds),
    resolution: selectedValue(interaction, FORM_FIELDS.resolution),
    aspectRatio: selectedValue(interaction, FORM_FIELDS.aspectRatio),
    image: uploadedFile(interaction, FORM_FIELDS.image),
  };
}
