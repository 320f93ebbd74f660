import type { Announcement } from './announcements.ts';

/** An announcement sent and neither started nor refused within this long is taken as lost, so the next may go. */
const ANNOUNCEMENT_START_TIMEOUT_MS = 10_000;
/** Announcements remembered by event id per realtime session: enough for the few that can be in flight. */
const REMEMBERED_ANNOUNCEMENTS = 8;

/**
 * The announcements sent on one realtime session (and a last line, which they wait behind): the newest
 * few by the id of their event, since a refusal names that id, and the one sent last, until a response
 * starts or the gateway answers its event: no other goes meanwhile.
 */
export class SentAnnouncements {
  readonly #byEventId = new Map<string, Announcement>();
  #inFlight: { eventId: string; sentAt: number } | undefined;

  /** One was sent and has neither started nor been answered. */
  get inFlight(): boolean {
    return this.#inFlight !== undefined;
  }

  /** The event id of the one in flight. */
  get inFlightEventId(): string | undefined {
    return this.#inFlight?.eventId;
  }

  /** When the one in flight is taken as lost; Infinity when none is in flight. */
  get lostAt(): number {
    return this.#inFlight ? this.#inFlight.sentAt + ANNOUNCEMENT_START_TIMEOUT_MS : Infinity;
  }

  /** `announcement` went out as the event `eventId`. */
  sent(eventId: string, announcement: Announcement, now: number): void {
    this.#inFlight = { eventId, sentAt: now };
    this.#byEventId.set(eventId, announcement);
    if (this.#byEventId.size > REMEMBERED_ANNOUNCEMENTS) this.#byEventId.delete(this.#byEventId.keys().next().value!);
  }

  /** A last line went out as the event `eventId`: announcements still waiting wait behind it, as behind one of their own. */
  lastLineSent(eventId: string, now: number): void {
    this.#inFlight = { eventId, sentAt: now };
  }

  /** A response started: the one sent last has started, or it is refused next (its event id says which). */
  responseStarted(): void {
    this.#inFlight = undefined;
  }

  /** The gateway answered the event `eventId` with an error: the one it names is not waited for (nor said again). */
  answeredWithError(eventId: string | undefined): void {
    if (eventId !== undefined && this.#inFlight?.eventId === eventId) this.#inFlight = undefined;
  }

  /** The announcement sent as `eventId`, which the gateway refused, taken back; undefined when that event was none. */
  takeRefused(eventId: string): Announcement | undefined {
    const announcement = this.#byEventId.get(eventId);
    if (!announcement) return undefined;
    this.#byEventId.delete(eventId);
    if (this.#inFlight?.eventId === eventId) this.#inFlight = undefined;
    return announcement;
  }

  /** The one in flight, neither started nor refused by `now` since it was sent: taken as lost. Whether it was. */
  dropLost(now: number): boolean {
    if (now < this.lostAt) return false;
    this.#inFlight = undefined;
    return true;
  }
}
