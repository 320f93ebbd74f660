import { BoundedJournal, type JournalLimits } from '../journal.ts';

// A session's journals of the events it received and sent, for tests and demos to look at.

export interface JournaledEvent {
  at: number;
  event: Readonly<Record<string, unknown>>;
}

/**
 * The journals keep what tests and demos look at, not the audio itself: of a run of audio events of
 * one type only the first is kept; an event over JOURNALED_EVENT_MAX_BYTES is kept by its type and id
 * alone; and each journal keeps its newest entries within these bounds.
 */
const JOURNAL_LIMITS: JournalLimits = { maxEntries: 5000, maxBytes: 1024 * 1024 };
const JOURNALED_EVENT_MAX_BYTES = 16 * 1024;
/** In an event journaled by its type and id alone, each is kept to this many characters. */
const JOURNALED_NAME_MAX_CHARS = 256;
const AUDIO_EVENTS: ReadonlySet<unknown> = new Set(['input_audio_buffer.append', 'response.output_audio.delta']);

export function newEventJournal(): BoundedJournal<JournaledEvent> {
  return new BoundedJournal<JournaledEvent>(JOURNAL_LIMITS);
}

/** Journals `event`, whose JSON text is `size` characters long. */
export function journalEvent(journal: BoundedJournal<JournaledEvent>, event: Readonly<Record<string, unknown>>, size: number): void {
  if (AUDIO_EVENTS.has(event.type) && journal.entries.at(-1)?.event.type === event.type) return;
  if (size <= JOURNALED_EVENT_MAX_BYTES) {
    journal.append({ at: Date.now(), event }, size);
    return;
  }
  const name = (value: unknown) => (typeof value === 'string' ? value.slice(0, JOURNALED_NAME_MAX_CHARS) : undefined);
  const stub = { type: name(event.type), ...(name(event.event_id) === undefined ? {} : { event_id: name(event.event_id) }) };
  journal.append({ at: Date.now(), event: stub }, JSON.stringify(stub).length);
}
