import type { ButtonInteraction } from 'discord.js';
import { answerPrivately, replacePrivateMessage } from '../../discord/answer.ts';
import type { Services } from '../../services.ts';
import { describeConfirmationClosed, describeConfirmationGone, describeOthersConfirmation } from '../../video/wording.ts';
import { guildOf, memberLocale } from '../requirements.ts';
import { interactionContext } from './context.ts';
import { refusePrivately, submitPlan } from './submission.ts';

/**
 * A press of a held video's Confirm or Cancel button (`video:confirm:<task>`, `video:cancel:<task>`): by
 * its member only. Confirm submits the kept plan behind a public status card, as if it had just been
 * asked for (limits and budgets are checked again then); Cancel sends nothing. Either way the question
 * says how it ended.
 */
export async function answerConfirmation(
  interaction: ButtonInteraction,
  services: Services,
  answer: 'confirm' | 'cancel',
  taskId: string,
): Promise<void> {
  const confirmations = services.video.confirmations;
  const locale = memberLocale(interaction);
  const taken = await confirmations.take(taskId, { guildId: guildOf(interaction), userId: interaction.user.id });
  if (taken.status === 'others') {
    await answerPrivately(interaction, describeOthersConfirmation(locale, taken.userId));
    return;
  }
  if (taken.status === 'gone') {
    await replacePrivateMessage(interaction, describeConfirmationGone(locale));
    return;
  }
  if (answer === 'cancel') {
    await replacePrivateMessage(interaction, describeConfirmationClosed(locale, taken.held.plan, 'cancelled'));
    return;
  }
  const prepared = await confirmations.planOf(taken.held);
  if (!prepared.ok) {
    await refusePrivately(interaction, services, interactionContext(interaction), prepared.notice, taken.held.plan.prompt);
    await confirmations.close(taken.held, 'refused');
    return;
  }
  // The card is this press's reply, everyone's to see; the question is edited through its own token.
  const submitted = await submitPlan(interaction, services, interactionContext(interaction), prepared.plan);
  await confirmations.close(taken.held, submitted ? 'confirmed' : 'refused');
}
