import { isRecord, readArray, readBoolean, readNumber, readString } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { SUPPORTED_LOCALES } from '../i18n/index.ts';
import { RESPOND_MODES, TURN_DETECTION_MODES, type VoiceSettings } from '../ports/voice-settings.ts';
import type { Collection } from '../store/index.ts';

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
}

export interface ConversationRecord {
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

/** `turns` with `turn` added last, the oldest dropped to keep within both bounds (a turn alone over the size keeps its start). */
export function withTurn(turns: readonly RecordedTurn[], turn: RecordedTurn): RecordedTurn[] {
  const kept = [...turns, { speaker: turn.speaker, text: turn.text.slice(0, MAX_RECORDED_CHARS) }];
  let chars = kept.reduce((sum, each) => sum + each.text.length, 0);
  while (kept.length > MAX_RECORDED_TURNS || chars > MAX_RECORDED_CHARS) chars -= kept.shift()!.text.length;
  return kept;
}

function parseSettings(raw: unknown): VoiceSettings {
  const text = (key: string) => {
    const value = readString(raw, key);
    if (value === undefined) throw new Error(`settings.${key} must be a string`);
    return value;
  };
  const number = (key: string) => {
    const value = readNumber(raw, key);
    if (value === undefined) throw new Error(`settings.${key} must be a number`);
    return value;
  };
  const turnDetection = TURN_DETECTION_MODES.find((mode) => mode === readString(raw, 'turnDetection'));
  const respond = RESPOND_MODES.find((mode) => mode === readString(raw, 'respond'));
  const transcripts = readBoolean(raw, 'transcripts');
  const wakeWords = readArray(raw, 'wakeWords');
  if (!turnDetection || !respond || transcripts === undefined || !wakeWords?.every((word) => typeof word === 'string'))
    throw new Error('settings.turnDetection, respond, transcripts or wakeWords is not what the bot writes');
  const tools = readBoolean(raw, 'tools');
  // The conversation's language (`/voice settings language`): one the bot speaks, else the server's.
  const language = SUPPORTED_LOCALES.find((locale) => locale === readString(raw, 'language'));
  return {
    voice: text('voice'),
    instructions: text('instructions'),
    model: text('model'),
    turnDetection,
    vadThreshold: number('vadThreshold'),
    silenceMs: number('silenceMs'),
    transcripts,
    idleMinutes: number('idleMinutes'),
    respond,
    wakeWords: wakeWords.filter((word) => typeof word === 'string'),
    ...(tools === undefined ? {} : { tools }),
    ...(language === undefined ? {} : { language }),
  };
}

function parseTurn(raw: unknown): RecordedTurn {
  const speaker = readString(raw, 'speaker');
  const text = readString(raw, 'text');
  if ((speaker !== 'user' && speaker !== 'bot') || text === undefined) throw new Error('a turn needs a speaker (user or bot) and a text');
  return { speaker, text };
}

export function parseConversationRecord(raw: unknown): ConversationRecord {
  if (!isRecord(raw)) throw new Error('a conversation record must be an object');
  const voiceChannelId = readString(raw, 'voiceChannelId');
  const textChannelId = readString(raw, 'textChannelId');
  const userId = readString(raw, 'userId');
  const turns = readArray(raw, 'turns');
  if (voiceChannelId === undefined || textChannelId === undefined || userId === undefined || turns === undefined)
    throw new Error('a conversation record needs its channels, its member and its turns');
  const transcriptThreadId = readString(raw, 'transcriptThreadId');
  return {
    voiceChannelId,
    textChannelId,
    userId,
    settings: parseSettings(raw.settings),
    turns: turns.map(parseTurn).reduce<RecordedTurn[]>(withTurn, []),
    ...(transcriptThreadId === undefined ? {} : { transcriptThreadId }),
    restarting: readBoolean(raw, 'restarting') ?? false,
    rejoinAttempts: readNumber(raw, 'rejoinAttempts') ?? 0,
    updatedAt: readNumber(raw, 'updatedAt') ?? 0,
  };
}

export type ConversationRecords = Collection<ConversationRecord>;

/**
 * Keeps one conversation's record current. Writes and the final delete go one after the other, so a
 * write still under way never brings back a record deleted after it; a failed write is logged and the
 * next one carries what it missed. After `keepForRestart()` or `remove()` nothing more is written.
 */
export class ConversationRecorder {
  readonly #records: ConversationRecords;
  readonly #guildId: string;
  readonly #log: Logger;
  readonly #record: ConversationRecord;
  #queue: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #lastWriteAt = 0;
  #done = false;

  constructor(records: ConversationRecords, guildId: string, record: ConversationRecord, log: Logger) {
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

  /** The conversation moved channel, opened its transcript thread or had its settings changed. */
  change(change: Partial<Pick<ConversationRecord, 'voiceChannelId' | 'transcriptThreadId' | 'settings'>>): void {
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
    const snapshot: ConversationRecord = { ...this.#record, turns: [...this.#record.turns], updatedAt: this.#lastWriteAt };
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
