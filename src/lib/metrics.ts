// What the bot counts for its operator, as one small interface every layer may receive: the parts record
// through it and know nothing of how it is exposed (src/ops/ serves it as Prometheus text). Label values
// are few and fixed (states, outcomes, codes, routes with their ids taken out): never a secret, a prompt
// or a user id.

export type VideoSubmissionOutcome = 'accepted' | 'refused' | 'limited' | 'unknown';
export type DeliveryFailureReason = 'posted_as_link' | 'channel_deleted' | 'missing_permission' | 'error';
export type VoiceDirection = 'in' | 'out';
/** Why the bot stopped following a video task: its record is gone from the store, or cannot be read. */
export type VideoTaskLostReason = 'gone' | 'unreadable';

export interface BotMetrics {
  /** A call to the gateway answered (`status`), or failed without an answer ('error'). */
  gatewayRequest(method: string, route: string, status: number | 'error'): void;
  videoSubmission(outcome: VideoSubmissionOutcome, layer: string, code: string | undefined): void;
  /** A video task reached a terminal state. */
  videoTaskFinished(state: string, layer: string): void;
  /** The bot stopped following a video task whose stored record disappeared or became unreadable. */
  videoTaskLost(reason: VideoTaskLostReason): void;
  /** The gateway was asked for a task's status once. */
  videoPoll(layer: string): void;
  /** A finished video was posted, this long after the gateway's terminal status. */
  videoPosted(secondsSinceFinished: number): void;
  videoDeliveryFailure(reason: DeliveryFailureReason): void;
  /** Discord answered 429 (`global`: the bot's global limit), or the REST client tried a request again. */
  discordRateLimited(global: boolean): void;
  discordRetry(): void;
  /** A voice conversation began (+1) or ended (-1). */
  voiceConversations(change: 1 | -1): void;
  /** Opus frames heard from a channel ('in') or played into it ('out'). */
  voiceFrames(direction: VoiceDirection, count: number): void;
  /** Members' frames that could not be decrypted (the library failed, or the bot held no key yet). */
  voiceDecryptFailures(count: number): void;
  realtimeReconnect(): void;
  realtimeRenewal(): void;
  /** How long audio took one way, in seconds: 'in' from an append's oldest packet heard to the append leaving, 'out' from an answer's first audio to its play. */
  voiceLatency(direction: VoiceDirection, seconds: number): void;
  /** Dollars a server key was counted as spending: what the gateway reported, or the bot's estimate. */
  spend(feature: SpendFeature, kind: SpendKind, usd: number): void;
  /** Video jobs waiting in the lines of the keys this process sends on, as last read. */
  videoQueueWaiting(jobs: number): void;
  /** A job left its key's line for the gateway, this long after its member asked. */
  videoQueueWaited(seconds: number): void;
  /** The gateway refused a submission for the key's limits (`too_many_requests`, `rate_limit`): the job waits again. */
  gatewayLimitRefusal(code: string): void;
}

export type SpendFeature = 'video' | 'voice';
export type SpendKind = 'reported' | 'estimated';

/** Counts nothing: the default of every part, and the bot's when OPS_PORT is unset. */
export const NO_METRICS: BotMetrics = {
  gatewayRequest() {},
  videoSubmission() {},
  videoTaskFinished() {},
  videoTaskLost() {},
  videoPoll() {},
  videoPosted() {},
  videoDeliveryFailure() {},
  discordRateLimited() {},
  discordRetry() {},
  voiceConversations() {},
  voiceFrames() {},
  voiceDecryptFailures() {},
  realtimeReconnect() {},
  realtimeRenewal() {},
  voiceLatency() {},
  spend() {},
  videoQueueWaiting() {},
  videoQueueWaited() {},
  gatewayLimitRefusal() {},
};

/** A gateway path as a route label: ids (any segment with a digit, other than a version) become `:id`, a full URL (a native video address) `video url`. */
export function routeLabel(target: string): string {
  if (!target.startsWith('/')) return 'video url';
  const path = target.split('?')[0] ?? target;
  return path
    .split('/')
    .map((segment) => (segment === '' || /^v\d+$/.test(segment) || /^[a-z]{1,24}$/.test(segment) ? segment : ':id'))
    .join('/');
}

/** A gateway error code as a label: the code when it is a plain word (the contract's codes are), else its HTTP status, else `none`. */
export function codeLabel(code: string | undefined, status: number | undefined): string {
  if (code !== undefined && /^[a-z][a-z0-9_.]{0,47}$/.test(code)) return code;
  return status === undefined ? 'none' : `http_${status}`;
}
