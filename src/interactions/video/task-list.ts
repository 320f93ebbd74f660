import { t, type Locale } from '../../i18n/index.ts';
import { shorten } from '../../lib/text.ts';
import type { TaskRecord } from '../../video/record.ts';

/** How much of each prompt `/video list` shows: its tasks fit one message in every language. */
const LISTED_PROMPT_LENGTH = 60;

/**
 * The tasks with each waiting one's place in its key's line as `currentPlace` reads it now
 * (QueueSender.currentPlace): the place a record stores is the one its card last showed, up to a card
 * interval old. The reads run together; the sender reads each key's line once for all of its tasks.
 */
export function withCurrentPlaces(
  tasks: readonly TaskRecord[],
  currentPlace: (task: TaskRecord) => Promise<number | undefined>,
): Promise<TaskRecord[]> {
  return Promise.all(
    tasks.map(async (task) => {
      if (task.state !== 'waiting') return task;
      const place = await currentPlace(task);
      return place === undefined ? task : { ...task, place };
    }),
  );
}

/** `/video list`: a member's recent tasks, one line each, in their language. */
export function describeRecentTasks(locale: Locale, tasks: readonly TaskRecord[]): string {
  const lines = tasks.map((task) => {
    const shown = task.state === 'running' && task.progress !== undefined;
    const placed = task.state === 'waiting' && task.place !== undefined;
    return t(locale, 'video.list.line', {
      ref: task.id,
      state: task.state,
      progress: Math.round(task.progress ?? 0) / 100,
      shown: shown ? 'yes' : 'no',
      place: task.place ?? 0,
      placed: placed ? 'yes' : 'no',
      // Every cancel writes who did it; a record without (none is written so) says only that it was cancelled.
      by: task.state === 'cancelled' && task.cancelledBy !== undefined ? `<@${task.cancelledBy}>` : 'nobody',
      // A card its member or a moderator deleted: the task is still theirs, but nothing links to its card.
      deleted: task.cardDeleted === undefined ? 'no' : 'yes',
      operation: task.operation,
      when: `<t:${Math.floor(task.createdAt / 1000)}:R>`,
      // One line each, cut between whole characters.
      prompt: shorten(task.prompt.replaceAll(/\s+/g, ' '), LISTED_PROMPT_LENGTH),
    });
  });
  return t(locale, 'video.list', { lines: lines.join('\n') });
}
