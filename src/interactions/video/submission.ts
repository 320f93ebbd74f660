import type { RepliableInteraction } from 'discord.js';
import { answerPrivately, askPrivately, deferPublicly } from '../../discord/answer.ts';
import type { InteractionContext } from '../../ports/interaction-context.ts';
import type { Services } from '../../services.ts';
import type { Prepared, SubmissionPlan } from '../../video/plan.ts';
import { SubmissionRefusedError } from '../../video/submit.ts';
import { word, type Notice } from '../../wording/notice.ts';
import { memberLocale } from '../requirements.ts';

// Every way a member makes a video by hand ends here: a prepared request refused, held for the member's
// confirmation, or submitted behind its status card.

/**
 * Answers a prepared request: refused at once (ephemeral); held for its member's confirmation when its
 * estimate is over the server's threshold (a private question, nothing sent); or deferred and submitted
 * with a status card. Preparing reads only the local store, so the answer is well within Discord's 3 s;
 * whatever needs the network (Discord, the gateway) comes after the deferral. Every way a member makes a
 * video by hand comes through here: /video generate, edit and extend, the Regenerate button, and the
 * forms of the Extend and Edit buttons and of the message commands.
 */
export async function submitPrepared(
  interaction: RepliableInteraction,
  services: Services,
  context: InteractionContext,
  prepared: Prepared,
): Promise<void> {
  if (!prepared.ok) {
    await refusePrivately(interaction, services, context, prepared.notice, prepared.prompt);
    return;
  }
  if (prepared.plan.confirmOverUsdTicks !== undefined) {
    await askToConfirm(interaction, services, context, prepared.plan);
    return;
  }
  await submitPlan(interaction, services, context, prepared.plan);
}

/** Submits a plan behind a public status card; a refusal is told privately. Whether it was submitted. */
export async function submitPlan(
  interaction: RepliableInteraction,
  services: Services,
  context: InteractionContext,
  plan: SubmissionPlan,
): Promise<boolean> {
  await deferPublicly(interaction);
  try {
    await services.video.submit(plan, context);
    return true;
  } catch (error) {
    if (!(error instanceof SubmissionRefusedError)) throw error;
    await refusePrivately(interaction, services, context, error.notice, plan.prompt);
    return false;
  }
}

/**
 * Tells a member privately why their video is refused; the server's moderation log records it when a
 * rule, a limit or a budget refused it.
 */
export async function refusePrivately(
  interaction: RepliableInteraction,
  services: Services,
  context: Pick<InteractionContext, 'guildId' | 'userId'>,
  why: Notice,
  prompt?: string,
): Promise<void> {
  services.settings.moderationLog.refused({
    guildId: context.guildId,
    userId: context.userId,
    what: 'video',
    why,
    ...(prompt === undefined ? {} : { prompt }),
  });
  await answerPrivately(interaction, word(memberLocale(interaction), why));
}

/**
 * Asks the member privately whether to make a video estimated over the server's threshold: the plan is
 * kept first (a quick press must find it), then the question is shown. A public placeholder already shown
 * (the command is slow) is removed by askPrivately, so the question stays the member's.
 */
async function askToConfirm(interaction: RepliableInteraction, services: Services, context: InteractionContext, plan: SubmissionPlan) {
  const confirmations = services.video.confirmations;
  const question = await confirmations.hold(plan, context);
  const messageId = await askPrivately(interaction, question);
  await confirmations.shown(plan.taskId, messageId);
}
