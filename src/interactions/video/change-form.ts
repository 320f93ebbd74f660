import { ModalBuilder, type ButtonInteraction, type ModalSubmitInteraction } from 'discord.js';
import { answerPrivately, showForm } from '../../discord/answer.ts';
import { t, type Locale } from '../../i18n/index.ts';
import { settledWithin } from '../../lib/wait-until.ts';
import type { Services } from '../../services.ts';
import { settingOptions, shownSettings, type RequestChanges } from '../../video/changes.ts';
import type { FormEstimate } from '../../video/plan.ts';
import type { TaskRecord } from '../../video/record.ts';
import { formTitle } from '../../video/wording.ts';
import { guildOf, memberLocale } from '../requirements.ts';
import { interactionContext } from './context.ts';
import { FORM_FIELDS, promptField, selectField, selectedValue, uploadField, uploadedFile } from './form-fields.ts';
import { submitPrepared } from './submission.ts';
import { word } from '../../wording/notice.ts';

// Change and regenerate, a button under a finished video: its task's request shown in a form, changed
// and sent again with the same model.

/** How long a press of Change and regenerate waits for the task it shows: Discord's 3 s run from the press. */
const CHANGE_FORM_WITHIN_MS = 1_500;

/** The form of Change and regenerate, in the member's `locale`: at most five fields, each showing what the task asked for. */
function changeForm(
  locale: Locale,
  id: string,
  task: Pick<TaskRecord, 'operation' | 'prompt' | 'request'>,
  estimate?: FormEstimate,
): ModalBuilder {
  const shown = shownSettings(task.operation, task.prompt, task.request);
  const options = settingOptions(task.operation);
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
    if (offered && chosen !== undefined) {
      const labelled = offered.map(({ value, label: shown }) => ({
        value,
        label: typeof shown === 'string' ? shown : word(locale, shown),
      }));
      modal.addLabelComponents(selectField(field, t(locale, label), labelled, chosen));
    }
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
function readChangeForm(interaction: ModalSubmitInteraction): RequestChanges {
  return {
    prompt: interaction.fields.getTextInputValue(FORM_FIELDS.prompt).trim(),
    duration: selectedValue(interaction, FORM_FIELDS.seconds),
    resolution: selectedValue(interaction, FORM_FIELDS.resolution),
    aspectRatio: selectedValue(interaction, FORM_FIELDS.aspectRatio),
    image: uploadedFile(interaction, FORM_FIELDS.image),
  };
}

/**
 * A press of Change and regenerate: a form (its id `formId`) showing what the task asked for. It needs the
 * task itself, so unlike Extend and Edit it is not shown when the store is too slow.
 */
export async function openChangeForm(interaction: ButtonInteraction, services: Services, taskId: string, formId: string): Promise<void> {
  const guildId = guildOf(interaction);
  const locale = memberLocale(interaction);
  const presser = { guildId, userId: interaction.user.id };
  // The task is read once: the form shows it, and who may press its buttons is checked against it.
  const reading = services.video.tasks
    .findInGuild(guildId, taskId)
    .then(async (task) => [task, task ? await services.video.prepare.mayPress(presser, task) : ({ ok: true } as const)] as const)
    .catch((error: unknown) => {
      services.log.warn('could not read the task of a Change and regenerate press', { error });
      return undefined;
    });
  const read = await settledWithin(reading, CHANGE_FORM_WITHIN_MS);
  if (!read) {
    await answerPrivately(interaction, t(locale, 'video.refusal.change-unreadable'));
    return;
  }
  const [task, access] = read;
  if (!access.ok) await answerPrivately(interaction, word(locale, access.notice));
  else if (!task) await answerPrivately(interaction, t(locale, 'video.refusal.task-unknown'));
  else await showForm(interaction, changeForm(locale, formId, task));
}

/** The Change and regenerate form submitted: the task's request with the member's changes, sent again. */
export async function submitChangeForm(interaction: ModalSubmitInteraction, services: Services, taskId: string): Promise<void> {
  const context = interactionContext(interaction);
  await submitPrepared(
    interaction,
    services,
    context,
    await services.video.prepare.regeneration(context, taskId, readChangeForm(interaction)),
  );
}
