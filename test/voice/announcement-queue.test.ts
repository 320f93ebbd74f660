// The line of announcements waiting to be said: in order, bounded in length and in time, a refused one
// first again (a few times at most). Pure logic; the session that says them is tested in announcements.test.ts.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import {
  ANNOUNCEMENT_MAX_WAIT_MS,
  AnnouncementQueue,
  MAX_ANNOUNCEMENT_REFUSALS,
  MAX_WAITING_ANNOUNCEMENTS,
} from '../../src/voice/announcements.ts';

function queue(): AnnouncementQueue {
  return new AnnouncementQueue(silentLogger);
}

describe('the announcements waiting to be said', () => {
  it('come out in the order asked for, the oldest dropped when too many wait', () => {
    const waiting = queue();
    for (let index = 0; index <= MAX_WAITING_ANNOUNCEMENTS; index++) waiting.add(`line ${index}`, 1000);
    const said: string[] = [];
    for (let next = waiting.take(1000); next; next = waiting.take(1000)) said.push(next.text);
    expect(said).toEqual(Array.from({ length: MAX_WAITING_ANNOUNCEMENTS }, (_, index) => `line ${index + 1}`));
  });

  it('drops those that waited too long, and says when the next goes stale', () => {
    const waiting = queue();
    waiting.add('old', 0);
    waiting.add('newer', 10_000);
    expect(waiting.nextStaleAt).toBe(ANNOUNCEMENT_MAX_WAIT_MS);
    expect(waiting.take(ANNOUNCEMENT_MAX_WAIT_MS)?.text).toBe('newer');
    expect(waiting.nextStaleAt).toBeUndefined();
  });

  it('puts a refused one first again, until it was refused too often', () => {
    const waiting = queue();
    waiting.add('first', 0);
    waiting.add('second', 0);
    const first = waiting.take(0)!;
    for (let refusal = 1; refusal <= MAX_ANNOUNCEMENT_REFUSALS; refusal++) {
      expect(waiting.refused(first)).toBe(true);
      expect(waiting.take(0)).toBe(first);
    }
    expect(waiting.refused(first)).toBe(false);
    expect(waiting.take(0)?.text).toBe('second');
  });
});
