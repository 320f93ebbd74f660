import type { Guild } from 'discord.js';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import type { Logger } from '../lib/log.ts';
import { refuse, type Outcome } from '../wording/notice.ts';
import type { OpenFailure } from './realtime-errors.ts';
import type { ConversationRecord, ConversationRecords } from './conversation-record.ts';

// Bringing back, at start, a conversation a restart or a crash interrupted, from its record.

/** A conversation that cannot be brought back after a restart is tried this many times (across starts), then dropped. */
const MAX_REJOIN_ATTEMPTS = 3;
const REJOIN_BACKOFF: BackoffPolicy = { baseMs: 2_000, maxMs: 10_000, jitter: 0.25, spread: 'within-bounds' };

export interface ComebackOptions {
  records: ConversationRecords;
  log: Logger;
  /** The bot is stopping: nothing is brought back any more. */
  stopped(): boolean;
  /** The server, when discord.js has it. */
  guild(guildId: string): Guild | undefined;
  /** People in a voice channel (the bot and other bots aside). */
  peopleIn(guild: Guild, channelId: string): number;
  /** Joins the conversation's voice channel again, with its record; `failure`: why its realtime session did not open. */
  rejoin(guildId: string, record: ConversationRecord): Promise<Outcome<object, { failure?: OpenFailure }>>;
  /** Posts in the text channel that the conversation could not come back. */
  postGaveUp(guildId: string, record: ConversationRecord): Promise<void>;
}

/**
 * Brings back one conversation; resolves with whether it came back. One whose voice channel nobody is in
 * any more is dropped; one that cannot be brought back is tried again a few times (the attempts count
 * across starts), then dropped, posting so in its text channel.
 */
export async function bringBack(guildId: string, record: ConversationRecord, options: ComebackOptions): Promise<boolean> {
  const { records } = options;
  const log = options.log.child({ guild: guildId });
  for (let attempt = record.rejoinAttempts; !options.stopped(); attempt++) {
    const guild = options.guild(guildId);
    if (guild && options.peopleIn(guild, record.voiceChannelId) === 0) {
      log.info('not rejoining voice after the restart: nobody is in the channel any more', { channel: record.voiceChannelId });
      await dropRecord(records, guildId, log);
      return false;
    }
    if (attempt >= MAX_REJOIN_ATTEMPTS) {
      log.warn('giving up on rejoining voice after the restart', { channel: record.voiceChannelId, attempts: attempt });
      await dropRecord(records, guildId, log);
      await options.postGaveUp(guildId, record);
      return false;
    }
    // Counted before it is tried: a start that dies while rejoining counts too.
    try {
      await records.update(guildId, (current) => current && { ...current, rejoinAttempts: attempt + 1 });
    } catch (error) {
      log.warn('could not count an attempt to rejoin voice', { error });
    }
    const joined: Outcome<object, { failure?: OpenFailure }> = guild
      ? await options.rejoin(guildId, record)
      : refuse('voice.join.no-server');
    if (joined.ok) {
      log.info('rejoined voice after the restart', {
        channel: record.voiceChannelId,
        turns: record.turns.length,
        restarting: record.restarting,
      });
      return true;
    }
    log.warn('could not rejoin voice after the restart', {
      channel: record.voiceChannelId,
      attempt: attempt + 1,
      // The gateway's own account when it has one: the member's wording ("unreachable") would hide a refusal and its code.
      ...(joined.failure ? { failure: joined.failure } : { reason: joined.notice.key }),
    });
    await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt - record.rejoinAttempts, REJOIN_BACKOFF)).unref());
  }
  return false;
}

async function dropRecord(records: ConversationRecords, guildId: string, log: Logger): Promise<void> {
  try {
    await records.delete(guildId);
  } catch (error) {
    log.warn("could not drop the voice conversation's record", { error });
  }
}
