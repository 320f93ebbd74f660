import { DiscordAPIError, HTTPError } from 'discord.js';
import { GatewayError } from '../gateway/errors.ts';
import type { VideoOperation } from '../gateway/spec.ts';
import { jobEstimateTicks, jobSize, type FormEstimate } from './plan.ts';
import { formatCost, formatEstimate } from '../wording/cost.ts';
import { ENGLISH } from '../i18n/index.ts';
import { describeGatewayError, withRequestId } from '../wording/gateway-errors.ts';
import { NoGatewayAccessError } from './gateway-resolver.ts';
import { TASK_NOT_FOUND, type TaskOutcome, type TaskRecord } from './record.ts';

// What users read when something does not go to plan: plain words, what to do next, and the request id
// support can use. Branches on codes, never on message text (the spec's rule).

/** Regenerate sends the first request again, but Discord's links to its attachments last only about a day. */
export function describeExpiredAttachments(operation: TaskRecord['operation']): string {
  const again =
    operation === 'generate'
      ? 'Run `/video generate` again with fresh attachments.'
      : `Run \`/video ${operation}\` again, with the video attached or picked as \`task\`.`;
  return `That video was made from Discord attachments, and Discord's links to them expire after about a day, so the gateway can no longer fetch them. ${again}`;
}

/** A member pressed a button under someone else's video on a server that keeps them to the video's owner. */
export function describeOwnersButtons(ownerId: string): string {
  return `This is <@${ownerId}>'s video: on this server, only the member who made a video may press its buttons.`;
}

const REFUNDED = 'The quota it used was refunded automatically.';

/** Why a finished task has no video, in plain words. */
export function describeFailure(outcome: TaskOutcome): string {
  const error = outcome.error ?? { code: 'unknown', message: 'The gateway gave no reason.' };
  if (error.code === TASK_NOT_FOUND) {
    // Nothing says the task was refunded, or even that it ended: the gateway just no longer has it.
    return withRequestId(
      ENGLISH,
      'The gateway no longer knows this task (404): it may have restarted and lost it, so no video will come. Try again; a server admin can check with the gateway whether it was charged.',
      outcome.requestId,
    );
  }
  let text: string;
  switch (error.code) {
    case 'invalid_argument':
      text = `The gateway could not make this video: ${error.message} Check the prompt, duration and images and try again.`;
      break;
    case 'permission_denied':
      text = "This server's key is not allowed to do this operation. A server admin can check the key's access.";
      break;
    case 'failed_precondition':
      text = `The model cannot do this (some models cannot edit or extend, or not at this resolution): ${error.message}`;
      break;
    case 'service_unavailable':
      text = 'The video service was overloaded and gave up. Try again in a few minutes.';
      break;
    case 'internal_error':
      text = 'The video service had an internal error. Try again.';
      break;
    case 'timeout':
    case 'deadline_exceeded':
      text = 'The video service did not finish this video in time (it gives up after 10 minutes).';
      break;
    case 'unknown':
      text = `The video could not be made: ${error.message}`;
      break;
    default:
      text = `The video could not be made (\`${error.code}\`): ${error.message}`;
  }
  return withRequestId(ENGLISH, `${text} ${REFUNDED}`, outcome.requestId);
}

export function describeModeration(outcome: TaskOutcome): string {
  return withRequestId(
    ENGLISH,
    'The video was held back by content moderation, so there is nothing to post. Try a different prompt or images.',
    outcome.requestId,
  );
}

export function describeStorageError(outcome: TaskOutcome): string | undefined {
  if (!outcome.storageError) return undefined;
  return `Long-term storage of this video failed (${outcome.storageError}), so it is not kept beyond the temporary link; the video itself is fine.`;
}

/** The gateway's storage gave a lasting link that is not an http(s) address: said instead of sharing it. */
export function describeRefusedPublicUrl(outcome: TaskOutcome): string | undefined {
  const scheme = outcome.storedFile?.refusedPublicUrl;
  if (scheme === undefined) return undefined;
  return `The gateway's storage gave a lasting link that is not an http(s) address${scheme ? ` (\`${scheme}\`)` : ''}, so the bot does not share it.`;
}

/** A video the bot refused to fetch or post (an address that is not public or not http(s), a body that is not a video). */
export function describeRefusedVideo(error: GatewayError): string {
  return describeGatewayError(ENGLISH, error, { key: 'in-use', purpose: 'fetch-video' });
}

/** While polls fail: the card says so, and until when the bot keeps asking. */
export function describeGatewayNotAnswering(task: TaskRecord, givesUpAt: number): string {
  const checks = task.pollErrors === 1 ? 'the last check' : `the last ${task.pollErrors} checks`;
  return `The gateway is not answering (${checks} failed); the bot keeps trying until <t:${Math.floor(givesUpAt / 1000)}:t>.`;
}

/** While fetching or posting a finished video fails: what went wrong, and that the bot tries again. */
export function describeDeliveryRetry(task: TaskRecord): string {
  const failures = task.delivery.failures ?? 0;
  return `${task.delivery.lastError ?? 'Fetching or posting the video failed.'} The bot tries again shortly (${failures} ${failures === 1 ? 'try' : 'tries'} failed so far).`;
}

/**
 * The bot's own deadline passed without a final answer. Nothing says the gateway refunded anything: it may
 * still have made (and charged) the video, so admins get the ids to check.
 */
export function describeTimeout(task: TaskRecord): string {
  const minutes = Math.round(((task.finishedAt ?? Date.now()) - (task.submittedAt ?? task.createdAt)) / 60_000);
  const why =
    task.pollErrors > 0
      ? `The bot lost track of this video: its last ${task.pollErrors === 1 ? 'question' : `${task.pollErrors} questions`} to the gateway failed, and after ${minutes} min it stopped asking.`
      : `The gateway still had not finished this video after ${minutes} min, so the bot stopped waiting.`;
  const check = task.gatewayId
    ? `It may still have been made and charged: a server admin can look up gateway task \`${task.gatewayId}\`.`
    : 'It may still have been made and charged.';
  return withRequestId(ENGLISH, `${why} ${check}`, task.outcome.requestId);
}

/** Why the bot stopped following a task whose stored record it no longer has, or can no longer read. */
export type LostTaskReason = 'gone' | 'unreadable';

/**
 * The bot stopped following a task because its own storage lost the record (a store restarted without
 * persistence, say) or holds one it cannot read. Nothing says what the gateway did with it, so admins get
 * the ids to check.
 */
export function describeLostTask(reason: LostTaskReason, ids: { gatewayId: string | undefined; requestId: string | undefined }): string {
  const why =
    reason === 'gone'
      ? "The bot lost this task: its record disappeared from the bot's storage (the storage may have restarted without keeping its data), so the bot can no longer follow it and no video will be posted here."
      : "The bot can no longer read this task's stored record, so it stopped following it and no video will be posted here.";
  const check = ids.gatewayId
    ? `It may still have been made and charged: a server admin can look up gateway task \`${ids.gatewayId}\`.`
    : 'It may still have been made and charged.';
  return withRequestId(ENGLISH, `${why} ${check}`, ids.requestId);
}

export function describeExpired(task: TaskRecord): string {
  return withRequestId(
    ENGLISH,
    'The video was ready, but its temporary link expired before the bot could fetch it. Regenerate it to get a new one.',
    task.outcome.requestId,
  );
}

export function describeUnknownOutcome(task: TaskRecord): string {
  return withRequestId(
    ENGLISH,
    'The bot lost track of this request while sending it, so it cannot tell whether the gateway accepted (and charged) it. If no video shows up here, try again.',
    task.outcome.requestId,
  );
}

const KIBIBYTE = 1024;
const MEBIBYTE = 1024 * KIBIBYTE;

/** A size as people read it: bytes, KB below 1 MB, else MB; three significant digits plus `extraDecimals`. */
function formatSize(bytes: number, extraDecimals = 0): string {
  if (bytes < KIBIBYTE) return `${bytes} bytes`;
  const [value, unit] = bytes < MEBIBYTE ? [bytes / KIBIBYTE, 'KB'] : [bytes / MEBIBYTE, 'MB'];
  const decimals = (value < 10 ? 2 : value < 100 ? 1 : 0) + extraDecimals;
  return `${value.toFixed(decimals)} ${unit}`;
}

/** Why a video is linked rather than uploaded: its size (when known) against the server's limit, never reading as equal. */
export function describeOverUploadLimit(size: number | undefined, limit: number): string {
  if (size === undefined) return `The video is over this server's upload limit of ${formatSize(limit)}.`;
  let extraDecimals = 0;
  while (extraDecimals < 3 && formatSize(size, extraDecimals) === formatSize(limit, extraDecimals)) extraDecimals++;
  return `The video is ${formatSize(size, extraDecimals)}, over this server's upload limit of ${formatSize(limit, extraDecimals)}.`;
}

/** Discord answered that the task's channel no longer exists (10003). */
export const CHANNEL_DELETED = 'The channel this video was made in has been deleted, so the video could not be posted there.';

/** A channel permission the bot needs to post a video, as Discord's settings name it. */
export type PostingPermission = 'View Channel' | 'Send Messages' | 'Attach Files';

/** Discord refused the bot's post for lack of a permission in the channel. */
export function describeMissingPermission(permission: PostingPermission): string {
  switch (permission) {
    case 'View Channel':
      return 'The bot cannot see this channel (it lacks the **View Channel** permission here), so the video could not be posted. A server admin can give it View Channel, Send Messages and Attach Files in this channel.';
    case 'Send Messages':
      return 'The bot may not send messages in this channel (it lacks the **Send Messages** permission here), so the video could not be posted. A server admin can give it Send Messages and Attach Files in this channel.';
    case 'Attach Files':
      return 'The bot may not upload files in this channel (it lacks the **Attach Files** permission here).';
  }
}

/** Why a finished video could not be fetched or posted this time, in plain words (the task is tried again, then closed). */
export function describeDeliveryFailure(error: unknown): string {
  if (error instanceof NoGatewayAccessError) return `The bot could not fetch the finished video: ${error.userMessage}`;
  if (error instanceof GatewayError)
    return `The bot could not fetch the finished video. ${describeGatewayError(ENGLISH, error, { key: 'in-use', purpose: 'fetch-video' })}`;
  if (error instanceof DiscordAPIError || error instanceof HTTPError)
    return `Discord kept refusing to show the video (HTTP ${error.status}).`;
  return 'Something went wrong while the bot fetched or posted the finished video.';
}

// ---- A video that waits for its member's confirmation (`/config budget confirm_over_usd`) ----------------

/** The verb of a held video's confirm button, and of its question: what pressing it does. */
export function confirmVerb(plan: { operation: VideoOperation; regenerated?: boolean }): string {
  if (plan.regenerated) return 'Regenerate';
  return plan.operation === 'generate' ? 'Generate' : plan.operation === 'edit' ? 'Edit' : 'Extend';
}

/** " 3 variants" after the verb of a job of several; nothing for one video. */
function variantsWording(plan: { operation: VideoOperation; variants?: number }): string {
  const size = jobSize(plan);
  return size > 1 ? ` ${size} variants` : '';
}

/** The private question a video estimated over the server's threshold waits on. */
export function describeConfirmation(
  plan: { operation: VideoOperation; regenerated?: boolean; estimateTicks: number; confirmOverTicks?: number; variants?: number },
  expiresAt: number,
): string {
  const verb = confirmVerb(plan);
  const threshold = plan.confirmOverTicks === undefined ? '' : ` over ${formatCost(plan.confirmOverTicks)}`;
  return [
    `**${verb}${variantsWording(plan)} for ${formatEstimate(jobEstimateTicks(plan))}?**`,
    `This server asks before a video estimated${threshold} is made. Nothing is sent until you press **${verb}**; this question expires <t:${Math.floor(expiresAt / 1000)}:R>.`,
  ].join('\n');
}

/** What a held video's question says once it is answered, or left unanswered. */
export function describeConfirmationClosed(
  plan: { operation: VideoOperation; regenerated?: boolean; estimateTicks: number; variants?: number },
  how: 'confirmed' | 'refused' | 'cancelled' | 'expired',
): string {
  switch (how) {
    case 'confirmed':
      return `**${confirmVerb(plan)}** pressed: sent for ${formatEstimate(jobEstimateTicks(plan))}. Its card is in the channel.`;
    case 'refused':
      return `**${confirmVerb(plan)}** pressed, but the video could not be made; the reason follows.`;
    case 'cancelled':
      return 'Cancelled: nothing was sent to the gateway and nothing was spent.';
    case 'expired':
      return 'This question expired unanswered: nothing was sent to the gateway and nothing was spent. Run the command again to make the video.';
  }
}

/** A press of a held video's button when the question is no longer open. */
export const CONFIRMATION_GONE =
  'This question is no longer open (it was answered, or it expired): nothing more was sent. Run the command again to make the video.';

/** Someone else pressed a member's confirm or cancel button. */
export function describeOthersConfirmation(userId: string): string {
  return `This question is <@${userId}>'s: only the member who asked for the video may answer it.`;
}

/** Discord's longest form title. */
export const MAX_FORM_TITLE_LENGTH = 45;

/**
 * A form's title with what its video is expected to cost (`Extend this video (about $0.08 a second)`), or
 * the title alone when there is no estimate or the two would not fit Discord's limit.
 */
export function formTitle(title: string, estimate: FormEstimate | undefined): string {
  if (!estimate) return title;
  const price = estimate.per === 'second' ? `${formatEstimate(estimate.ticks)} a second` : formatEstimate(estimate.ticks);
  const withPrice = `${title} (${price})`;
  return withPrice.length <= MAX_FORM_TITLE_LENGTH ? withPrice : title;
}
