// The line of announcements waiting to be said: in order, bounded in length and in time, a refused one
// first again (a few times at most); and which response said a line aside. Pure logic; the session that
// says them is tested in announcements.test.ts, a restart's asides kept out of the record in restart.test.ts.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import {
  ANNOUNCEMENT_MAX_WAIT_MS,
  AnnouncementQueue,
  MAX_ANNOUNCEMENT_REFUSALS,
  MAX_WAITING_ANNOUNCEMENTS,
} from '../../src/voice/announcements.ts';
import { SentAnnouncements } from '../../src/voice/sent-announcements.ts';

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

describe('lines said aside (the bot restarts, it is back)', () => {
  const aside = { text: 'I am back. Where were we?', aside: true, askedAt: 1000, refusals: 0 };
  const news = { text: 'A video is ready: a lighthouse.', aside: false, askedAt: 1000, refusals: 0 };

  it('are told by the response that says them, whatever its words', () => {
    const sent = new SentAnnouncements();
    sent.sent('event-1', aside, 1000);
    sent.responseStarted('response-1');
    sent.sent('event-2', news, 2000);
    sent.responseStarted('response-2');
    expect(sent.isAside('response-1')).toBe(true);
    expect(sent.isAside('response-2')).toBe(false);
    expect(sent.isAside(undefined)).toBe(false);
  });

  it('are not taken for the response that started before the gateway refused them', () => {
    const sent = new SentAnnouncements();
    sent.lastLineSent('event-1', 1000, true);
    // A member's answer started; the aside, refused for it, was never said.
    sent.responseStarted('answer');
    sent.answeredWithError('event-1');
    expect(sent.isAside('answer')).toBe(false);
  });
});
