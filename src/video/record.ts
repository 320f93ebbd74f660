import { LAYERS, VIDEO_OPERATIONS, type Layer, type VideoOperation } from '../gateway/spec.ts';
import { SUPPORTED_LOCALES, type Locale } from '../i18n/index.ts';
import { isRecord } from '../lib/json.ts';
import type { SpendReservation, TaskCost } from '../ports/guild-policy.ts';

// A video task as the bot keeps it: written before the user hears "accepted", updated as the gateway
// answers, and read back after any restart. Its shape is the store's schema, parsed on every read (into
// objects of one shape, absent members undefined: a JSON round trip drops them, and parsing stays cheap).

const TASK_STATES = [
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
] as const;
export type TaskState = (typeof TASK_STATES)[number];

const GENERATION_MODES = ['text-to-video', 'image-to-video', 'reference', 'first-last-frame'] as const;
export type GenerationMode = (typeof GENERATION_MODES)[number];
export type TaskMode = GenerationMode | 'edit' | 'extend';

const DELIVERY_STATES = [
  /** Not yet posted (the task may still be running). */
  'waiting',
  /**
   * About to put the video into the status card (`inCard`): an edit, which shows one video however often
   * it is repeated, so a restart edits again. Without `inCard`, a task of an earlier version about to post
   * the video as a message of its own, with `nonce`.
   */
  'posting',
  /** Shown: in the status card (`inCard`), or, by earlier versions, in a message of its own (`messageId`). */
  'posted',
  /** Nothing to post (failure, moderation) or posting failed for good: the card says why. */
  'closed',
] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

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
  costTicks?: number;
  error?: { code: string; message: string };
  requestId?: string;
}

export interface StatusCard {
  applicationId: string;
  /** The interaction token edits the card for 15 minutes; after that the bot edits it as a channel message. */
  interactionToken: string;
  tokenExpiresAt: number;
  messageId?: string;
  /**
   * Drawn in Components V2 from its first edit on. Unset on the cards of earlier versions (embeds): the
   * first edit this version makes of one clears its embeds, which Discord refuses beside the flag.
   */
  componentsV2?: boolean;
  /** When the card was last edited, to edit at most once every few seconds. */
  renderedAt?: number;
  /** What the card last showed, to skip edits that change nothing. */
  renderedState?: string;
}

export interface Delivery {
  state: DeliveryState;
  /** The nonce of the separate post earlier versions made; kept so their stored tasks still parse. */
  nonce: string;
  /**
   * Set from the moment this version starts showing the video: it goes into the status card (an edit of
   * `card.messageId`). Unset on tasks earlier versions posted (or were posting) as a message of their own.
   */
  inCard?: boolean;
  /** The uploaded file's name, which the card's media gallery names (`attachment://<name>`); unset for a link. */
  fileName?: string;
  /** Posts (or edits of the card with the video) tried. */
  attempts: number;
  /** When the first post was tried: Discord honours a nonce only for a few minutes after it. */
  postingSince?: number;
  /** Failed tries to fetch or post the video, kept across restarts: past the policy's limit the task is closed. */
  failures?: number;
  /** The message that shows the video: the status card itself, or an earlier version's separate post. */
  messageId?: string;
  /** The posted mp4's url: the source for edits and extensions of this task. */
  attachmentUrl?: string;
  /** The posted file's attachment id on the card: a later edit of a shared card lists it to keep the file. */
  attachmentId?: string;
  /** Set when a link was posted instead of the file, and why. */
  linkReason?: string;
  lastError?: string;
}

/**
 * A task's place in a job of several variants submitted together from one request (`/video generate
 * variants`): the job's id is its first task's, which owns the card (its interaction token); the others
 * edit the same card. Unset on a job of one (and on tasks of earlier versions).
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

export interface TaskRecord {
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
  /** The same line as written by earlier versions, in the card's language (the task's `locale`) then. */
  note?: string;
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
  /** The estimate reserved against the budgets at submission; unset on tasks of versions before budgets. */
  reservation?: SpendReservation;
  /**
   * The language of the card and of what the bot posts about the task: the server's when it was asked for
   * (`guild_locale`), kept so every later edit, after a restart or on another worker, speaks it too. Unset
   * on tasks of earlier versions, whose cards began in English and stay in it.
   */
  locale?: Locale;
  /** Set on a task made through a member's own install where the bot is not in the channel; unset on every other. */
  userInstall?: UserInstallTask;
}

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

const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['succeeded', 'failed', 'expired', 'timed_out', 'unknown']);

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

/** The error code a task gets when the gateway answers that it does not know it (404): it will never finish. */
export const TASK_NOT_FOUND = 'not_found';

/** Whether the poller still has work for this task: polling it, or posting its result. */
export function needsWork(task: TaskRecord): boolean {
  return !isTerminal(task.state) || task.delivery.state === 'waiting' || task.delivery.state === 'posting';
}

/** Finished states in which the gateway made the video, and so charged for it. */
const MADE_A_VIDEO: ReadonlySet<TaskState> = new Set(['succeeded', 'expired']);

/** Whether the gateway made (and so charged for) the task's video. */
export function madeVideo(task: Pick<TaskRecord, 'state'>): boolean {
  return MADE_A_VIDEO.has(task.state);
}

/** What a finished task cost, for the usage ledger: a failure or a timeout made nothing (it is refunded). */
export function costOf(task: TaskRecord): TaskCost {
  return {
    taskId: task.id,
    guildId: task.guildId,
    userId: task.userId,
    createdAt: task.createdAt,
    costTicks: task.outcome.costTicks,
    madeVideo: madeVideo(task),
    reservation: task.reservation,
  };
}

// ---- Parsing ---------------------------------------------------------------------------------------

class RecordShapeError extends Error {
  constructor(path: string, expected: string) {
    super(`${path} must be ${expected}`);
    this.name = 'RecordShapeError';
  }
}

function requireObject(value: unknown, path: string): Readonly<Record<string, unknown>> {
  if (!isRecord(value)) throw new RecordShapeError(path, 'an object');
  return value;
}

function requireString(source: Readonly<Record<string, unknown>>, key: string, path: string): string {
  const value = source[key];
  if (typeof value !== 'string') throw new RecordShapeError(`${path}.${key}`, 'a string');
  return value;
}

function optionalString(source: Readonly<Record<string, unknown>>, key: string, path: string): string | undefined {
  const value = source[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new RecordShapeError(`${path}.${key}`, 'a string');
  return value;
}

function requireNumber(source: Readonly<Record<string, unknown>>, key: string, path: string): number {
  const value = source[key];
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new RecordShapeError(`${path}.${key}`, 'a number');
  return value;
}

function optionalNumber(source: Readonly<Record<string, unknown>>, key: string, path: string): number | undefined {
  const value = source[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new RecordShapeError(`${path}.${key}`, 'a number');
  return value;
}

function optionalBoolean(source: Readonly<Record<string, unknown>>, key: string, path: string): boolean | undefined {
  const value = source[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new RecordShapeError(`${path}.${key}`, 'a boolean');
  return value;
}

function requireOneOf<T extends string>(source: Readonly<Record<string, unknown>>, key: string, path: string, values: readonly T[]): T {
  const value = source[key];
  const match = values.find((candidate) => candidate === value);
  if (match === undefined) throw new RecordShapeError(`${path}.${key}`, `one of ${values.join(', ')}`);
  return match;
}

/** Why Vary sent a variant without its first frame: `video.card.vary-note.<reason>` of the catalogs. */
export const VARY_NOTE_REASONS = ['unknown-variant', 'not-generation', 'no-video', 'no-image', 'not-decoded', 'no-decoder'] as const;

export interface VaryNote {
  reason: (typeof VARY_NOTE_REASONS)[number];
  /** For `no-image`: the gateway's rule the request with a frame broke (src/wording/validation.ts words it). */
  broken?: { field: string; rule: string; values: Record<string, string> };
}

/** A stored Vary note (a task's, or a held plan's). */
export function parseVaryNote(value: unknown, path: string): VaryNote {
  if (!isRecord(value)) throw new RecordShapeError(path, 'an object');
  const reason = requireOneOf(value, 'reason', path, VARY_NOTE_REASONS);
  const broken = value.broken;
  if (broken === undefined || broken === null) return { reason };
  if (!isRecord(broken) || !isRecord(broken.values)) throw new RecordShapeError(`${path}.broken`, 'a rule with its values');
  const values: Record<string, string> = {};
  for (const [name, text] of Object.entries(broken.values)) {
    if (typeof text !== 'string') throw new RecordShapeError(`${path}.broken.values.${name}`, 'a string');
    values[name] = text;
  }
  const where = `${path}.broken`;
  return { reason, broken: { field: requireString(broken, 'field', where), rule: requireString(broken, 'rule', where), values } };
}

function parseStoredFile(value: unknown, path: string): StoredFile | undefined {
  if (value === undefined || value === null) return undefined;
  const source = requireObject(value, path);
  return {
    fileId: optionalString(source, 'fileId', path),
    filename: optionalString(source, 'filename', path),
    expiresAt: optionalNumber(source, 'expiresAt', path),
    publicUrl: optionalString(source, 'publicUrl', path),
    refusedPublicUrl: optionalString(source, 'refusedPublicUrl', path),
  };
}

function parseOutcome(value: unknown, path: string): TaskOutcome {
  const source = requireObject(value, path);
  const errorValue = source.error;
  let error: TaskOutcome['error'];
  if (errorValue !== undefined && errorValue !== null) {
    const errorSource = requireObject(errorValue, `${path}.error`);
    error = {
      code: requireString(errorSource, 'code', `${path}.error`),
      message: requireString(errorSource, 'message', `${path}.error`),
    };
  }
  return {
    videoUrl: optionalString(source, 'videoUrl', path),
    storedFile: parseStoredFile(source.storedFile, `${path}.storedFile`),
    storageError: optionalString(source, 'storageError', path),
    moderated: optionalBoolean(source, 'moderated', path),
    costTicks: optionalNumber(source, 'costTicks', path),
    error,
    requestId: optionalString(source, 'requestId', path),
  };
}

function parseCard(value: unknown, path: string): StatusCard {
  const source = requireObject(value, path);
  return {
    applicationId: requireString(source, 'applicationId', path),
    interactionToken: requireString(source, 'interactionToken', path),
    tokenExpiresAt: requireNumber(source, 'tokenExpiresAt', path),
    messageId: optionalString(source, 'messageId', path),
    componentsV2: optionalBoolean(source, 'componentsV2', path),
    renderedAt: optionalNumber(source, 'renderedAt', path),
    renderedState: optionalString(source, 'renderedState', path),
  };
}

function parseDelivery(value: unknown, path: string): Delivery {
  const source = requireObject(value, path);
  return {
    state: requireOneOf(source, 'state', path, DELIVERY_STATES),
    nonce: requireString(source, 'nonce', path),
    inCard: optionalBoolean(source, 'inCard', path),
    fileName: optionalString(source, 'fileName', path),
    attempts: requireNumber(source, 'attempts', path),
    postingSince: optionalNumber(source, 'postingSince', path),
    failures: optionalNumber(source, 'failures', path),
    messageId: optionalString(source, 'messageId', path),
    attachmentUrl: optionalString(source, 'attachmentUrl', path),
    attachmentId: optionalString(source, 'attachmentId', path),
    linkReason: optionalString(source, 'linkReason', path),
    lastError: optionalString(source, 'lastError', path),
  };
}

export const TASK_MODES: readonly TaskMode[] = [...GENERATION_MODES, 'edit', 'extend'];

export function parseTaskRecord(raw: unknown): TaskRecord {
  const path = 'task';
  const source = requireObject(raw, path);
  return {
    id: requireString(source, 'id', path),
    ...(source.job === undefined || source.job === null ? {} : { job: parseJob(source.job, `${path}.job`) }),
    gatewayId: optionalString(source, 'gatewayId', path),
    layer: requireOneOf(source, 'layer', path, LAYERS),
    keyId: requireString(source, 'keyId', path),
    guildId: requireString(source, 'guildId', path),
    channelId: requireString(source, 'channelId', path),
    userId: requireString(source, 'userId', path),
    operation: requireOneOf(source, 'operation', path, VIDEO_OPERATIONS),
    mode: requireOneOf(source, 'mode', path, TASK_MODES),
    model: requireString(source, 'model', path),
    prompt: requireString(source, 'prompt', path),
    request: { ...requireObject(source.request, `${path}.request`) },
    sourceTaskId: optionalString(source, 'sourceTaskId', path),
    note: optionalString(source, 'note', path),
    ...(source.varyNote === undefined || source.varyNote === null ? {} : { varyNote: parseVaryNote(source.varyNote, `${path}.varyNote`) }),
    createdAt: requireNumber(source, 'createdAt', path),
    submittedAt: optionalNumber(source, 'submittedAt', path),
    finishedAt: optionalNumber(source, 'finishedAt', path),
    state: requireOneOf(source, 'state', path, TASK_STATES),
    progress: optionalNumber(source, 'progress', path),
    polls: requireNumber(source, 'polls', path),
    pollErrors: requireNumber(source, 'pollErrors', path),
    outcome: parseOutcome(source.outcome, `${path}.outcome`),
    card: parseCard(source.card, `${path}.card`),
    attachmentSizeLimit: requireNumber(source, 'attachmentSizeLimit', path),
    delivery: parseDelivery(source.delivery, `${path}.delivery`),
    reservation: source.reservation === undefined ? undefined : parseReservation(source.reservation, `${path}.reservation`),
    locale: parseLocale(optionalString(source, 'locale', path)),
    ...(source.userInstall === undefined || source.userInstall === null
      ? {}
      : { userInstall: parseUserInstall(source.userInstall, `${path}.userInstall`) }),
  };
}

function parseUserInstall(raw: unknown, path: string): UserInstallTask {
  const source = requireObject(raw, path);
  const guildId = optionalString(source, 'guildId', path);
  const dmChannelId = optionalString(source, 'dmChannelId', path);
  const dmMessageId = optionalString(source, 'dmMessageId', path);
  const locale = parseLocale(optionalString(source, 'locale', path));
  const handedOffText = optionalString(source, 'handedOff', path);
  const handedOff = HANDOFF_NOTES.find((note) => note === handedOffText);
  if (handedOffText !== undefined && handedOff === undefined)
    throw new Error(`${path}.handedOff must be one of ${HANDOFF_NOTES.join(', ')}`);
  return {
    ...(locale === undefined ? {} : { locale }),
    ...(handedOff === undefined ? {} : { handedOff }),
    ...(guildId === undefined ? {} : { guildId }),
    ...(dmChannelId === undefined ? {} : { dmChannelId }),
    ...(dmMessageId === undefined ? {} : { dmMessageId }),
  };
}

/** A stored card language the bot still speaks; one it no longer has a catalog for reads as unset (English). */
function parseLocale(value: string | undefined): Locale | undefined {
  return SUPPORTED_LOCALES.find((locale) => locale === value);
}

function parseReservation(raw: unknown, path: string): SpendReservation {
  const source = requireObject(raw, path);
  if (typeof source.month !== 'boolean') throw new Error(`${path}.month must be true or false`);
  return { estimateTicks: requireNumber(source, 'estimateTicks', path), month: source.month };
}

function parseJob(raw: unknown, path: string): JobPlace {
  const source = requireObject(raw, path);
  const ids = source.taskIds;
  if (!Array.isArray(ids) || !ids.every((id): id is string => typeof id === 'string'))
    throw new RecordShapeError(`${path}.taskIds`, 'strings');
  return {
    id: requireString(source, 'id', path),
    number: requireNumber(source, 'number', path),
    size: requireNumber(source, 'size', path),
    taskIds: [...ids],
    ...(isRecord(source.unsent)
      ? {
          unsent: {
            count: requireNumber(source.unsent, 'count', `${path}.unsent`),
            reason: requireString(source.unsent, 'reason', `${path}.unsent`),
          },
        }
      : {}),
  };
}
