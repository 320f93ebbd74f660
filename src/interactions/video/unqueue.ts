import { PermissionFlagsBits, type ButtonInteraction } from 'discord.js';
import { answerPrivately } from '../../discord/answer.ts';
import type { Services } from '../../services.ts';
import { notice, word } from '../../wording/notice.ts';
import { memberLocale } from '../requirements.ts';
import { interactionContext } from './context.ts';

/**
 * The Cancel button of a job waiting in its key's line: its member, or a member with Manage Server, takes
 * it out of line (the card then says who did); anyone else is told privately whose job it is.
 */
export async function cancelWaitingJob(interaction: ButtonInteraction, services: Services, taskId: string): Promise<void> {
  const mayManage = interaction.memberPermissions?.has(PermissionFlagsBits.ManageGuild) ?? false;
  const outcome = await services.video.cancelWaiting(interactionContext(interaction), taskId, mayManage);
  await answerPrivately(interaction, word(memberLocale(interaction), outcome.ok ? notice('video.unqueue.done') : outcome.notice));
}
