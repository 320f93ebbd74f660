import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../../src/discord/message-limits.ts';
import { SUPPORTED_LOCALES } from '../../../src/i18n/index.ts';
import { describeRecentTasks } from '../../../src/interactions/video/task-list.ts';
import { taskRecord } from '../../support/task-result.ts';

// `/video list` at its largest: ten tasks whose prompts are 2,000 characters of emoji and line breaks.

describe('/video list at its largest', () => {
  const tasks = Array.from({ length: 10 }, (_, index) =>
    taskRecord({ id: `vmi${String(index).padStart(16, '0')}`, prompt: `${'👩🏽‍🚀\n'.repeat(400)}`, state: 'running', progress: 42 }),
  );

  it.each(SUPPORTED_LOCALES)('fits one message, a line a task, cut between whole characters, in %s', (locale) => {
    const text = describeRecentTasks(locale, tasks);
    expect(text.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    const lines = text.split('\n').slice(1);
    expect(lines).toHaveLength(10);
    for (const line of lines) expect(line).toMatch(/(👩🏽‍🚀 )+…$/u);
  });
});
