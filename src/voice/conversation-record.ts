import { z } from 'zod';
import type { Logger } from '../lib/log.ts';
import type { VoiceSettings } from '../ports/voice-settings.ts';
import { readVoiceSettings, voiceSettingSchemas } from '../ports/voice-settings-schema.ts';
import { versionedRecord, type Collection, type RecordWarning } from '../store/index.ts';
import { isRecord } from '../lib/json.ts';
import { graphemePrefix } from '../lib/text.ts';

// A live conversation as the store keeps it (one record per server): enough to bring it back after a
// restart. Written when the conversation starts and again as its turns come in (at most one write every
// RECORD_WRITE_INTERVAL_MS, none per audio frame), so that a crash or a SIGKILL leaves one as fresh as a
// graceful stop does; deleted when the conversation ends for any other reason than a restart.

/** The store collection, keyed by guild id. */
export const CONVERSATION_RECORDS = 'voice_conversations';
/** The transcript kept for the next session's context: the newest turns within both bounds, the oldest dropped. */
export const MAX_RECORDED_TURNS = 20;
export const MAX_RECORDED_CHARS = 4_000;
/** A conversation writes its record at most this often while turns come in (the first write goes at once). */
export const RECORD_WRITE_INTERVAL_MS = 2_000;
/**
 * A record lives this long after its last write: one left by a bot that never came back is not acted on
 * hours later. A live conversation rewrites its record well within it (RECORD_REFRESH_MS), quiet or not.
 */
export const RECORD_TTL_MS = 60 * 60_000;
export const RECORD_REFRESH_MS = 15 * 60_000;

export interface RecordedTurn {
  speaker: 'user' | 'bot';
  text: string;
  /**
   * The members who spoke a member's turn (turns.ts names them), the one heard most first: a member who
   * asks to be forgotten has their turns found by it. A turn of the bot's carries none.
   */
  members: string[];
}

/** The version of a conversation's record this code writes (src/store/versioned.ts). */
const CONVERSATION_RECORD_VERSION = 2;

/** A live conversation, as the recorder keeps it current. */
export interface ConversationState {
  voiceChannelId: string;
  textChannelId: string;
  /** The member who brought the bot in: the conversation is still counted against them when it comes back. */
  userId: string;
  /** The voice settings in force (a conversation that comes back keeps them, transcripts turned off included). */
  settings: VoiceSettings;
  /** The newest turns, oldest first (see MAX_RECORDED_TURNS and MAX_RECORDED_CHARS). */
  turns: RecordedTurn[];
  /** The transcript's thread, once opened: a conversation that comes back goes on in it. */
  transcriptThreadId?: string;
  /** The bot stopped gracefully and said it will be back; false: live when last written (a crash leaves it so). */
  restarting: boolean;
  /** Starts that tried to bring it back and failed: past a bound the record is dropped. */
  rejoinAttempts: number;
  updatedAt: number;
}

/** A conversation as the store keeps it. */
export type ConversationRecord = ConversationState & { v: typeof CONVERSATION_RECORD_VERSION };

/** `turns` with `turn` added last, the oldest dropped to keep within both bounds (a turn alone over the size keeps its start). */
export function withTurn(turns: readonly RecordedTurn[], turn: RecordedTurn): RecordedTurn[] {
  const kept = [...turns, { speaker: turn.speaker, text: graphemePrefix(turn.text, MAX_RECORDED_CHARS), members: [...turn.members] }];
  let chars = kept.reduce((sum, each) => sum + each.text.length, 0);
  while (kept.length > MAX_RECORDED_TURNS || chars > MAX_RECORDED_CHARS) chars -= kept.shift()!.text.length;
  return kept;
}

/**
 * Whose forgetting takes each turn away (see withoutMember): a member's turn, the members who spoke it; a
 * turn of the bot's, the members of the member's turn it follows (its answer, which may repeat their words,
 * as may any line the bot says before the next member's turn); none before any member's turn.
 */
export function turnOwners(turns: readonly RecordedTurn[]): (readonly string[])[] {
  let answering: readonly string[] = [];
  return turns.map((turn) => {
    if (turn.speaker === 'user') answering = turn.members;
    return answering;
  });
}

/**
 * `turns` without anything of `userId`'s: each member's turn they spoke in (a turn several spoke is one
 * transcript of their mixed voices, which cannot be told apart by speaker: it goes whole) and the bot's
 * answers to it (turnOwners). `removed`: how many of the member's own turns went.
 */
export function withoutMember(turns: readonly RecordedTurn[], userId: string): { turns: RecordedTurn[]; removed: number } {
  const owners = turnOwners(turns);
  const kept = turns.filter((_turn, index) => !owners[index]!.includes(userId));
  const removed = turns.filter((turn) => turn.speaker === 'user' && turn.members.includes(userId)).length;
  return { turns: kept, removed };
}

/** A conversation's record as stored, its voice settings not yet read. */
type StoredConversation = Omit<ConversationRecord, 'settings'> & { settings: Readonly<Record<string, unknown>> };

/**
 * Reads a conversation's record of any version. Version 0 (no `v`, before 2026-11-29) is version 1; one
 * without its counts (before restarts were counted) reads as live, never tried again and written at no
 * known time. Version 1 kept no member with a turn (before turns named who spoke them): its turns carry
 * none, which is true of the bot's and unknown of the members' (a restart brings them back all the same,
 * and a member asking to be forgotten cannot be told apart in them: they expire with the record, within
 * RECORD_TTL_MS of the last write).
 */
const parseStoredConversation = versionedRecord<StoredConversation>({
  name: 'conversation',
  version: CONVERSATION_RECORD_VERSION,
  schema: z.object({
    v: z.literal(CONVERSATION_RECORD_VERSION),
    voiceChannelId: z.string(),
    textChannelId: z.string(),
    userId: z.string(),
    settings: z.record(z.string(), z.unknown()),
    turns: z
      .array(z.object({ speaker: z.enum(['user', 'bot']), text: z.string(), members: z.array(z.string()) }))
      .transform((turns) => turns.reduce<RecordedTurn[]>(withTurn, [])),
    transcriptThreadId: z.string().optional(),
    restarting: z.boolean(),
    rejoinAttempts: z.number(),
    updatedAt: z.number(),
  }),
  upgrade: (stored, from) => {
    const counted = from >= 1 ? stored : { restarting: false, rejoinAttempts: 0, updatedAt: 0, ...stored };
    const turns = Array.isArray(counted.turns)
      ? counted.turns.map((turn: unknown) => (isRecord(turn) ? { members: [], ...turn } : turn))
      : counted.turns;
    return { ...counted, turns };
  },
});

/** How many stored records with settings read as their defaults the parser remembers having warned of. */
const WARNED_RECORDS_KEPT = 1_000;

/**
 * The parser of conversation records. Their voice settings are read with the voice settings' one schema
 * (src/ports/voice-settings-schema.ts), for `languages`, those the bot speaks (its catalogs'), within the
 * bounds /voice settings enforces: one missing or out of its
 * bounds is read as its default (`defaults`, the vendor's), said in one warning, and the conversation still
 * comes back. A start reads a record more than once as it was stored (the scan, then the count of the first
 * attempt, which writes the settings back as read): the warning is said at the first read only.
 */
export function conversationRecordParser(
  defaults: VoiceSettings,
  languages: readonly string[],
): (raw: unknown, warn?: RecordWarning) => ConversationRecord {
  const schemas = voiceSettingSchemas(languages);
  const warned = new Set<string>();
  return (raw, warn = () => undefined) => {
    const stored = parseStoredConversation(raw, warn);
    const { settings, outOfBounds } = readVoiceSettings(stored.settings, schemas);
    const missing = Object.keys(defaults).filter((key) => !Object.hasOwn(stored.settings, key));
    const defaulted = [...missing, ...outOfBounds];
    // A record is rewritten with a new updatedAt (or gone) once its conversation is back or given up.
    const warning = JSON.stringify([stored.voiceChannelId, stored.updatedAt, defaulted]);
    if (defaulted.length > 0 && !warned.has(warning)) {
      warned.add(warning);
      if (warned.size > WARNED_RECORDS_KEPT) warned.delete(warned.values().next().value!);
      warn("a conversation's voice settings missing or out of their bounds are read as their defaults", { settings: defaulted });
    }
    return { ...stored, settings: { ...defaults, ...settings } };
  };
}

export type ConversationRecords = Collection<ConversationRecord>;

/**
 * Forgets `userId` in the stored record of a conversation this process does not hold live (one kept for a
 * restart, or left by a crash): written in one step, expiring when it would have. How many of their turns went.
 */
export async function forgetInStoredConversation(
  records: ConversationRecords,
  guildId: string,
  userId: string,
  now: number,
): Promise<number> {
  const stored = await records.get(guildId);
  if (!stored) return 0;
  let removed = 0;
  await records.update(
    guildId,
    (current) => {
      removed = 0;
      if (!current) return undefined;
      const forgotten = withoutMember(current.turns, userId);
      if (forgotten.turns.length === current.turns.length) return undefined;
      removed = forgotten.removed;
      return { ...current, turns: forgotten.turns };
    },
    // The write keeps the record's expiry: forgetting must not make it live longer.
    Math.max(1, stored.updatedAt + RECORD_TTL_MS - now),
  );
  return removed;
}

/**
 * Keeps one conversation's record current. Writes and the final delete go one after the other, so a
 * write still under way never brings back a record deleted after it; a failed write is logged and the
 * next one carries what it missed. After `keepForRestart()` or `remove()` nothing more is written.
 */
export class ConversationRecorder {
  readonly #records: ConversationRecords;
  readonly #guildId: string;
  readonly #log: Logger;
  readonly #record: ConversationState;
  #queue: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #lastWriteAt = 0;
  #done = false;

  constructor(records: ConversationRecords, guildId: string, record: ConversationState, log: Logger) {
    this.#records = records;
    this.#guildId = guildId;
    this.#record = record;
    this.#log = log;
  }

  get turns(): readonly RecordedTurn[] {
    return this.#record.turns;
  }

  /** A turn of the transcript: written soon (see RECORD_WRITE_INTERVAL_MS). */
  turn(turn: RecordedTurn): void {
    if (this.#done) return;
    this.#record.turns = withTurn(this.#record.turns, turn);
    this.#writeSoon();
  }

  /**
   * A member asked to be forgotten (or left the server): their turns and the bot's answers to them go from
   * the record, written at once, so that neither a restart nor a later write brings them back. How many of
   * their turns went.
   */
  forget(userId: string): number {
    const { turns, removed } = withoutMember(this.#record.turns, userId);
    if (turns.length === this.#record.turns.length) return 0;
    this.#record.turns = turns;
    if (!this.#done) void this.#writeNow();
    return removed;
  }

  /** The conversation moved channel, opened its transcript thread or had its settings changed. */
  change(change: Partial<Pick<ConversationState, 'voiceChannelId' | 'transcriptThreadId' | 'settings'>>): void {
    if (this.#done) return;
    Object.assign(this.#record, change);
    this.#writeSoon();
  }

  /** Writes now (the conversation started); resolves once written or logged as failed. */
  write(): Promise<void> {
    if (this.#done) return this.#queue;
    return this.#writeNow();
  }

  /** A live conversation that had no turn for a while still rewrites its record before it expires. */
  refresh(now: number): void {
    if (!this.#done && this.#timer === undefined && now - this.#lastWriteAt >= RECORD_REFRESH_MS) void this.#writeNow();
  }

  /** The bot is restarting: the record is written one last time, marked so, and kept for the next start. */
  keepForRestart(): Promise<void> {
    if (this.#done) return this.#queue;
    this.#record.restarting = true;
    const written = this.#writeNow();
    this.#done = true;
    return written;
  }

  /** The conversation ended: its record goes, after any write still under way. */
  remove(): Promise<void> {
    if (this.#done) return this.#queue;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    return this.#enqueue('delete', () => this.#records.delete(this.#guildId));
  }

  #writeSoon(): void {
    if (this.#timer !== undefined) return;
    const delay = Math.max(0, this.#lastWriteAt + RECORD_WRITE_INTERVAL_MS - Date.now());
    this.#timer = setTimeout(() => void this.#writeNow(), delay);
    this.#timer.unref();
  }

  #writeNow(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#lastWriteAt = Date.now();
    // A copy as it stands now: later turns change the record while this write waits its turn.
    const snapshot: ConversationRecord = {
      v: CONVERSATION_RECORD_VERSION,
      ...this.#record,
      turns: [...this.#record.turns],
      updatedAt: this.#lastWriteAt,
    };
    return this.#enqueue('write', async () => {
      await this.#records.set(this.#guildId, snapshot, RECORD_TTL_MS);
      this.#log.debug('voice conversation recorded', {
        guild: this.#guildId,
        turns: snapshot.turns.length,
        restarting: snapshot.restarting,
      });
    });
  }

  #enqueue(what: 'write' | 'delete', step: () => Promise<unknown>): Promise<void> {
    this.#queue = this.#queue.then(async () => {
      try {
        await step();
      } catch (error) {
        this.#log.warn(`could not ${what} the voice conversation's record`, { guild: this.#guildId, error });
      }
    });
    return this.#queue;
  }
}
