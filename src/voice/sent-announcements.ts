import type { Announcement } from './announcements.ts';

/** An announcement sent and neither started nor refused within this long is taken as lost, so the next may go. */
const ANNOUNCEMENT_START_TIMEOUT_MS = 10_000;
/** Announcements remembered by event id per realtime session: enough for the few that can be in flight. */
const REMEMBERED_ANNOUNCEMENTS = 8;
/** Responses said off the record remembered per realtime session, until their transcript comes. */
const REMEMBERED_ASIDES = 8;

/**
 * The announcements sent on one realtime session (and a last line, which they wait behind): the newest
 * few by the id of their event, since a refusal names that id, and the one sent last, until a response
 * starts or the gateway answers its event: no other goes meanwhile. The response that starts next is the
 * one in flight: when that was said off the record (an aside), its transcript is told apart by the
 * response's id, never by its words.
 */
export class SentAnnouncements {
  readonly #byEventId = new Map<string, Announcement>();
  #inFlight: { eventId: string; sentAt: number; aside: boolean } | undefined;
  /** The responses that said an aside, by response id, with the event that asked for each. */
  readonly #asides = new Map<string, string>();

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
    this.#inFlight = { eventId, sentAt: now, aside: announcement.aside };
    this.#byEventId.set(eventId, announcement);
    if (this.#byEventId.size > REMEMBERED_ANNOUNCEMENTS) this.#byEventId.delete(this.#byEventId.keys().next().value!);
  }

  /** A last line went out as the event `eventId`: announcements still waiting wait behind it, as behind one of their own. */
  lastLineSent(eventId: string, now: number, aside: boolean): void {
    this.#inFlight = { eventId, sentAt: now, aside };
  }

  /** A response started: the one sent last has started, or it is refused next (its event id says which). */
  responseStarted(responseId: string | undefined): void {
    if (this.#inFlight?.aside && responseId !== undefined) {
      this.#asides.set(responseId, this.#inFlight.eventId);
      if (this.#asides.size > REMEMBERED_ASIDES) this.#asides.delete(this.#asides.keys().next().value!);
    }
    this.#inFlight = undefined;
  }

  /** Whether the response `responseId` said a line off the record. */
  isAside(responseId: string | undefined): boolean {
    return responseId !== undefined && this.#asides.has(responseId);
  }

  /** The gateway answered the event `eventId` with an error: the one it names is not waited for (nor said again). */
  answeredWithError(eventId: string | undefined): void {
    if (eventId === undefined) return;
    this.#notSaid(eventId);
    if (this.#inFlight?.eventId === eventId) this.#inFlight = undefined;
  }

  /** The event `eventId` was refused: the response taken for its aside was another's. */
  #notSaid(eventId: string): void {
    for (const [responseId, asked] of this.#asides) if (asked === eventId) this.#asides.delete(responseId);
  }

  /** The announcement sent as `eventId`, which the gateway refused, taken back; undefined when that event was none. */
  takeRefused(eventId: string): Announcement | undefined {
    const announcement = this.#byEventId.get(eventId);
    if (!announcement) return undefined;
    this.#byEventId.delete(eventId);
    this.#notSaid(eventId);
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
