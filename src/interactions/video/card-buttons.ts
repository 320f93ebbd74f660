import type { ButtonInteraction, ModalSubmitInteraction } from 'discord.js';
import type { AnswerVisibility } from '../../discord/answer.ts';
import type { Services } from '../../services.ts';
import { parseVideoActionId, videoActionId, type VideoAction } from '../../video/actions.ts';
import type { Requirement } from '../requirements.ts';
import { openChangeForm, submitChangeForm } from './change-form.ts';
import { answerCardDeletion, askToDeleteCard } from './card-deletion.ts';
import { answerConfirmation } from './confirmation.ts';
import { interactionContext } from './context.ts';
import { extendOrEditForm } from './extend-edit-forms.ts';
import { submitPrepared } from './submission.ts';
import { cancelWaitingJob } from './unqueue.ts';

// The buttons under a video's card, and the two under a video held for its member's confirmation: one
// entry each holds all /video decides about a press (what the presser needs, how the press is first
// answered, whether a member's own install may press it, what it does, the form it opens). Adding a
// button is adding its action (src/video/actions.ts, which the delivery writes too) and its entry here.

/** The actions that are buttons; the others name the forms some of them open. */
type CardButtonAction = Exclude<VideoAction, `${string}-modal`>;

type PressHandler = (interaction: ButtonInteraction, services: Services, taskId: string) => Promise<void>;
type FormHandler = (interaction: ModalSubmitInteraction, services: Services, taskId: string) => Promise<void>;
type FormOpener = (interaction: ButtonInteraction, services: Services, taskId: string, formId: string) => Promise<void>;

export interface CardButton {
  /** What the presser needs, checked by the dispatcher before `press` runs. */
  requires: Requirement;
  /** How a press is first answered (Command.answers): a form, or the placeholder shown while the press is slow. */
  answers: AnswerVisibility | 'form';
  /**
   * Whether it may be pressed through a member's own install of the app (Command.userInstall): none is
   * today, as what such an install posts carries no buttons.
   */
  userInstall: boolean;
  press: PressHandler;
  /** The form `press` opens (its id `video:<action>:<task>`) and what its submission does. */
  form?: { action: VideoAction; submit: FormHandler };
}

/** A press that makes a video: the server's role rules apply at the press, and its status card is everyone's. */
const MAKES_A_VIDEO = { requires: { feature: 'video' }, answers: 'public', userInstall: false } as const;

/**
 * A press that opens a form: the form must come at once, so the role rules (a store read) are checked
 * when it is submitted instead; who may press the video's buttons is checked beside the form.
 */
const OPENS_A_FORM = { requires: { inServer: true }, answers: 'form', userInstall: false } as const;

/** The press and form of a button that opens a form: the form's id is `video:<action>:<task>`, which its submission comes back with. */
function opensForm(action: VideoAction, form: { open: FormOpener; submit: FormHandler }): Pick<CardButton, 'press' | 'form'> {
  return {
    press: (interaction, services, taskId) => form.open(interaction, services, taskId, videoActionId(action, taskId)),
    form: { action, submit: form.submit },
  };
}

const CARD_BUTTONS: Record<CardButtonAction, CardButton> = {
  extend: { ...OPENS_A_FORM, ...opensForm('extend-modal', extendOrEditForm('extend')) },
  edit: { ...OPENS_A_FORM, ...opensForm('edit-modal', extendOrEditForm('edit')) },
  regenerate: {
    ...MAKES_A_VIDEO,
    press: async (interaction, services, taskId) => {
      const context = interactionContext(interaction);
      await submitPrepared(interaction, services, context, await services.video.prepare.regeneration(context, taskId));
    },
  },
  change: { ...OPENS_A_FORM, ...opensForm('change-modal', { open: openChangeForm, submit: submitChangeForm }) },
  vary: {
    ...MAKES_A_VIDEO,
    // A variant's prompt and settings again, as a new job of one, with its video's first frame as the
    // image when the gateway takes one for the request; else as it was, its card saying why. Fetching and
    // decoding the video takes a second or so: the dispatcher has deferred the answer meanwhile.
    press: async (interaction, services, taskId) => {
      const context = interactionContext(interaction);
      await submitPrepared(interaction, services, context, await services.video.vary(context, taskId));
    },
  },
  // Confirming a held video makes it: the role rules apply again at the press.
  confirm: { ...MAKES_A_VIDEO, press: (interaction, services, taskId) => answerConfirmation(interaction, services, 'confirm', taskId) },
  // Cancel replaces its member's private question.
  cancel: {
    requires: { inServer: true },
    answers: 'private',
    userInstall: false,
    press: (interaction, services, taskId) => answerConfirmation(interaction, services, 'cancel', taskId),
  },
  // Cancel of a job waiting in its key's line: whoever may press it is decided with the job in hand.
  unqueue: { requires: { inServer: true }, answers: 'private', userInstall: false, press: cancelWaitingJob },
  // Delete of a finished job's card, and the two buttons of its private question: whoever may press them is
  // decided with the job in hand (its member, or Manage Messages), not by the server's role rules.
  delete: { requires: { inServer: true }, answers: 'private', userInstall: false, press: askToDeleteCard },
  'delete-confirm': {
    requires: { inServer: true },
    answers: 'private',
    userInstall: false,
    press: (interaction, services, taskId) => answerCardDeletion(interaction, services, 'delete', taskId),
  },
  'delete-keep': {
    requires: { inServer: true },
    answers: 'private',
    userInstall: false,
    press: (interaction, services, taskId) => answerCardDeletion(interaction, services, 'keep', taskId),
  },
};

const BUTTON_OF_ACTION = new Map<string, CardButton>(Object.entries(CARD_BUTTONS));
const FORM_OF_ACTION = new Map<string, FormHandler>(
  Object.values(CARD_BUTTONS).flatMap((button) => (button.form ? [[button.form.action, button.form.submit] as const] : [])),
);

/** What an id that names no card button gets: nothing slow comes before its press, which fails. */
function unknownButton(customId: string): CardButton {
  return {
    requires: { inServer: true },
    answers: 'form',
    userInstall: false,
    press: () => Promise.reject(new Error(`unknown video button ${customId}`)),
  };
}

/** The card button a button's id names. */
export function cardButtonOf(customId: string): CardButton {
  const action = parseVideoActionId(customId)?.action;
  return (action === undefined ? undefined : BUTTON_OF_ACTION.get(action)) ?? unknownButton(customId);
}

/** A press of a card button, handed to its entry with the task its id names. */
export async function pressCardButton(interaction: ButtonInteraction, services: Services): Promise<void> {
  const taskId = parseVideoActionId(interaction.customId)?.taskId;
  if (!taskId) throw new Error(`malformed video button ${interaction.customId}`);
  await cardButtonOf(interaction.customId).press(interaction, services, taskId);
}

/** A card button's form submitted, handed to its entry with the task its id names. */
export async function submitCardButtonForm(interaction: ModalSubmitInteraction, services: Services): Promise<void> {
  const { action, taskId } = parseVideoActionId(interaction.customId) ?? {};
  const submit = action === undefined ? undefined : FORM_OF_ACTION.get(action);
  if (!submit || !taskId) throw new Error(`unknown video modal ${interaction.customId}`);
  await submit(interaction, services, taskId);
}
