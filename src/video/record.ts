import { LAYERS, VIDEO_OPERATIONS, type Layer, type VideoOperation } from '../gateway/spec.ts';
import { z } from 'zod';
import { ENGLISH, SUPPORTED_LOCALES, resolveLocale, type Locale } from '../i18n/index.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import { isRecord } from '../lib/json.ts';
import type { SpendReservation, TaskCost } from '../ports/guild-policy.ts';
import { versionedRecord } from '../store/index.ts';

// A video task as the bot keeps it: written before the user hears "accepted", updated as the gateway
// answers, and read back after any restart. Its shape is the store's schema (taskSchema, at the end),
// checked on every read; a record of an earlier version is upgraded as it is read.

const TASK_STATES = [
  /** In its key's line (key-queue.ts), nothing sent yet: it is sent when a slot of the key frees. */
  'waiting',
  /** Written just before the submission: if the bot dies now, the outcome is unknown. */
  'submitting',
  'running',
  'succeeded',
  'failed',
  /** The gateway's temporary video expired before the bot could fetch it (native `expired`). */
  'expired',
  /** The bot's own deadline passed without a terminal answer from the gateway. */
  'timed_out',
  /** The bot cannot know whether the gateway accepted the task (it died or lost the answer mid-submit). */
  'unknown',
  /** Taken out of its key's line before it was sent (`cancelledBy`): nothing was sent or charged. */
  'cancelled',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

const GENERATION_MODES = ['text-to-video', 'image-to-video', 'reference', 'first-last-frame'] as const;
export type GenerationMode = (typeof GENERATION_MODES)[number];
export type TaskMode = GenerationMode | 'edit' | 'extend';

export interface StoredFile {
  fileId?: string;
  filename?: string;
  expiresAt?: number;
  /** Only an http(s) address. */
  publicUrl?: string;
  /**
   * The gateway's `public_url` was not an http(s) address: its scheme (such as `javascript:`; empty
   * when it had none), never the address itself, which is not kept, shown or shared.
   */
  refusedPublicUrl?: string;
}

export interface TaskOutcome {
  videoUrl?: string;
  storedFile?: StoredFile;
  storageError?: string;
  moderated?: boolean;
  costUsdTicks?: number;
  error?: { code: string; message: string };
  requestId?: string;
}

/** The status card, a message in Components V2. */
export interface StatusCard {
  applicationId: string;
  /** The interaction token edits the card for 15 minutes; after that the bot edits it as a channel message. */
  interactionToken: string;
  tokenExpiresAt: number;
  messageId?: string;
  /** When the card was last edited, to edit at most once every few seconds. */
  renderedAt?: number;
  /** What the card last showed, to skip edits that change nothing. */
  renderedState?: string;
}

/** How a shown video is in its card: its file (which the card's media gallery names), or a link to it. */
export type ShownVideo =
  | { as: 'file'; fileName: string }
  /** `reason`: why not the file (too large for Discord, no Attach Files…), in the card's language. */
  | { as: 'link'; reason?: string };

/** What every state of a delivery counts of its tries. */
interface DeliveryTries {
  /** Edits of the card with the video (or posts of it) tried. */
  attempts: number;
  /** Failed tries to fetch or show the video, kept across restarts: past the policy's limit the task is closed. */
  failures?: number;
  /** What went wrong last: shown on the card while the next try waits, and why it closed once closed. */
  lastError?: string;
}

/**
 * Showing a finished video once, in its status card (delivery.ts draws the machine). The task's id is the
 * nonce of any post of its card (Discord answers a repeat within a few minutes with the first message).
 */
export type Delivery =
  /** Not yet shown (the task may still be running). */
  | (DeliveryTries & { state: 'waiting' })
  /**
   * About to put the video into the status card: an edit, which shows one video however often it is
   * repeated, so a restart edits again. `postingSince`: when the first try went, since a post of the card
   * with the nonce (Discord honours one only for a few minutes) may have gone out from then on.
   */
  | (DeliveryTries & { state: 'posting'; postingSince: number })
  /**
   * Shown in `messageId`: the status card, or the task's own card in its member's DMs. `attachmentUrl`:
   * the posted file's url, the source for edits and extensions of this task; `attachmentId`: its id on
   * the card, which a later edit of a shared card lists to keep the file.
   */
  | (DeliveryTries & {
      state: 'posted';
      postingSince: number;
      messageId: string;
      video: ShownVideo;
      attachmentUrl?: string;
      attachmentId?: string;
    })
  /** Nothing to show (failure, moderation) or showing failed for good: the card says why. */
  | (DeliveryTries & { state: 'closed'; postingSince?: number });

export type DeliveryState = Delivery['state'];
export type PostedDelivery = Extract<Delivery, { state: 'posted' }>;

/** When the task's first post or edit with its video was tried; undefined when none was. */
export function postingSince(delivery: Delivery): number | undefined {
  return delivery.state === 'waiting' ? undefined : delivery.postingSince;
}

/** The delivery closed, with why (`lastError`), keeping its tries. */
export function closedDelivery(delivery: Delivery, lastError = delivery.lastError, failures = delivery.failures): Delivery {
  const since = postingSince(delivery);
  return {
    state: 'closed',
    attempts: delivery.attempts,
    ...(failures === undefined ? {} : { failures }),
    ...(lastError === undefined ? {} : { lastError }),
    ...(since === undefined ? {} : { postingSince: since }),
  };
}

/**
 * A task's place in a job of several variants submitted together from one request (`/video generate
 * variants`): the job's id is its first task's, which owns the card (its interaction token); the others
 * edit the same card. Unset on a job of one.
 */
export interface JobPlace {
  id: string;
  /** 1..size, in the order the variants were submitted. */
  number: number;
  size: number;
  /** Every task of the job in number order, this one included: the card is drawn from all of them. */
  taskIds: string[];
  /** Variants asked for but not sent (a limit or a budget in the way), and why: the card says so. */
  unsent?: { count: number; reason: string };
}

/**
 * Where a task made through a member's own install of the app was asked for, which the bot cannot write
 * to as a channel (a server that has not added it, a DM, a private channel): the job's card is the
 * interaction's answer, edited through its token while it lives. What the task still has to show after that
 * (its video, or why there is none) goes to the member's DMs as a card of the task's own, with a link back
 * to where they asked; the job's card there stays as the token left it.
 */
export interface UserInstallTask {
  /** The server it was asked in; unset in a DM or a private channel. */
  guildId?: string;
  /** The bot's DM channel with the member, once the task's card went there. */
  dmChannelId?: string;
  /** The task's card in that channel, edited from then on (`delivery.messageId` is it once its video is shown there). */
  dmMessageId?: string;
  /** The member's language, which their DMs are in (the card where they asked is in the server's). */
  locale?: Locale;
  /**
   * Set once the job's card where they asked had its last edit, shortly before the interaction's token
   * ends, while something of the job was still to come: what the card said of where the rest goes (`dms`:
   * their DMs; `status`: their DMs were known closed, so `/video status`). From then on the card there is
   * left as it is, and everything else goes to their DMs.
   */
  handedOff?: HandoffNote;
}

const HANDOFF_NOTES = ['dms', 'status'] as const;
export type HandoffNote = (typeof HANDOFF_NOTES)[number];

/**
 * How long before its interaction token can no longer be used (`card.tokenExpiresAt`, itself 30 s short of
 * Discord's 15 minutes) the job card of a member's own install gets its last edit, saying where the rest of
 * the job will come: 13 min 30 s after the interaction. A minute leaves room for a tracker step that waits
 * for a poll slot, the store, or Discord's rate limits, and the edit still lands while the token lives.
 */
export const HANDOFF_LEAD_MS = 60_000;

/**
 * When a task of a member's own install has its job's card handed off (see `handedOff`); undefined for any
 * other task, one handed off already, or one whose card is in their DMs. Derived from the stored token time,
 * so a restart finds the same moment.
 */
export function handoffAt(task: Pick<TaskRecord, 'userInstall' | 'card'>): number | undefined {
  const place = task.userInstall;
  if (!place || place.handedOff !== undefined || place.dmMessageId !== undefined || task.card.tokenExpiresAt <= 0) return undefined;
  return task.card.tokenExpiresAt - HANDOFF_LEAD_MS;
}

/** Whether `now` is the moment to hand off the task's job card: past `handoffAt()`, while the token still answers. */
export function handoffDue<T extends Pick<TaskRecord, 'userInstall' | 'card'>>(
  task: T,
  now: number,
): task is T & { userInstall: UserInstallTask } {
  const at = handoffAt(task);
  return at !== undefined && task.userInstall !== undefined && now >= at && now < task.card.tokenExpiresAt;
}

/** The version of the task record this code writes (src/store/versioned.ts). */
export const TASK_RECORD_VERSION = 2;

export interface TaskRecord {
  v: typeof TASK_RECORD_VERSION;
  id: string;
  job?: JobPlace;
  gatewayId?: string;
  layer: Layer;
  /** Which key submitted the task (a fingerprint, never the key); the server's current key follows it. */
  keyId: string;
  /**
   * The server whose key, limits and task list the task counts under; for a task made through a member's
   * own install of the app, their user-install scope (src/ports/user-install.ts), with `userInstall` set.
   */
  guildId: string;
  channelId: string;
  userId: string;
  operation: VideoOperation;
  mode: TaskMode;
  model: string;
  prompt: string;
  /** The body sent to the gateway, for Regenerate. */
  request: Record<string, unknown>;
  sourceTaskId?: string;
  /** Vary: why the variant's first frame was not sent, worded when its card is drawn, in its reader's language. */
  varyNote?: VaryNote;
  createdAt: number;
  submittedAt?: number;
  finishedAt?: number;
  state: TaskState;
  progress?: number;
  polls: number;
  pollErrors: number;
  outcome: TaskOutcome;
  card: StatusCard;
  /** The upload limit Discord gave the interaction (`attachment_size_limit`). */
  attachmentSizeLimit: number;
  delivery: Delivery;
  /** While `waiting`: its place in its key's line when last looked at (1 is next), which its card shows. */
  place?: number;
  /** Who took it out of line, when `cancelled`: its member, or a member with Manage Server. */
  cancelledBy?: string;
  /** Asked again with the attachments of an earlier task (Regenerate): a link the gateway cannot fetch has expired. */
  regenerated?: boolean;
  /** The estimate reserved against the budgets when it was admitted (every stored task has one; a draft has none yet). */
  reservation?: SpendReservation;
  /**
   * The language of the card and of what the bot posts about the task: the server's when it was asked for
   * (`guild_locale`), kept so every later edit, after a restart or on another worker, speaks it too.
   */
  locale: Locale;
  /** Set on a task made through a member's own install where the bot is not in the channel; unset on every other. */
  userInstall?: UserInstallTask;
  /**
   * The one message that tells the member their job ended (ready-ping.ts): `due` is written in the same save
   * that ends the task's delivery, so a restart still finds it; `done` once its job's ping was claimed (sent,
   * or left to a sibling, or turned off). Unset on a task the gateway never took (its member was answered then).
   */
  ping?: PingState;
  /**
   * Its job's card was deleted (the Delete button), by whom and when: the task is kept, but forgets the
   * card's message and token, and its video's post (`delivery` closed), so nothing edits or links them.
   */
  cardDeleted?: { by: string; at: number };
}

const PING_STATES = ['due', 'done'] as const;
export type PingState = (typeof PING_STATES)[number];

/**
 * The guild whose shard Discord delivers a task's interactions to, and whose worker follows the task: its
 * server's; for a member's own install, the server it was asked in, or for a DM or a private channel none,
 * which Discord delivers to shard 0 (`0` falls on shard 0 whatever the count).
 */
export function routingGuildId(task: Pick<TaskRecord, 'guildId' | 'userInstall'>): string {
  return task.userInstall ? (task.userInstall.guildId ?? '0') : task.guildId;
}

/** A link to a message of the task's: in the member's DMs once its card went there, else where it was asked. */
export function taskMessageUrl(task: Pick<TaskRecord, 'guildId' | 'channelId' | 'userInstall'>, messageId: string): string {
  const place = task.userInstall;
  if (!place) return `https://discord.com/channels/${task.guildId}/${task.channelId}/${messageId}`;
  if (place.dmChannelId !== undefined && messageId === place.dmMessageId)
    return `https://discord.com/channels/@me/${place.dmChannelId}/${messageId}`;
  return `https://discord.com/channels/${place.guildId ?? '@me'}/${task.channelId}/${messageId}`;
}

/** Where a member's own install asked for the task: the job's card there, or its channel when the card's id was never known. */
export function askedInUrl(task: Pick<TaskRecord, 'channelId' | 'card'> & { userInstall: UserInstallTask }): string {
  const channel = `https://discord.com/channels/${task.userInstall.guildId ?? '@me'}/${task.channelId}`;
  return task.card.messageId === undefined ? channel : `${channel}/${task.card.messageId}`;
}

const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['succeeded', 'failed', 'expired', 'timed_out', 'unknown', 'cancelled']);

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

/** The error code a task gets when the gateway answers that it does not know it (404): it will never finish. */
export const TASK_NOT_FOUND = 'not_found';

/** Whether the task is still being made, or its result still to be shown. */
export function deliveryPending(task: Pick<TaskRecord, 'state' | 'delivery'>): boolean {
  return !isTerminal(task.state) || task.delivery.state === 'waiting' || task.delivery.state === 'posting';
}

/** Whether the poller still has work for this task: polling it, posting its result, or telling its member. */
export function needsWork(task: TaskRecord): boolean {
  return deliveryPending(task) || task.ping === 'due';
}

/**
 * The task as its last save with its outcome shown should store it: its member's ping `due` once the
 * gateway took the task (`gatewayId`) and nothing of it is left to show; as it is otherwise.
 */
export function withPingDue(task: TaskRecord): TaskRecord {
  if (task.ping !== undefined || task.gatewayId === undefined || deliveryPending(task)) return task;
  return { ...task, ping: 'due' };
}

/** Finished states in which the gateway made the video, and so charged for it. */
const MADE_A_VIDEO: ReadonlySet<TaskState> = new Set(['succeeded', 'expired']);

/** Whether the gateway made (and so charged for) the task's video. */
export function madeVideo(task: Pick<TaskRecord, 'state'>): boolean {
  return MADE_A_VIDEO.has(task.state);
}

/**
 * How the provider's content moderation ended a task, when it did (docs/gateway.md, "Task result"):
 * `refused`, the task failed on a moderation code such as `imagine:content-moderated` (the gateway refunds
 * a failed task); `withheld`, the task was made but came back with `respect_moderation: false` and no
 * video. What a card says and what the moderators' log records are both decided here.
 */
export type ModerationOutcome = 'refused' | 'withheld';

export function moderationOf(task: Pick<TaskRecord, 'state' | 'outcome'>): ModerationOutcome | undefined {
  if (!task.outcome.moderated) return undefined;
  if (task.state === 'failed') return 'refused';
  return task.state === 'succeeded' ? 'withheld' : undefined;
}

/** What a finished task cost, for the usage ledger: a failure or a timeout made nothing (it is refunded). */
export function costOf(task: TaskRecord): TaskCost {
  return {
    taskId: task.id,
    guildId: task.guildId,
    userId: task.userId,
    createdAt: task.createdAt,
    costUsdTicks: task.outcome.costUsdTicks,
    madeVideo: madeVideo(task),
    reservation: task.reservation,
  };
}

// ---- The stored record ----------------------------------------------------------------------------

/** Why Vary sent a variant without its first frame: `video.card.vary-note.<reason>` of the catalogs. */
export const VARY_NOTE_REASONS = ['unknown-variant', 'not-generation', 'no-video', 'no-image', 'not-decoded', 'no-decoder'] as const;

export interface VaryNote {
  reason: (typeof VARY_NOTE_REASONS)[number];
  /** For `no-image`: the gateway's rule the request with a frame broke (src/wording/validation.ts words it). */
  broken?: { field: string; rule: string; values: Record<string, string> };
}

/** A stored Vary note (a task's, or a held plan's). */
export const varyNoteSchema: z.ZodType<VaryNote> = z.object({
  reason: z.enum(VARY_NOTE_REASONS),
  broken: z.object({ field: z.string(), rule: z.string(), values: z.record(z.string(), z.string()) }).optional(),
});

export const TASK_MODES: readonly TaskMode[] = [...GENERATION_MODES, 'edit', 'extend'];

/** A stored language the bot still speaks; one it no longer has a catalog for reads as English. */
export const storedLocaleSchema = z.string().transform((value) => SUPPORTED_LOCALES.find((locale) => locale === value) ?? ENGLISH);

const triesShape = { attempts: z.number(), failures: z.number().optional(), lastError: z.string().optional() };

const deliverySchema: z.ZodType<Delivery> = z.discriminatedUnion('state', [
  z.object({ state: z.literal('waiting'), ...triesShape }),
  z.object({ state: z.literal('posting'), ...triesShape, postingSince: z.number() }),
  z.object({
    state: z.literal('posted'),
    ...triesShape,
    postingSince: z.number(),
    messageId: z.string(),
    video: z.discriminatedUnion('as', [
      z.object({ as: z.literal('file'), fileName: z.string() }),
      z.object({ as: z.literal('link'), reason: z.string().optional() }),
    ]),
    attachmentUrl: z.string().optional(),
    attachmentId: z.string().optional(),
  }),
  z.object({ state: z.literal('closed'), ...triesShape, postingSince: z.number().optional() }),
]);

const taskSchema: z.ZodType<TaskRecord> = z.object({
  v: z.literal(TASK_RECORD_VERSION),
  id: z.string(),
  job: z
    .object({
      id: z.string(),
      number: z.number(),
      size: z.number(),
      taskIds: z.array(z.string()),
      unsent: z.object({ count: z.number(), reason: z.string() }).optional(),
    })
    .optional(),
  gatewayId: z.string().optional(),
  layer: z.enum(LAYERS),
  keyId: z.string(),
  guildId: z.string(),
  channelId: z.string(),
  userId: z.string(),
  operation: z.enum(VIDEO_OPERATIONS),
  mode: z.enum(TASK_MODES),
  model: z.string(),
  prompt: z.string(),
  request: z.record(z.string(), z.unknown()),
  sourceTaskId: z.string().optional(),
  varyNote: varyNoteSchema.optional(),
  createdAt: z.number(),
  submittedAt: z.number().optional(),
  finishedAt: z.number().optional(),
  state: z.enum(TASK_STATES),
  // The three below were added without a new version: a task stored before them never waited in a line.
  place: z.number().int().positive().optional(),
  cancelledBy: z.string().optional(),
  regenerated: z.boolean().optional(),
  progress: z.number().optional(),
  polls: z.number(),
  pollErrors: z.number(),
  outcome: z.object({
    videoUrl: z.string().optional(),
    storedFile: z
      .object({
        fileId: z.string().optional(),
        filename: z.string().optional(),
        expiresAt: z.number().optional(),
        publicUrl: z.string().optional(),
        refusedPublicUrl: z.string().optional(),
      })
      .optional(),
    storageError: z.string().optional(),
    moderated: z.boolean().optional(),
    costUsdTicks: z.number().optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    requestId: z.string().optional(),
  }),
  card: z.object({
    applicationId: z.string(),
    interactionToken: z.string(),
    tokenExpiresAt: z.number(),
    messageId: z.string().optional(),
    renderedAt: z.number().optional(),
    renderedState: z.string().optional(),
  }),
  attachmentSizeLimit: z.number(),
  delivery: deliverySchema,
  reservation: z.object({ estimateUsdTicks: z.number(), month: z.boolean() }).optional(),
  locale: storedLocaleSchema,
  userInstall: z
    .object({
      guildId: z.string().optional(),
      dmChannelId: z.string().optional(),
      dmMessageId: z.string().optional(),
      // The member's language: one the bot no longer speaks reads as unset (the card's then).
      locale: z
        .string()
        .transform((value) => SUPPORTED_LOCALES.find((locale) => locale === value))
        .optional(),
      handedOff: z.enum(HANDOFF_NOTES).optional(),
    })
    .optional(),
  // Added without a new version: a task stored before it was never pinged, and unset means just that.
  ping: z.enum(PING_STATES).optional(),
  // Added without a new version: a task stored before it never had its card deleted.
  cardDeleted: z.object({ by: z.string(), at: z.number() }).optional(),
});

/**
 * A delivery as versions before 1 kept it, loose flags beside `state`, as the union. Until 2026-11-28 a
 * video was posted as a message of its own (no `inCard`); from then on it went into the card, `fileName`
 * or `linkReason` saying how.
 */
function upgradeDelivery(stored: unknown): unknown {
  if (!isRecord(stored)) return stored;
  const { state, attempts, failures, lastError, inCard, fileName, linkReason, messageId, attachmentUrl, attachmentId } = stored;
  const tries = { attempts, failures, lastError };
  // A post tried before `postingSince` was kept (2026-11-23) is taken as long ago: its channel is searched before any post again.
  const since = stored.postingSince ?? 0;
  switch (state) {
    case 'waiting':
      return { state, ...tries };
    case 'posting':
      // The post of a message of its own in flight is not looked for: the next try edits the video into the
      // card, and should that post have gone out, the video shows twice (never not at all).
      return { state, ...tries, postingSince: since };
    case 'posted': {
      const inItsCard = inCard === true && typeof fileName === 'string' && linkReason === undefined;
      // A message of its own holds the video: the card shows its link, as a card showing the video by link.
      const video = inItsCard
        ? { as: 'file', fileName }
        : { as: 'link', ...(typeof linkReason === 'string' ? { reason: linkReason } : {}) };
      return { state, ...tries, postingSince: since, messageId, video, attachmentUrl, ...(inItsCard ? { attachmentId } : {}) };
    }
    case 'closed':
      return { state, ...tries, postingSince: stored.postingSince };
    default:
      return stored;
  }
}

/**
 * A card as versions before 1 kept it. One drawn in Components V2 (`componentsV2`, from 2026-11-28) is
 * the same card. One of embeds, from before, cannot take an edit in Components V2 unless the edit empties
 * it, which this version does not do: it is a card out of reach (its token long over, its message not
 * known), so whatever its task still had to show would go into a card posted again. No task that old is
 * still followed (a task is closed 15 minutes after it was asked for, its delivery minutes later).
 */
function upgradeCard(stored: unknown): unknown {
  if (!isRecord(stored) || stored.componentsV2 === true) return stored;
  const { messageId: _embedCard, ...card } = stored;
  return { ...card, tokenExpiresAt: 0 };
}

/** Versions 0 and 1 named a task's amounts `outcome.costTicks` and `reservation.estimateTicks`: USD ticks, now named so. */
function withUsdTickNames(task: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const upgraded: Record<string, unknown> = { ...task };
  if (isRecord(task.outcome)) {
    const { costTicks, ...outcome } = task.outcome;
    upgraded.outcome = costTicks === undefined ? outcome : { ...outcome, costUsdTicks: costTicks };
  }
  if (isRecord(task.reservation)) {
    const { estimateTicks, ...reservation } = task.reservation;
    upgraded.reservation = { ...reservation, estimateUsdTicks: estimateTicks };
  }
  return upgraded;
}

/**
 * Reads a stored task of any version. Version 0 (no `v`) is every record written before 2026-11-29: its
 * card and its delivery's flags are upgraded (upgradeCard, upgradeDelivery); `nonce`, always the task's
 * id, goes; Vary's note worded in the card's language (`note`, before 2026-11-28) goes, as no reason can
 * be read back from its words; a task from before budgets (2026-11-28) reserved nothing; one from before
 * card languages speaks English. Versions 0 and 1 named its amounts `…Ticks` (withUsdTickNames).
 */
export const parseTaskRecord = versionedRecord<TaskRecord>({
  name: 'task',
  version: TASK_RECORD_VERSION,
  schema: taskSchema,
  upgrade: (stored, from) =>
    withUsdTickNames(
      from >= 1
        ? stored
        : {
            ...stored,
            card: upgradeCard(stored.card),
            delivery: upgradeDelivery(stored.delivery),
            reservation: stored.reservation ?? { estimateTicks: 0, month: false },
            locale: stored.locale ?? ENGLISH,
          },
    ),
});

/**
 * The languages a new task is worded in, from the interaction that asked for it: its card and what the bot
 * posts about it, the server's (what the whole channel reads); a member's own install's DMs, the member's.
 */
export function taskLanguages(
  context: Pick<InteractionContext, 'locale' | 'guildLocale' | 'userInstall'>,
): Pick<TaskRecord, 'locale' | 'userInstall'> {
  return {
    locale: resolveLocale(context.locale, context.guildLocale, 'channel'),
    ...(context.userInstall
      ? { userInstall: { ...context.userInstall, locale: resolveLocale(context.locale, context.guildLocale, 'member') } }
      : {}),
  };
}

/**
 * What a record addressed to one member keeps of their language (a video held for their confirmation): the
 * question and how it ended are worded in it, whichever worker or timer words them.
 */
export interface MemberLanguage {
  /** The member's language when they asked. */
  locale: Locale;
}

/** The stored shape of MemberLanguage: a language the bot no longer speaks reads as English. */
export const memberLanguageShape = { locale: storedLocaleSchema };

/** The member's language of a record stored before it was kept (2026-11-28): English. */
export function withMemberLanguage(stored: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return { ...stored, locale: stored.locale ?? ENGLISH };
}

/** The language of what only the member who asked reads: theirs, else the server's, else English. */
export function memberLanguage(context: Pick<InteractionContext, 'locale' | 'guildLocale'>): MemberLanguage {
  return { locale: resolveLocale(context.locale, context.guildLocale, 'member') };
}
