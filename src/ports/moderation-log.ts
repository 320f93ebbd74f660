import type { Notice } from '../wording/notice.ts';

// What the parts tell a server's moderation log (`/config rules log_channel`, issue 36): the jobs its
// members ask for, what the bot refuses them by a rule or a limit, and its voice conversations. The
// settings part keeps the log (it knows the channel and the server's language); the others only report.
// Every method returns at once and never throws: a log that cannot be written must not fail a video.

/** A job as the log shows it: who asked, what, where its card is, and what it is expected to cost. */
export interface LoggedJob {
  guildId: string;
  /** Where the job's card is. */
  channelId: string;
  /** The card's message, when known: the line links to it (else to the channel). */
  messageId: string | undefined;
  userId: string;
  prompt: string;
  /** How many videos the job makes (its variants that were admitted). */
  videos: number;
  /** What the job's videos are expected to cost together, in USD ticks. */
  estimateUsdTicks: number;
}

/**
 * What a member was refused: a video (by command, form or button), a voice conversation, a request made
 * by voice (a video, or a video's status), or a command, button or form before it ran (`command` names it).
 */
export type RefusedRequest = 'video' | 'voice' | 'voice-tool' | 'command';

export interface LoggedRefusal {
  guildId: string;
  userId: string;
  what: RefusedRequest;
  /** With `command`: what the member used, as typed (`/video generate`, **Animate image**, `/video` for a button or form). */
  command?: string;
  /** Why, as the member was told: the log words it in the server's language. */
  why: Notice;
  /** The prompt refused, when there was one. */
  prompt?: string;
}

/** A task the provider's content moderation ended: its prompt refused, or its made video withheld (not posted). */
export interface LoggedModeration {
  guildId: string;
  /** Where the task's card is. */
  channelId: string;
  messageId: string | undefined;
  userId: string;
  prompt: string;
  outcome: 'refused' | 'withheld';
  /** The gateway reported a cost for it (a refused prompt is otherwise refunded). */
  charged: boolean;
}

export interface LoggedVoiceStart {
  guildId: string;
  /** The member who brought the bot in. */
  userId: string;
  voiceChannelId: string;
  /** Brought back after a restart, rather than asked for. */
  resumed: boolean;
}

export interface LoggedVoiceEnd {
  guildId: string;
  userId: string;
  voiceChannelId: string;
  /** How long it lasted, from its start (or its return after a restart) to now. */
  ms: number;
  /** What its sessions' time was counted as, in USD ticks. */
  usdTicks: number;
  /** Paused for a restart: it comes back after it (and logs its start again). */
  restarting: boolean;
}

export interface ModerationLogPort {
  job(job: LoggedJob): void;
  /** Logged when `why` is a rule's, a limit's or a budget's refusal; other refusals (a bad option) are not. */
  refused(refusal: LoggedRefusal): void;
  /** A task the provider's content moderation refused or withheld. */
  moderated(moderation: LoggedModeration): void;
  voiceStarted(start: LoggedVoiceStart): void;
  voiceEnded(end: LoggedVoiceEnd): void;
}
