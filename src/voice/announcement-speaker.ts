import type { Logger } from '../lib/log.ts';
import { AnnouncementQueue, type Announcement } from './announcements.ts';
import type { LiveState, SessionState } from './session-states.ts';

// When the lines the bot says on its own (announcements) are spoken: each as a force_message, once the
// conversation leaves room for it, in the order they were asked for (announcements.ts keeps the line).

/** What a forced message waits for besides the realtime session: the members and the bot's own voice. */
export interface VoiceFloor {
  /** The session's state now (a renewal or a loss replaces the live one). */
  state(): SessionState;
  /** A member is speaking. */
  memberSpeaking(): boolean;
  /** The bot is playing an answer. */
  answerPlaying(): boolean;
}

/**
 * Why the gateway would not take a forced message now (it refuses one while another response is active,
 * an announcement's included), or undefined when it would: what an announcement and a last line both wait for.
 */
export function forcedMessageWaitsFor(live: LiveState, floor: VoiceFloor, now: number): string | undefined {
  if (!live.client.open) return 'the realtime session';
  if (live.announcements.inFlight) return 'the previous announcement';
  if (live.responses.busy(now)) return 'the response in progress';
  if (floor.answerPlaying()) return 'the answer playing';
  return undefined;
}

/**
 * Why an announcement may not be said now, or undefined when it may. A member's turn goes first: while
 * someone speaks, while a turn waits for its answer (a function's output included), and while that
 * answer is made and played, an announcement waits, and then follows the answer; said over it, it would
 * be refused by the gateway or talk over the member. (It goes stale meanwhile after
 * ANNOUNCEMENT_MAX_WAIT_MS: see announcements.ts.) One said and then talked over is cut off like any
 * answer and not said again: the member chose to speak over it.
 */
function announcementWaitsFor(live: LiveState, floor: VoiceFloor, now: number): string | undefined {
  const forced = forcedMessageWaitsFor(live, floor, now);
  if (forced !== undefined) return forced;
  if (live.turns.waiting || live.calls.running || live.responses.retryWaiting) return "a member's turn and its answer";
  if (floor.memberSpeaking()) return 'a member speaking';
  return undefined;
}

export class AnnouncementSpeaker {
  readonly #log: Logger;
  readonly #floor: VoiceFloor;
  /** Lines to say in the channel when the conversation leaves room (see speakNext). */
  readonly #waiting: AnnouncementQueue;
  /** Wakes speakNext when nothing else would: a waiting line goes stale, a hold ends. */
  #wake: { at: number; timer: NodeJS.Timeout } | undefined;

  constructor(log: Logger, floor: VoiceFloor) {
    this.#log = log;
    this.#floor = floor;
    this.#waiting = new AnnouncementQueue(log);
  }

  /** Queues a line to say after those already waiting, and says it at once if the conversation leaves room; `aside`: off the record. */
  add(text: string, aside = false): void {
    const live = this.#floor.state();
    if (live.status === 'closed') return;
    const now = Date.now();
    this.#waiting.add(text, now, aside);
    const waitsFor = live.status === 'live' ? announcementWaitsFor(live, this.#floor, now) : 'the realtime session';
    if (waitsFor !== undefined) this.#log.info('a voice announcement waits', { for: waitsFor, waiting: this.#waiting.size });
    this.speakNext();
  }

  /** Says the next waiting announcement if the conversation leaves room for it; else waits for the event that may. */
  speakNext(): void {
    const live = this.#floor.state();
    const now = Date.now();
    this.#waiting.dropStale(now);
    if (live.status === 'closed' || this.#waiting.size === 0) {
      this.#stopWaking();
      return;
    }
    if (live.status === 'live') {
      live.responses.endHoldIfOver(now);
      if (live.announcements.dropLost(now))
        this.#log.warn('a voice announcement was neither started nor refused by the gateway; going on without it');
      if (announcementWaitsFor(live, this.#floor, now) === undefined) {
        const next = this.#waiting.take(now)!;
        const eventId = live.client.forceMessage(next.text, { interruptible: true });
        if (eventId !== undefined) live.announcements.sent(eventId, next, now);
      }
    }
    // What no event announces: the next line going stale, the in-flight one timing out, a refusal's hold ending.
    const wakeAt = Math.min(
      this.#waiting.nextStaleAt ?? Infinity,
      live.status === 'live' ? live.announcements.lostAt : Infinity,
      live.status === 'live' ? (live.responses.heldUntil ?? Infinity) : Infinity,
    );
    // Called on every server event: a timer already set for that moment is kept.
    if (this.#wake?.at === wakeAt) return;
    this.#stopWaking();
    if (wakeAt === Infinity) return;
    const timer = setTimeout(
      () => {
        this.#wake = undefined;
        this.speakNext();
      },
      Math.max(0, wakeAt - now),
    );
    this.#wake = { at: wakeAt, timer };
  }

  /**
   * The gateway refused `announcement` because a response was active: it goes back to the front of the
   * line unless it was refused too often. Returns whether it will be tried again.
   */
  refused(announcement: Announcement): boolean {
    return this.#waiting.refused(announcement);
  }

  /** The conversation ended: nothing more is said. */
  stop(): void {
    this.#stopWaking();
    this.#waiting.clear();
  }

  #stopWaking(): void {
    clearTimeout(this.#wake?.timer);
    this.#wake = undefined;
  }
}
