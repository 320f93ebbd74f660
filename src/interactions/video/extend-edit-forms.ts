import type { ButtonInteraction, ModalSubmitInteraction } from 'discord.js';
import { answerPrivately, showForm } from '../../discord/answer.ts';
import { settledWithin } from '../../lib/wait-until.ts';
import type { Services } from '../../services.ts';
import { guildOf, memberLocale } from '../requirements.ts';
import { interactionContext } from './context.ts';
import { formEstimate } from './form-defaults.ts';
import { submitPrepared } from './submission.ts';
import { word } from '../../wording/notice.ts';
import { SECONDS_TO_ADD, readVideoForm, videoForm } from './video-form.ts';

// The Extend and Edit buttons under a finished video: a form asking for a prompt (and the seconds to
// add), then that video extended or edited as the form says.

/** How long a press of Extend or Edit waits to hear whether the member may press it, before its form is shown anyway: Discord's 3 s run from the press. */
const PRESS_CHECK_MS = 1_000;

const FORM_TITLES = { extend: 'video.form.extend-this-title', edit: 'video.form.edit-this-title' } as const;

/**
 * Why this member may not press a button under this video (the server keeps them to the member who made
 * it), when the store says so in time for the form; the form's submission is checked in any case.
 */
async function pressRefusal(interaction: ButtonInteraction, services: Services, taskId: string): Promise<string | undefined> {
  const checking = services.video.prepare
    .buttonAccess({ guildId: guildOf(interaction), userId: interaction.user.id }, taskId)
    .catch((error: unknown) => {
      services.log.warn('could not check who may press a video button; its form is shown, and checked when submitted', { error });
      return undefined;
    });
  const verdict = await settledWithin(checking, PRESS_CHECK_MS);
  return verdict && !verdict.ok ? word(memberLocale(interaction), verdict.notice) : undefined;
}

/** A press of Extend or Edit: the form (its id `formId`), or why this member may not press it. */
async function openExtendOrEditForm(
  interaction: ButtonInteraction,
  services: Services,
  taskId: string,
  operation: 'extend' | 'edit',
  formId: string,
): Promise<void> {
  // Both are store reads, each bounded so the form still comes within Discord's 3 s.
  const [refused, estimate] = await Promise.all([
    pressRefusal(interaction, services, taskId),
    formEstimate(services, guildOf(interaction), operation),
  ]);
  if (refused !== undefined) {
    await answerPrivately(interaction, refused);
    return;
  }
  const seconds = operation === 'extend' ? { seconds: SECONDS_TO_ADD } : {};
  await showForm(interaction, videoForm(memberLocale(interaction), { id: formId, title: FORM_TITLES[operation], ...seconds, estimate }));
}

/** The form of Extend or Edit submitted: the task's video extended or edited, behind a status card. */
async function submitExtendOrEditForm(
  interaction: ModalSubmitInteraction,
  services: Services,
  taskId: string,
  operation: 'extend' | 'edit',
): Promise<void> {
  const form = readVideoForm(interaction, operation === 'extend' ? SECONDS_TO_ADD : undefined);
  if (!form.ok) {
    await answerPrivately(interaction, form.message);
    return;
  }
  const context = interactionContext(interaction);
  const prepared = await services.video.prepare.editOrExtension(context, operation, {
    prompt: form.prompt,
    model: undefined,
    duration: form.seconds,
    source: { taskRef: taskId, byButton: true },
  });
  await submitPrepared(interaction, services, context, prepared);
}

/** The form of the Extend or the Edit button: opened on a press, then submitted. */
export function extendOrEditForm(operation: 'extend' | 'edit') {
  return {
    open: (interaction: ButtonInteraction, services: Services, taskId: string, formId: string) =>
      openExtendOrEditForm(interaction, services, taskId, operation, formId),
    submit: (interaction: ModalSubmitInteraction, services: Services, taskId: string) =>
      submitExtendOrEditForm(interaction, services, taskId, operation),
  };
}
