import {
  ButtonStyle,
  ComponentType,
  DiscordAPIError,
  HTTPError,
  type APIActionRowComponent,
  type APIComponentInMessageActionRow,
} from 'discord.js';
import { videoActionId } from './actions.ts';
import { GatewayError } from '../gateway/errors.ts';
import type { VideoOperation } from '../gateway/spec.ts';
import { formatNumber, translator, type Locale } from '../i18n/index.ts';
import { jobEstimateUsdTicks, jobSize, type FormEstimate } from './plan.ts';
import { formatCostIn, formatEstimateIn } from '../wording/cost.ts';
import { describeGatewayError, withRequestId } from '../wording/gateway-errors.ts';
import { describeStoredIssue } from '../wording/validation.ts';
import { word } from '../wording/notice.ts';
import { NoGatewayAccessError } from './gateway-resolver.ts';
import { TASK_NOT_FOUND, type TaskOutcome, type TaskRecord, type VaryNote } from './record.ts';

// What users read when something does not go to plan: plain words, what to do next, and the request id
// support can use. Branches on codes, never on message text (the spec's rule). Each function takes the
// language it speaks: the member's for a private answer, the card's (the server's) for what the card shows.

/** Vary's note on its card, in `locale`: why the variant's first frame was not sent. */
export function describeVaryNote(locale: Locale, note: VaryNote): string {
  const tr = translator(locale);
  const broken = note.broken && (describeStoredIssue(locale, note.broken) ?? note.broken.rule);
  const reason =
    note.reason === 'no-image' ? tr('video.card.vary-note.no-image', { message: broken ?? '' }) : tr(`video.card.vary-note.${note.reason}`);
  return tr('video.card.vary-note', { reason });
}

/** The gateway's failure codes the card words, each its own sentence; any other is named with its message. */
const FAILURE_CODES = new Set([
  'invalid_argument',
  'permission_denied',
  'failed_precondition',
  'service_unavailable',
  'internal_error',
  'timeout',
  'deadline_exceeded',
  'unknown',
]);

/**
 * Why a finished task has no video, in plain words. A task of a member's own install is made on the bot
 * operator's key: only the operator can check it, so no server admin is named.
 */
export function describeFailure(locale: Locale, outcome: TaskOutcome, task: Pick<TaskRecord, 'userInstall'>): string {
  const tr = translator(locale);
  const operators = task.userInstall !== undefined;
  const error = outcome.error ?? { code: 'unknown', message: tr('video.failure.no-reason') };
  if (error.code === TASK_NOT_FOUND) {
    // Nothing says the task was refunded, or even that it ended: the gateway just no longer has it.
    return withRequestId(locale, tr(operators ? 'video.failure.not-found.operator' : 'video.failure.not-found'), outcome.requestId);
  }
  const code = FAILURE_CODES.has(error.code) ? error.code : 'other';
  const text =
    operators && code === 'permission_denied'
      ? tr('video.failure.permission-denied.operator')
      : tr('video.failure', { code, given: error.code, message: error.message });
  return withRequestId(locale, `${text} ${tr('video.failure.refunded')}`, outcome.requestId);
}

/** The provider made the video but withheld it (`respect_moderation: false`): there is nothing to post. */
export function describeModeration(locale: Locale, outcome: TaskOutcome): string {
  return withRequestId(locale, translator(locale)('video.card.moderated'), outcome.requestId);
}

/**
 * The provider's content moderation refused the task (a moderation code). A failed task is refunded, so
 * nothing was charged, unless the gateway reported a cost all the same: then the card's cost line says it.
 */
export function describeModerationRefusal(locale: Locale, outcome: TaskOutcome): string {
  const charged = (outcome.costUsdTicks ?? 0) > 0;
  return withRequestId(locale, translator(locale)('video.card.refused', { charged: charged ? 'yes' : 'no' }), outcome.requestId);
}

export function describeStorageError(locale: Locale, outcome: TaskOutcome): string | undefined {
  if (!outcome.storageError) return undefined;
  return translator(locale)('video.card.storage-failed', { error: outcome.storageError });
}

/** The gateway's storage gave a lasting link that is not an http(s) address: said instead of sharing it. */
export function describeRefusedPublicUrl(locale: Locale, outcome: TaskOutcome): string | undefined {
  const scheme = outcome.storedFile?.refusedPublicUrl;
  if (scheme === undefined) return undefined;
  return translator(locale)('video.card.refused-public-url', { scheme: scheme ? `\`${scheme}\`` : '', named: scheme ? 'yes' : 'no' });
}

/** The key a task is made on, as a gateway error names it: the server's, or the operator's for a member's own install. */
export function taskKey(task: Pick<TaskRecord, 'userInstall'>): 'in-use' | 'operator' {
  return task.userInstall ? 'operator' : 'in-use';
}

/** What the card of a task keeps of its delivery: in the card's language, stored with the task. */
type DeliveredTask = Pick<TaskRecord, 'locale' | 'userInstall'>;

/** A video the bot refused to fetch or post (an address that is not public or not http(s), a body that is not a video). */
export function describeRefusedVideo(task: DeliveredTask, error: GatewayError): string {
  return describeGatewayError(task.locale, error, { key: taskKey(task), purpose: 'fetch-video' });
}

/** A Discord timestamp of `at` as a time of day, which each reader's client shows in their own zone and language. */
function discordTime(at: number): string {
  return `<t:${Math.floor(at / 1000)}:t>`;
}

/** While polls fail: the card says so, and until when the bot keeps asking. */
export function describeGatewayNotAnswering(locale: Locale, task: TaskRecord, givesUpAt: number): string {
  return translator(locale)('video.card.gateway-not-answering', { failed: task.pollErrors, until: discordTime(givesUpAt) });
}

/** While fetching or posting a finished video fails: what went wrong, and that the bot tries again. */
export function describeDeliveryRetry(locale: Locale, task: TaskRecord): string {
  const tr = translator(locale);
  const failures = task.delivery.failures ?? 0;
  return tr('video.card.delivery-retry', { error: task.delivery.lastError ?? tr('video.card.delivery-failed'), failures });
}

/** That the task may still have been made, and with which id an admin (the bot's operator, for an own install) can check. */
function mayStillHaveBeenMade(locale: Locale, gatewayId: string | undefined, ownInstall: boolean): string {
  const tr = translator(locale);
  if (!gatewayId) return tr('video.card.may-be-charged');
  return tr(ownInstall ? 'video.card.may-be-charged.look-up.operator' : 'video.card.may-be-charged.look-up', { id: gatewayId });
}

/**
 * The bot's own deadline passed without a final answer. Nothing says the gateway refunded anything: it may
 * still have made (and charged) the video, so admins get the ids to check.
 */
export function describeTimeout(locale: Locale, task: TaskRecord): string {
  const tr = translator(locale);
  const minutes = Math.round(((task.finishedAt ?? Date.now()) - (task.submittedAt ?? task.createdAt)) / 60_000);
  const why =
    task.pollErrors > 0
      ? tr('video.card.timeout.lost-track', { failed: task.pollErrors, minutes })
      : tr('video.card.timeout.not-finished', { minutes });
  return withRequestId(
    locale,
    `${why} ${mayStillHaveBeenMade(locale, task.gatewayId, task.userInstall !== undefined)}`,
    task.outcome.requestId,
  );
}

/** Why the bot stopped following a task whose stored record it no longer has, or can no longer read. */
export type LostTaskReason = 'gone' | 'unreadable';

/**
 * The bot stopped following a task because its own storage lost the record (a store restarted without
 * persistence, say) or holds one it cannot read. Nothing says what the gateway did with it, so admins get
 * the ids to check.
 */
export function describeLostTask(
  locale: Locale,
  reason: LostTaskReason,
  ids: { gatewayId: string | undefined; requestId: string | undefined; ownInstall: boolean },
): string {
  const why = translator(locale)('video.card.lost', { reason });
  return withRequestId(locale, `${why} ${mayStillHaveBeenMade(locale, ids.gatewayId, ids.ownInstall)}`, ids.requestId);
}

export function describeExpired(locale: Locale, task: TaskRecord): string {
  return withRequestId(locale, translator(locale)('video.card.expired'), task.outcome.requestId);
}

export function describeUnknownOutcome(locale: Locale, task: TaskRecord): string {
  return withRequestId(locale, translator(locale)('video.card.unknown-outcome'), task.outcome.requestId);
}

const KIBIBYTE = 1024;
const MEBIBYTE = 1024 * KIBIBYTE;

/** A size as people read it in `locale`: bytes, KB below 1 MB, else MB; three significant digits plus `extraDecimals`. */
function formatSize(locale: Locale, bytes: number, extraDecimals = 0): string {
  if (bytes < KIBIBYTE) return formatNumber(locale, bytes, { style: 'unit', unit: 'byte', unitDisplay: 'long' });
  const [value, unit] = bytes < MEBIBYTE ? [bytes / KIBIBYTE, 'kilobyte'] : [bytes / MEBIBYTE, 'megabyte'];
  const decimals = (value < 10 ? 2 : value < 100 ? 1 : 0) + extraDecimals;
  return formatNumber(locale, value, {
    style: 'unit',
    unit,
    unitDisplay: 'short',
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
  });
}

/**
 * Why a video is linked rather than uploaded: its size (when known) against the limit Discord gave where it
 * was asked (a server's, or for a member's own install wherever they asked), never reading as equal.
 */
export function describeOverUploadLimit(task: DeliveredTask & Pick<TaskRecord, 'attachmentSizeLimit'>, size: number | undefined): string {
  const { locale, attachmentSizeLimit: limit } = task;
  const tr = translator(locale);
  const own = task.userInstall !== undefined;
  if (size === undefined)
    return tr(own ? 'video.card.over-upload-limit.own-install' : 'video.card.over-upload-limit', { limit: formatSize(locale, limit) });
  let extraDecimals = 0;
  while (extraDecimals < 3 && formatSize(locale, size, extraDecimals) === formatSize(locale, limit, extraDecimals)) extraDecimals++;
  return tr(own ? 'video.card.over-upload-limit-size.own-install' : 'video.card.over-upload-limit-size', {
    size: formatSize(locale, size, extraDecimals),
    limit: formatSize(locale, limit, extraDecimals),
  });
}

/** Discord answered that the task's channel no longer exists (10003). */
export function describeChannelDeleted(task: DeliveredTask): string {
  return translator(task.locale)('video.card.channel-deleted');
}

/** Discord refused the file over a limit lower than the one it announced: a link instead. */
export function describeOverDiscordLimit(task: DeliveredTask): string {
  return translator(task.locale)('video.card.over-discord-limit');
}

/** Neither the file nor a link can be shown, and why the file could not (`linkReason`). */
export function describeNoLink(task: DeliveredTask, linkReason: string | undefined): string {
  return translator(task.locale)('video.card.no-link', { reason: linkReason ?? '' }).trim();
}

/** The bot gave up delivering after `tries`, and why the last one failed. */
export function describeGaveUp(task: DeliveredTask, reason: string, tries: number): string {
  return translator(task.locale)('video.card.gave-up', { reason, tries });
}

/** The language of what only a member's own install's member reads (their DMs, `/video status`): theirs, else the card's. */
export function membersLanguage(task: DeliveredTask): Locale {
  return task.userInstall?.locale ?? task.locale;
}

/** A member's own install whose DMs are closed to the bot: read only by them (`/video status`), in their language. */
export function describeDmClosed(task: DeliveredTask): string {
  return translator(membersLanguage(task))('user-install.card.dm-closed');
}

/** A channel permission the bot needs to post a video, as Discord's settings name it. */
export type PostingPermission = 'View Channel' | 'Send Messages' | 'Attach Files';

const PERMISSION_KEYS = { 'View Channel': 'view', 'Send Messages': 'send', 'Attach Files': 'attach' } as const;

/** Discord refused the bot's post for lack of a permission in the channel. */
export function describeMissingPermission(task: DeliveredTask, permission: PostingPermission): string {
  return translator(task.locale)('video.card.missing-permission', { permission: PERMISSION_KEYS[permission] });
}

/** Why a finished video could not be fetched or posted this time, in plain words (the task is tried again, then closed). */
export function describeDeliveryFailure(task: DeliveredTask, error: unknown): string {
  const { locale } = task;
  const tr = translator(locale);
  if (error instanceof NoGatewayAccessError) return tr('video.card.fetch-failed.no-access', { why: word(locale, error.notice) });
  if (error instanceof GatewayError)
    return tr('video.card.fetch-failed', {
      why: describeGatewayError(locale, error, { key: taskKey(task), purpose: 'fetch-video' }),
    });
  if (error instanceof DiscordAPIError || error instanceof HTTPError) return tr('video.card.discord-refused', { status: error.status });
  return tr('video.card.delivery-went-wrong');
}

// ---- A video that waits for its member's confirmation (`/config budget confirm_over_usd`) ----------------

/** What pressing a held video's confirm button does: the verb of its button and of its question. */
function confirmAction(plan: { operation: VideoOperation; regenerated?: boolean }): string {
  return plan.regenerated ? 'regenerate' : plan.operation;
}

/** The verb of a held video's confirm button, and of its question: what pressing it does. */
export function confirmVerb(locale: Locale, plan: { operation: VideoOperation; regenerated?: boolean }): string {
  return translator(locale)('video.confirm.verb', { action: confirmAction(plan) });
}

/** The private question a video estimated over the server's threshold waits on. */
export function describeConfirmation(
  locale: Locale,
  plan: { operation: VideoOperation; regenerated?: boolean; estimateUsdTicks: number; confirmOverUsdTicks?: number; variants?: number },
  expiresAt: number,
): string {
  const tr = translator(locale);
  const verb = confirmVerb(locale, plan);
  return [
    tr('video.confirm.question', { verb, variants: jobSize(plan), estimate: formatEstimateIn(locale, jobEstimateUsdTicks(plan)) }),
    tr('video.confirm.why', {
      threshold: plan.confirmOverUsdTicks === undefined ? '' : formatCostIn(locale, plan.confirmOverUsdTicks),
      over: plan.confirmOverUsdTicks === undefined ? 'no' : 'yes',
      verb,
      expires: `<t:${Math.floor(expiresAt / 1000)}:R>`,
    }),
  ].join('\n');
}

/** What a held video's question says once it is answered, or left unanswered. */
export function describeConfirmationClosed(
  locale: Locale,
  plan: { operation: VideoOperation; regenerated?: boolean; estimateUsdTicks: number; variants?: number },
  how: 'confirmed' | 'refused' | 'cancelled' | 'expired',
): string {
  return translator(locale)('video.confirm.closed', {
    how,
    verb: confirmVerb(locale, plan),
    estimate: formatEstimateIn(locale, jobEstimateUsdTicks(plan)),
  });
}

/** The question a held video asks its member privately: its words and its two buttons. */
export interface ConfirmationQuestion {
  content: string;
  components: APIActionRowComponent<APIComponentInMessageActionRow>[];
}

/** A held video's question, in the language of the member it waits on. */
export function heldQuestion(
  held: { locale: Locale; expiresAt: number },
  plan: Parameters<typeof describeConfirmation>[1] & { taskId: string },
): ConfirmationQuestion {
  const { locale } = held;
  return {
    content: describeConfirmation(locale, plan, held.expiresAt),
    components: [
      {
        type: ComponentType.ActionRow,
        components: [
          {
            type: ComponentType.Button,
            style: ButtonStyle.Primary,
            label: confirmVerb(locale, plan),
            custom_id: videoActionId('confirm', plan.taskId),
          },
          {
            type: ComponentType.Button,
            style: ButtonStyle.Secondary,
            label: translator(locale)('video.confirm.cancel'),
            custom_id: videoActionId('cancel', plan.taskId),
          },
        ],
      },
    ],
  };
}

/** The private question the Delete button of a job's card asks: delete it for everyone, or keep it. */
export function deleteCardQuestion(locale: Locale, taskId: string): ConfirmationQuestion {
  const tr = translator(locale);
  return {
    content: tr('video.delete.question'),
    components: [
      {
        type: ComponentType.ActionRow,
        components: [
          {
            type: ComponentType.Button,
            style: ButtonStyle.Danger,
            label: tr('video.delete.confirm'),
            custom_id: videoActionId('delete-confirm', taskId),
          },
          {
            type: ComponentType.Button,
            style: ButtonStyle.Secondary,
            label: tr('video.delete.keep'),
            custom_id: videoActionId('delete-keep', taskId),
          },
        ],
      },
    ],
  };
}

/** What a held video's question says once it is answered by its member's press, or left unanswered. */
export function heldQuestionClosed(
  held: { locale: Locale; plan: Parameters<typeof describeConfirmationClosed>[1] },
  how: 'confirmed' | 'refused' | 'expired',
): string {
  return describeConfirmationClosed(held.locale, held.plan, how);
}

/** A press of a held video's button when the question is no longer open. */
export function describeConfirmationGone(locale: Locale): string {
  return translator(locale)('video.confirm.gone');
}

/** Someone else pressed a member's confirm or cancel button. */
export function describeOthersConfirmation(locale: Locale, userId: string): string {
  return translator(locale)('video.confirm.others', { user: `<@${userId}>` });
}

/** Discord's longest form title. */
export const MAX_FORM_TITLE_LENGTH = 45;

/**
 * A form's title with what its video is expected to cost (`Extend this video (about $0.08 a second)`), or
 * the title alone when there is no estimate or the two would not fit Discord's limit.
 */
export function formTitle(locale: Locale, title: string, estimate: FormEstimate | undefined): string {
  if (!estimate) return title;
  const withPrice = translator(locale)('video.form.title-with-price', {
    title,
    price: formatEstimateIn(locale, estimate.usdTicks),
    per: estimate.per,
  });
  return withPrice.length <= MAX_FORM_TITLE_LENGTH ? withPrice : title;
}
