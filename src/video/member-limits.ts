import type { Outcome } from '../wording/notice.ts';
import type { GuildVideoPolicy } from '../ports/guild-policy.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import { DEFAULT_POLL_POLICY } from './poll-policy.ts';
import { isTerminal } from './record.ts';
import type { TaskRepository } from './repository.ts';

/** Whether the member may start another video of `estimateUsdTicks` now: the server's limits (with their tasks still in progress) and budgets. */
export async function checkMemberLimits(
  repository: TaskRepository,
  policy: GuildVideoPolicy,
  context: InteractionContext,
  estimateUsdTicks: number,
  /** Tasks of the same job counted just before this one, not yet stored: in progress too. */
  pending = 0,
): Promise<Outcome> {
  const now = Date.now();
  // A task older than the poller's deadline is finished (or closed at its next poll): only younger ones are read.
  const recent = await repository.recentForUser(context.guildId, context.userId, undefined, now - DEFAULT_POLL_POLICY.deadlineMs);
  const active = recent.filter((task) => !isTerminal(task.state)).length + pending;
  return policy.checkLimits({
    guildId: context.guildId,
    userId: context.userId,
    activeTasksOfUser: active,
    now,
    estimateUsdTicks,
  });
}
