import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../../src/discord/message-limits.ts';
import { ENGLISH, SUPPORTED_LOCALES, type Locale } from '../../../src/i18n/index.ts';
import { describeRecentTasks, withCurrentPlaces } from '../../../src/interactions/video/task-list.ts';
import type { TaskRecord } from '../../../src/video/record.ts';
import { startOneSlotKey, type OneSlotKey } from '../../support/one-slot-key.ts';
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

// Jobs in their key's line: where each stands, and who took one out of it, in every language.

describe('/video list of waiting and cancelled jobs', () => {
  const task = (overrides: Partial<TaskRecord>) => taskRecord({ prompt: 'a heron fishing at dawn', ...overrides });
  const lineOf = (locale: Locale, listed: TaskRecord) => describeRecentTasks(locale, [listed]).split('\n')[1]!;

  it('says in English which place in line a waiting job has, and who cancelled one', () => {
    const places = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101].map((place) => lineOf(ENGLISH, task({ state: 'waiting', place })));
    expect(places.map((line) => /\*\*(.*?)\*\*/.exec(line)?.[1])).toEqual([
      'waiting · 1st in line',
      'waiting · 2nd in line',
      'waiting · 3rd in line',
      'waiting · 4th in line',
      'waiting · 11th in line',
      'waiting · 12th in line',
      'waiting · 13th in line',
      'waiting · 21st in line',
      'waiting · 22nd in line',
      'waiting · 23rd in line',
      'waiting · 101st in line',
    ]);
    expect(lineOf(ENGLISH, task({ state: 'waiting' }))).toContain('**waiting** · generation');
    expect(lineOf(ENGLISH, task({ state: 'cancelled', cancelledBy: '200000000000000009' }))).toContain(
      '**cancelled by <@200000000000000009>** · generation',
    );
  });

  it.each(SUPPORTED_LOCALES)('never words a waiting or cancelled job as of unknown outcome, in %s', (locale) => {
    const unknown = lineOf(locale, task({ state: 'unknown' }));
    const waiting = lineOf(locale, task({ state: 'waiting', place: 3 }));
    const cancelled = lineOf(locale, task({ state: 'cancelled', cancelledBy: '200000000000000009' }));
    for (const line of [waiting, lineOf(locale, task({ state: 'waiting' })), cancelled]) expect(line).not.toBe(unknown);
    expect(waiting).toContain('3');
    expect(cancelled).toContain('<@200000000000000009>');
  });
});

describe('/video list while jobs wait for a key that takes one video at a time', () => {
  let line: OneSlotKey;
  beforeAll(async () => {
    line = await startOneSlotKey();
  }, 30_000);
  afterAll(() => line?.stop());

  it("shows each waiting job's place as its line has it now, and who cancelled one", async () => {
    const { video, guild } = line;
    const member = guild.member.id;
    const first = await line.ask(member, 'a heron fishing at dawn');
    const asked = [];
    for (const prompt of ['a fox surfing', 'a cat asleep', 'an owl at night']) asked.push(await line.ask(member, prompt));
    expect(first.state).toBe('running');
    expect(asked.map(({ state, place }) => `${state} ${place}`)).toEqual(['waiting 1', 'waiting 2', 'waiting 3']);

    // An admin takes the first waiting job out of line: the two behind it move up, read from the line (their
    // records keep the place their cards last showed until the tracker's next look).
    expect(await video.cancelWaiting({ guildId: guild.id, userId: guild.admin.id }, asked[0]!.id, true)).toEqual({ ok: true });
    const recent = await video.tasks.recentForUser(guild.id, member, 10);
    const listed = describeRecentTasks(ENGLISH, await withCurrentPlaces(recent, (task) => video.sender.currentPlace(task)));
    const states = listed
      .split('\n')
      .slice(1)
      .map((listedLine) => /\*\*(.*?)\*\*/.exec(listedLine)?.[1]);
    expect(states).toEqual([
      'waiting · 2nd in line',
      'waiting · 1st in line',
      `cancelled by <@${guild.admin.id}>`,
      expect.stringMatching(/^running/),
    ]);

    // A record the line no longer holds (claimed since it was read) keeps the place it last stored.
    const claimed = { ...asked[2]!, id: 'vnotinline', place: 3 };
    expect((await withCurrentPlaces([claimed], (task) => video.sender.currentPlace(task)))[0]?.place).toBe(3);
  }, 30_000);
});
