import type { EditRequest, ExtensionRequest, GatewayCredentials, GenerationRequest } from '../gateway/types.ts';
import type { Outcome } from '../wording/notice.ts';
import type { GuildVideoPolicy } from '../ports/guild-policy.ts';
import { MAX_VARIANTS } from '../ports/video-defaults.ts';
import type { TaskMode, VaryNote } from './record.ts';
import type { AttachmentInput } from './requests.ts';

// A video request between its preparation (checked completely, nothing sent yet) and its submission.

export type OperationRequest =
  | { operation: 'generate'; request: GenerationRequest }
  | { operation: 'edit'; request: EditRequest }
  | { operation: 'extend'; request: ExtensionRequest };

export type SubmissionPlan = OperationRequest & {
  /** The new task's id, made when the request is prepared: its storage filename carries it. */
  taskId: string;
  mode: TaskMode;
  model: string;
  prompt: string;
  access: GatewayCredentials;
  /** What the video is expected to cost, in ticks: reserved against the budgets when it is submitted. */
  estimateUsdTicks: number;
  /**
   * The server's confirmation threshold (`/config budget confirm_over_usd`), set when the estimate is over
   * it: the video then waits for its member's confirm button before anything is sent or reserved.
   */
  confirmOverUsdTicks?: number;
  sourceTaskId?: string;
  /** Regenerate: an earlier task's request sent again (its attachment links may have expired since). */
  regenerated?: boolean;
  /**
   * The source is a video the bot posted: Discord re-signs attachment urls, so the submission asks for a
   * fresh one. It is a network call, so it waits until the interaction has been answered.
   */
  postedSource?: { channelId: string; messageId: string; fileName?: string };
  /** How many variants to make of a generation (1-4): one job, one card; unset: one. */
  variants?: number;
  /** Vary: why the variant's first frame was not sent (its card words it). */
  varyNote?: VaryNote;
};

/** A form's estimate, before the member fills it in: for each second they ask for, or for the whole video. */
export interface FormEstimate {
  usdTicks: number;
  per: 'second' | 'video';
}

/** A plan ready to submit, or why the request cannot go (in words for the member). */
/** A request prepared, or why not; a refusal of its prompt (a blocked word) carries the prompt, for the moderators' log. */
export type Prepared = Outcome<{ plan: SubmissionPlan }, { prompt?: string }>;

/**
 * Where the source of an edit or extension comes from: an attachment, or a finished task (`byButton`: the
 * Extend or Edit button under its video, which the server may keep to the member who made it).
 */
export type VideoSourceInput = { attachment: AttachmentInput } | { taskRef: string; byButton?: boolean };

/** A request's estimate, from what it asks for (an unset length or resolution is the gateway's default). */
export function estimateOf(policy: Pick<GuildVideoPolicy, 'estimate'>, operation: OperationRequest, model: string): number {
  if (operation.operation === 'generate') {
    const { request } = operation;
    return policy.estimate({
      model,
      operation: 'generate',
      duration: request.duration ?? request.seconds,
      resolution: request.resolution ?? request.size,
    });
  }
  if (operation.operation === 'extend')
    return policy.estimate({ model, operation: 'extend', duration: operation.request.duration ?? operation.request.seconds });
  return policy.estimate({ model, operation: 'edit' });
}

/**
 * Whether an estimate can go with a job: a whole number of ticks, 0 or more, that the task's record, the
 * usage ledger and their sums keep exactly. The price table's bounds (PRICES_FILE) keep every estimate so;
 * any other (Infinity from a price past them, NaN) refuses the job before anything is sent or reserved.
 */
export function isCountableEstimate(usdTicks: number): boolean {
  return Number.isSafeInteger(usdTicks) && usdTicks >= 0;
}

/** How many videos a plan makes: a generation's variants (1..MAX_VARIANTS), else one. */
export function jobSize(plan: { operation: OperationRequest['operation']; variants?: number | undefined }): number {
  return plan.operation === 'generate' ? Math.min(MAX_VARIANTS, Math.max(1, Math.floor(plan.variants ?? 1))) : 1;
}

/**
 * What a whole job is expected to cost: each variant is priced as one video (`estimateUsdTicks` is one
 * variant's, as each task reserves it). The confirmation threshold and its question are about this.
 */
export function jobEstimateUsdTicks(plan: {
  operation: OperationRequest['operation'];
  variants?: number | undefined;
  estimateUsdTicks: number;
}): number {
  return plan.estimateUsdTicks * jobSize(plan);
}

/** The threshold a plan's estimate is over, when the server asks its members to confirm videos above it (0: never). */
export function confirmationThreshold(estimateUsdTicks: number, confirmOverUsdTicks: number | undefined): { confirmOverUsdTicks?: number } {
  return confirmOverUsdTicks !== undefined && confirmOverUsdTicks > 0 && estimateUsdTicks > confirmOverUsdTicks
    ? { confirmOverUsdTicks }
    : {};
}
