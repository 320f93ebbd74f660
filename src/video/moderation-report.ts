import type { LoggedModeration, ModerationLogPort } from '../ports/moderation-log.ts';
import { moderationOf, type TaskRecord } from './record.ts';

// A task the provider's content moderation ended, as the server's moderation log records it (issue 36):
// told once, when the task ends, beside what its card says (status-card.ts words both outcomes).

/** What the log records of a finished task the provider's moderation refused or withheld; undefined for any other. */
export function moderationReport(task: TaskRecord): LoggedModeration | undefined {
  const outcome = moderationOf(task);
  // A member's own install of the app is no server's: there is no moderator to tell.
  if (outcome === undefined || task.userInstall) return undefined;
  return {
    guildId: task.guildId,
    channelId: task.channelId,
    messageId: task.card.messageId,
    userId: task.userId,
    prompt: task.prompt,
    outcome,
    charged: (task.outcome.costUsdTicks ?? 0) > 0,
  };
}

/** Tells the log of a finished task the provider's moderation ended, if it was. */
export function logModeration(task: TaskRecord, log: Partial<Pick<ModerationLogPort, 'moderated'>> | undefined): void {
  const report = log?.moderated && moderationReport(task);
  if (report) log.moderated?.(report);
}
