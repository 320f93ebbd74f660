import { t, type Locale } from '../../i18n/index.ts';
import { shorten } from '../../lib/text.ts';
import type { TaskRecord } from '../../video/record.ts';

/** How much of each prompt `/video list` shows: its tasks fit one message in every language. */
const LISTED_PROMPT_LENGTH = 60;

/** `/video list`: a member's recent tasks, one line each, in their language. */
export function describeRecentTasks(locale: Locale, tasks: readonly TaskRecord[]): string {
  const lines = tasks.map((task) => {
    const shown = task.state === 'running' && task.progress !== undefined;
    return t(locale, 'video.list.line', {
      ref: task.id,
      state: task.state,
      progress: Math.round(task.progress ?? 0) / 100,
      shown: shown ? 'yes' : 'no',
      operation: task.operation,
      when: `<t:${Math.floor(task.createdAt / 1000)}:R>`,
      // One line each, cut between whole characters.
      prompt: shorten(task.prompt.replaceAll(/\s+/g, ' '), LISTED_PROMPT_LENGTH),
    });
  });
  return t(locale, 'video.list', { lines: lines.join('\n') });
}
