import { describe, expect, it } from 'vitest';
import { Schedule } from '../../src/video/schedule.ts';

function drain(schedule: Schedule, now: number): string[] {
  const ids: string[] = [];
  for (let id = schedule.takeDue(now); id !== undefined; id = schedule.takeDue(now)) ids.push(id);
  return ids;
}

describe('the poll schedule', () => {
  it('hands out ids in due order, only once due', () => {
    const schedule = new Schedule();
    schedule.set('c', 30);
    schedule.set('a', 10);
    schedule.set('b', 20);
    expect(schedule.peekDueAt()).toBe(10);
    expect(drain(schedule, 25)).toEqual(['a', 'b']);
    expect(schedule.size).toBe(1);
    expect(drain(schedule, 100)).toEqual(['c']);
    expect(schedule.peekDueAt()).toBeUndefined();
  });

  it('moves a rescheduled id instead of tracking it twice', () => {
    const schedule = new Schedule();
    schedule.set('a', 10);
    schedule.set('b', 20);
    schedule.set('a', 30);
    expect(schedule.size).toBe(2);
    expect(drain(schedule, 100)).toEqual(['b', 'a']);
  });

  it('forgets deleted ids', () => {
    const schedule = new Schedule();
    schedule.set('a', 10);
    schedule.set('b', 20);
    expect(schedule.delete('a')).toBe(true);
    expect(schedule.delete('a')).toBe(false);
    expect(schedule.has('b')).toBe(true);
    expect(drain(schedule, 100)).toEqual(['b']);
  });

  it('stays ordered through thousands of random operations', () => {
    const schedule = new Schedule();
    const expected = new Map<string, number>();
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let step = 0; step < 5000; step++) {
      const id = `t${Math.floor(random() * 500)}`;
      if (random() < 0.2) {
        schedule.delete(id);
        expected.delete(id);
      } else {
        const dueAt = Math.floor(random() * 10_000);
        schedule.set(id, dueAt);
        expected.set(id, dueAt);
      }
    }
    const order = drain(schedule, Infinity);
    expect([...order].sort()).toEqual([...expected.keys()].sort());
    const dueTimes = order.map((id) => expected.get(id)!);
    expect(dueTimes).toEqual([...dueTimes].sort((a, b) => a - b));
  });
});
