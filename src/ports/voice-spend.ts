import type { Result } from '../lib/result.ts';

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
  /** The conversation's language (`/voice settings language`), which `spokenReason` is in; unset: the server's. */
  spokenLocale?: string | undefined;
}

export interface VoiceBudgetLeft {
  /** How much longer one session may run before a budget is spent; undefined when no budget bounds it. */
  msLeft: number | undefined;
  /** Why the conversation ends when it does, naming the budget, in the server's language (for its text channel). */
  reason: string;
  /** The same in the conversation's language (`spokenLocale`), for the voice to say. */
  spokenReason: string;
}

export interface VoiceSpending {
  /** Refused (with why, for the member) when their or the server's budget is already spent. */
  checkStart(guildId: string, userId: string, now: number): Promise<Result>;
  /** Counts `ms` of session time, once, and says what is left after it. */
  meter(use: VoiceUse): Promise<VoiceBudgetLeft>;
}
