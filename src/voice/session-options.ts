import type { VoiceConnection } from '@discordjs/voice';
import type { RealtimeClient, RealtimeSessionConfig } from '../gateway/realtime/client.ts';
import type { RealtimeFunctionCall } from '../gateway/realtime/events.ts';
import type { Logger } from '../lib/log.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import type { VoiceSettings } from '../ports/voice-settings.ts';
import type { Notice, Phrase } from '../wording/notice.ts';
import type { OwnedItem } from './realtime-opener.ts';
import type { RenewalTimes } from './session-lifetime.ts';
import type { TurnMembers } from './turns.ts';

// What a voice session is given: its connection and settings, how to open a realtime session, and the
// callbacks through which it tells the rest of the bot what happens in the conversation.

/** A function call of the model, with who spoke the turn it answers. */
export interface VoiceFunctionCall extends RealtimeFunctionCall {
  /** The members named for the turn (turns.ts, NAMED_SHARE), the one whose audio made most of it first; empty when nobody was heard. */
  speakerIds: TurnMembers;
}

/**
 * A line of the conversation. A member's turn names who spoke it (turns.ts, NAMED_SHARE) and whether the
 * bot answers it; the bot's line may be `aside`, said off the record (see `announce`), not a turn, and names
 * the members whose turn it answers (`answering`, none when unknown): forgetting one of them takes it too.
 */
export type ConversationLine =
  | { speaker: 'user'; members: TurnMembers; text: string; answered: boolean }
  | { speaker: 'bot'; text: string; aside: boolean; answering?: TurnMembers };

export interface VoiceSessionOptions {
  guildId: string;
  connection: VoiceConnection;
  settings: VoiceSettings;
  /**
   * Opens a configured realtime session (the key, model and settings are the caller's business). `manual`:
   * with `turn_detection: null`, the bot ending turns itself.
   */
  connectRealtime(manual: boolean): Promise<RealtimeClient>;
  /** The items a freshly opened realtime session was given of earlier turns, with whose words each holds (realtime-opener.ts). */
  restoredItems?(client: RealtimeClient): readonly OwnedItem[];
  /** The session's configuration in either turn mode, sent when it switches between them. Without it the mode never changes. */
  sessionConfig?(manual: boolean): RealtimeSessionConfig;
  /** Answer only turns whose transcript names the bot (from the start; see `answerOnlyWhenNamed`). */
  onlyWhenNamed?: boolean;
  /** Whether a transcript names the bot. */
  addressed?(transcript: string): boolean;
  /** Runs a function the model called; resolves with the output the model is given (never rejects). */
  onFunctionCall?(call: VoiceFunctionCall): Promise<string>;
  log: Logger;
  /** How long the gateway keeps a realtime session open (the spec: 120 minutes). */
  sessionLimitMs: number;
  /**
   * Renewal: from `windowMs` before the limit at the first quiet moment, and at `marginMs` before it
   * regardless. Defaults: a third of the limit (at most 10 minutes) and a tenth (at most a minute).
   */
  renewal?: RenewalTimes;
  /** Backoff between attempts to reopen a lost realtime session, and how many attempts before giving up. */
  reconnect: { baseMs: number; maxMs: number; maxAttempts: number };
  /** The bot's own user id: its audio is never listened to. */
  botUserId: string;
  /**
   * Whether the conversation hears a member (their consent, hearing.ts); one not heard has their packets
   * dropped at the SSRC lookup (listener.ts). Told of a change through `hearingChanged`. Default: everyone.
   */
  hears?(userId: string): boolean;
  /** A line of the conversation, as its transcript came. */
  onTranscript?(line: ConversationLine): void;
  /** A problem users should hear about, to post in the text channel. */
  onProblem?(problem: Notice): void;
  /** The session could not be reopened and is closed: why, to post in the text channel. */
  onGiveUp?(reason: Phrase): void;
  /** Someone spoke or the bot answered: the channel is not idle. */
  onActivity?(): void;
  /** Counts frames each way, decryption failures, renewals and audio latency each way; default none. */
  metrics?: VoiceSessionMetrics;
  /** Timing hooks for benchmarks: a user's packet arrived (performance.now()), an append left with `frames` 20 ms frames. */
  probe?: { onPacket?(receivedAt: number): void; onAppend?(frames: number, sentAt: number): void };
}

export type VoiceSessionMetrics = Pick<BotMetrics, 'voiceFrames' | 'voiceDecryptFailures' | 'realtimeRenewal' | 'voiceLatency'>;
