import type { Notice, Outcome } from '../wording/notice.ts';
import type { GatewayAccessResolver } from './gateway-access.ts';
import type { VideoDefaults } from './video-defaults.ts';

// What a server's settings decide for /video, as the video part asks for it: its key and layer, its
// defaults, its limits, and the ledger its limits and usage report read.

/** A member's video task, as the daily counts see it: it counts on the UTC day it was created. */
export interface MemberTask {
  guildId: string;
  userId: string;
  createdAt: number;
}

/**
 * The most videos at once an admin may state their key takes (`/config limits key_concurrency`), and the
 * most the bot ever learns one takes: the settings part bounds what it stores, the video part its line.
 */
export const MAX_KEY_CONCURRENCY = 100;

/** A video's estimate as it was reserved against the budgets at submission: what settling it gives back. */
export interface SpendReservation {
  estimateUsdTicks: number;
  /** Reserved against the server's month too (it had a monthly budget). */
  month: boolean;
}

/** What a video request is estimated from (the price table's inputs). */
export interface VideoEstimateRequest {
  model: string;
  operation: 'generate' | 'edit' | 'extend';
  resolution?: string | undefined;
  /** Generation: the length; extension: the seconds added. */
  duration?: number | undefined;
}

/** A finished task's cost, as the usage ledger records it (once per task, however often it is seen). */
export interface TaskCost extends MemberTask {
  taskId: string;
  /** What the gateway reported; undefined when it reported nothing. */
  costUsdTicks: number | undefined;
  /** Whether the gateway made (and so charged for) a video: failures and timeouts are refunded. */
  madeVideo: boolean;
  /** What was reserved when it was submitted; undefined (or 0): nothing. */
  reservation: SpendReservation | undefined;
}

export interface LimitQuery {
  guildId: string;
  userId: string;
  /** The member's tasks still in progress. */
  activeTasksOfUser: number;
  now: number;
  /** The video's estimate, checked against the budgets. */
  estimateUsdTicks: number;
}

/**
 * A daily limit or a budget was reached between checkLimits and recordSubmission (another worker counted a task of the
 * server meanwhile): the task was not counted. `notice` says which, for the member.
 */
export class LimitReachedError extends Error {
  readonly notice: Notice;

  constructor(notice: Notice) {
    super(`limit reached: ${notice.key}`);
    this.name = 'LimitReachedError';
    this.notice = notice;
  }
}

/** What a member's videos cost on one UTC day on a server, as the usage ledger counted them. */
export interface MemberDayCost {
  costUsdTicks: number;
  /** Their videos of that day whose cost the gateway did not report. */
  costUnreported: number;
}

/** The usage ledger's totals, for a status card that shows a task's cost beside its member's day. */
export interface MemberCosts {
  /** The member's costs on the server on the UTC day of `at`. */
  memberDayCost(guildId: string, userId: string, at: number): Promise<MemberDayCost>;
}

export interface GuildVideoPolicy extends GatewayAccessResolver {
  defaults(guildId: string): Promise<VideoDefaults>;
  checkLimits(query: LimitQuery): Promise<Outcome>;
  /**
   * Counts a task against its member's and server's daily limits and reserves its estimate against the
   * budgets (before it is sent), checking them in the same step on the store: when counting it would pass
   * one, nothing is counted and it rejects with LimitReachedError, so workers admitting at once never pass
   * a limit or spend the last dollar together.
   */
  recordSubmission(task: MemberTask, estimateUsdTicks: number): Promise<SpendReservation>;
  /** The gateway refused it: it does not count, and its reservation is given back. */
  releaseSubmission(task: MemberTask, reservation: SpendReservation): Promise<void>;
  /**
   * How many videos at once the server's gateway key takes, when an admin stated it (`/config limits
   * key_concurrency`): the key's line sends no more, and does not probe for more. Undefined: learned.
   */
  keyConcurrency?(guildId: string): Promise<number | undefined>;
  /**
   * The blocked word or phrase (as the server's moderators wrote it, `/config rules blocked_words`) that
   * `prompt` contains; undefined when it contains none. Unset: the server has no such rule.
   */
  blockedWordIn?(guildId: string, prompt: string): Promise<string | undefined>;
  /** What a video is expected to cost, in ticks (1 USD = 10^10). */
  estimate(request: VideoEstimateRequest): number;
  recordCost(cost: TaskCost): Promise<void>;
}
