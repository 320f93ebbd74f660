import type { Logger } from '../lib/log.ts';

// Lines the bot says in the voice channel on its own (a video is ready), waiting for their turn. Each is
// said as a force_message, which is a response turn of its own (docs/gateway.md, "force_message"): a
// gateway refuses it while another response is active, as it refuses a second response. So announcements
// wait in order for the conversation to leave room for them (VoiceSession decides when), and one the
// gateway refused anyway goes back to the front of the line. The line is bounded in length and in time.

/**
 * An announcement not said within this long of being asked for is dropped. What it announces is already
 * in the text channel (a video is posted before it is announced), so a late notice adds nothing, and news
 * from half a minute ago would only interrupt the conversation that kept it waiting.
 */
export const ANNOUNCEMENT_MAX_WAIT_MS = 30_000;
/** Announcements waiting at most: past it the oldest is dropped (the newest news is kept). */
export const MAX_WAITING_ANNOUNCEMENTS = 8;
/** Refusals for an active response an announcement gets before it is dropped (a gateway that always refuses must not loop). */
export const MAX_ANNOUNCEMENT_REFUSALS = 3;

export interface Announcement {
  readonly text: string;
  /** Said off the record (the bot restarts, it is back): its transcript is not a turn of the conversation. */
  readonly aside: boolean;
  /** When it was asked for (Date.now()): it is stale ANNOUNCEMENT_MAX_WAIT_MS later. */
  readonly askedAt: number;
  /** How many times the gateway refused it because a response was active. */
  refusals: number;
}

export class AnnouncementQueue {
  /** Oldest first: the order they were asked for, a refused one back at the front. */
  readonly #waiting: Announcement[] = [];
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  get size(): number {
    return this.#waiting.length;
  }

  /** Queues a line to say after those already waiting; a full queue drops its oldest. */
  add(text: string, now: number, aside = false): void {
    this.#waiting.push({ text, aside, askedAt: now, refusals: 0 });
    if (this.#waiting.length > MAX_WAITING_ANNOUNCEMENTS) {
      const dropped = this.#waiting.shift()!;
      this.#log.warn('too many voice announcements waiting; the oldest is dropped', { waitedMs: now - dropped.askedAt });
    }
  }

  /** The next announcement to say, taken off the queue; those gone stale on the way are dropped. */
  take(now: number): Announcement | undefined {
    this.dropStale(now);
    return this.#waiting.shift();
  }

  /** Drops the announcements that waited too long (the oldest are at the front). */
  dropStale(now: number): void {
    while (this.#waiting.length > 0 && now - this.#waiting[0]!.askedAt >= ANNOUNCEMENT_MAX_WAIT_MS) {
      const dropped = this.#waiting.shift()!;
      this.#log.info('a voice announcement could not be said in time and is dropped', { waitedMs: now - dropped.askedAt });
    }
  }

  /**
   * The gateway refused `announcement` because a response was active: it goes back to the front (it is
   * the oldest), unless it was refused too often. Returns whether it will be tried again.
   */
  refused(announcement: Announcement): boolean {
    announcement.refusals++;
    if (announcement.refusals > MAX_ANNOUNCEMENT_REFUSALS) {
      this.#log.warn('a voice announcement was refused too often for an active response and is dropped', {
        refusals: announcement.refusals,
      });
      return false;
    }
    this.#waiting.unshift(announcement);
    return true;
  }

  /** When the first waiting announcement goes stale, or undefined when none waits. */
  get nextStaleAt(): number | undefined {
    const first = this.#waiting[0];
    return first && first.askedAt + ANNOUNCEMENT_MAX_WAIT_MS;
  }

  clear(): void {
    this.#waiting.length = 0;
  }
}
