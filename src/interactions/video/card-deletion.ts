import { PermissionFlagsBits, type ButtonInteraction } from 'discord.js';
import { answerPrivately, replacePrivateMessage } from '../../discord/answer.ts';
import { t } from '../../i18n/index.ts';
import type { Services } from '../../services.ts';
import { deleteCardQuestion } from '../../video/wording.ts';
import { notice, word } from '../../wording/notice.ts';
import { memberLocale } from '../requirements.ts';
import { interactionContext } from './context.ts';

// The Delete button of a finished job's card, and the two buttons of the private question it asks. Its
// member may delete it, and so may anyone who may manage the channel's messages (who could delete any
// message there from Discord's own menu); anyone else is told privately whose card it is.

/** Manage Messages in the channel the button was pressed in. */
function mayManageMessages(interaction: ButtonInteraction): boolean {
  return interaction.memberPermissions?.has(PermissionFlagsBits.ManageMessages) ?? false;
}

/** Delete pressed on a card: the private question, for whoever may delete it; why not, for anyone else. */
export async function askToDeleteCard(interaction: ButtonInteraction, services: Services, taskId: string): Promise<void> {
  const locale = memberLocale(interaction);
  const allowed = await services.video.mayDeleteCard(interactionContext(interaction), taskId, mayManageMessages(interaction));
  await answerPrivately(interaction, allowed.ok ? deleteCardQuestion(locale, taskId) : word(locale, allowed.notice));
}

/** The question answered: the card deleted (who may is checked again: a member's permissions can change), or kept. */
export async function answerCardDeletion(
  interaction: ButtonInteraction,
  services: Services,
  answer: 'delete' | 'keep',
  taskId: string,
): Promise<void> {
  const locale = memberLocale(interaction);
  if (answer === 'keep') {
    await replacePrivateMessage(interaction, t(locale, 'video.delete.kept'));
    return;
  }
  const deleted = await services.video.deleteCard(interactionContext(interaction), taskId, mayManageMessages(interaction));
  await replacePrivateMessage(interaction, word(locale, deleted.ok ? notice('video.delete.done') : deleted.notice));
}
