import { z } from 'zod';
import type { ConsentMode } from '../ports/voice-settings.ts';
import { versionedRecord, type Collection } from '../store/index.ts';

// Who decided what about being heard: one record per member, kept until they change their mind. A member
// who asked not to be heard (/voice ignore-me) is ignored in every server, across leaves, joins and
// restarts, until /voice listen-to-me; a member who agreed to be heard (/voice listen-to-me, or the join
// message's button) is heard in that server's opt-in conversations. What a conversation does with it is
// decided here, in one pure function; keeping it current in a live conversation is hearing.ts's.

/** The store collection, keyed by user id. */
export const CONSENT_RECORDS = 'voice_consent';
/** The most servers a member's agreement is kept for; the oldest agreement goes first (the member agrees again there). */
export const MAX_AGREED_SERVERS = 200;

/** The version of a consent record this code writes (src/store/versioned.ts). */
const CONSENT_RECORD_VERSION = 1;

export interface ConsentRecord {
  v: typeof CONSENT_RECORD_VERSION;
  /** The member asked not to be heard, anywhere. */
  ignored: boolean;
  /** The servers whose opt-in conversations the member agreed to be heard in, oldest first. */
  agreedIn: string[];
  updatedAt: number;
}

/** Reads a consent record; there is no older version than the first. */
export const parseConsentRecord = versionedRecord<ConsentRecord>({
  name: 'consent',
  version: CONSENT_RECORD_VERSION,
  schema: z.object({
    v: z.literal(CONSENT_RECORD_VERSION),
    ignored: z.boolean(),
    agreedIn: z.array(z.string()),
    updatedAt: z.number(),
  }),
  upgrade: (stored) => stored,
});

/**
 * What a conversation knows of a member's choice: their record (undefined: they never chose), or
 * `unknown` while it is read or when it could not be read.
 */
export type KnownConsent = { known: true; record: ConsentRecord | undefined } | { known: false };

/** What a conversation hears by: its consent setting, the member who brought the bot in, the server. */
export interface ConsentContext {
  mode: ConsentMode;
  bringer: string;
  guildId: string;
}

/**
 * Whether the conversation hears `userId`. Unknown (still being read, or unreadable) is not heard: the bot
 * fails closed. Asking not to be heard wins over everything, the bringer's own choice included; in an
 * opt-in conversation only the bringer and those who agreed in this server are heard.
 */
export function hears(userId: string, consent: KnownConsent, context: ConsentContext): boolean {
  if (!consent.known) return false;
  if (consent.record?.ignored) return false;
  if (context.mode === 'open') return true;
  return userId === context.bringer || (consent.record?.agreedIn.includes(context.guildId) ?? false);
}

/** `record` (or none) after the member asked not to be heard: in every server, their agreements kept for when they come back. */
export function ignoring(record: ConsentRecord | undefined, now: number): ConsentRecord {
  return { v: CONSENT_RECORD_VERSION, ignored: true, agreedIn: [...(record?.agreedIn ?? [])], updatedAt: now };
}

/** `record` (or none) after the member asked to be heard: no longer ignored anywhere, and agreed in `guildId`. */
export function listening(record: ConsentRecord | undefined, guildId: string, now: number): ConsentRecord {
  const agreedIn = [...(record?.agreedIn ?? []).filter((id) => id !== guildId), guildId].slice(-MAX_AGREED_SERVERS);
  return { v: CONSENT_RECORD_VERSION, ignored: false, agreedIn, updatedAt: now };
}

/** The members' choices in the store: each read within the store's deadline, each change one atomic step. */
export class ConsentBook {
  readonly #records: Collection<ConsentRecord>;
  readonly #now: () => number;

  constructor(records: Collection<ConsentRecord>, now: () => number = Date.now) {
    this.#records = records;
    this.#now = now;
  }

  /** A member's record; throws when the store cannot say (never taken as "no record"). */
  read(userId: string): Promise<ConsentRecord | undefined> {
    return this.#records.get(userId);
  }

  /** The member asks not to be heard; the record as stored. */
  async ignore(userId: string): Promise<ConsentRecord> {
    const stored = await this.#records.update(userId, (record) => ignoring(record, this.#now()));
    if (!stored) throw new Error('the consent record was not written');
    return stored;
  }

  /** The member asks to be heard, in `guildId`'s opt-in conversations too; the record as stored. */
  async listen(userId: string, guildId: string): Promise<ConsentRecord> {
    const stored = await this.#records.update(userId, (record) => listening(record, guildId, this.#now()));
    if (!stored) throw new Error('the consent record was not written');
    return stored;
  }
}
