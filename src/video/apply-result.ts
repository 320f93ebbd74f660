import type { TaskResult } from '../gateway/types.ts';
import { urlScheme } from '../lib/url.ts';
import type { TaskOutcome, TaskRecord, TaskState } from './record.ts';

// Folds what the gateway says about a task into the bot's record (a new record; the old one is left
// as it was, so the caller can tell what changed).

const STATE_OF: Record<TaskResult['status'], TaskState> = {
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  expired: 'expired',
};

function outcomeOf(result: TaskResult, previous: TaskOutcome): TaskOutcome {
  const outcome: TaskOutcome = { ...previous };
  if (result.videoUrl !== undefined) outcome.videoUrl = result.videoUrl;
  if (result.file) {
    outcome.storedFile = {
      fileId: result.file.fileId,
      ...(result.file.filename === undefined ? {} : { filename: result.file.filename }),
      ...(result.file.expiresAt === undefined ? {} : { expiresAt: result.file.expiresAt.getTime() }),
      ...(result.file.publicUrl === undefined ? {} : { publicUrl: result.file.publicUrl }),
      ...(result.file.refusedPublicUrl === undefined ? {} : { refusedPublicUrl: urlScheme(result.file.refusedPublicUrl) ?? '' }),
    };
  }
  if (result.storageError !== undefined) outcome.storageError = result.storageError;
  if (result.moderated) outcome.moderated = true;
  if (result.costUsdTicks !== undefined) outcome.costUsdTicks = result.costUsdTicks;
  if (result.error) outcome.error = { code: result.error.code ?? 'unknown', message: result.error.message };
  if (result.requestId !== undefined) outcome.requestId = result.requestId;
  return outcome;
}

export function applyResult(task: TaskRecord, result: TaskResult, now: number): TaskRecord {
  const state = STATE_OF[result.status];
  const next: TaskRecord = { ...task, state, polls: task.polls + 1, pollErrors: 0, outcome: outcomeOf(result, task.outcome) };
  if (result.progress !== undefined) next.progress = result.progress;
  if (state !== 'running') {
    next.finishedAt = now;
    // Nothing will be posted for a task without a video: the card tells the story.
    const postable = state === 'succeeded' && !result.moderated;
    if (!postable) next.delivery = { ...task.delivery, state: 'closed' };
  }
  return next;
}
