import type { Notice, Outcome } from '../wording/notice.ts';

// What a voice conversation asks of the server's spending: whether it may start, and counting its
// realtime sessions' time against the member who brought the bot in and the server, with what is left.

export interface VoiceUse {
  guildId: string;
  /** The member who brought the bot in (`/voice join`). */
  userId: string;
  /** The realtime model, which the price table prices. */
  model: string;
  /** Session time to count, in milliseconds. */
  ms: number;
  at: number;
}

export interface VoiceBudgetLeft {
  /** How much longer one session may run before a budget is spent; undefined when no budget bounds it. */
  msLeft: number | undefined;
  /** What the time counted by this reading cost, in USD ticks; default nothing. */
  usdTicks?: number;
  /** Why the conversation ends when it does, naming the budget; none when no budget bounds it. */
  reason?: Notice<'budget.used-up'>;
}

export interface VoiceSpending {
  /** Refused (with why, for the member) when their or the server's budget is already spent. */
  checkStart(guildId: string, userId: string, now: number): Promise<Outcome>;
  /** Counts `ms` of session time, once, and says what is left after it. */
  meter(use: VoiceUse): Promise<VoiceBudgetLeft>;
}
