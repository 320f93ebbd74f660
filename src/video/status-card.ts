import {
  ButtonStyle,
  ComponentType,
  MessageFlags,
  SeparatorSpacingSize,
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIComponentInContainer,
  type APIComponentInMessageActionRow,
  type APIMediaGalleryItem,
  type APITextDisplayComponent,
} from 'discord.js';
import type { ComponentsV2Message } from '../discord/outbox.ts';
import { EXTENSION_DURATION, GENERATION_DURATION, DEFAULT_RESOLUTION } from '../gateway/spec.ts';
import { dayKey } from '../lib/day-key.ts';
import { readNumber, readString } from '../lib/json.ts';
import { isHttpUrl } from '../lib/url.ts';
import { ENGLISH, formatDuration, formatNumber, translator, type Locale, type Translate } from '../i18n/index.ts';
import { formatCostIn, formatEstimateIn } from '../wording/cost.ts';
import { word, type Notice } from '../wording/notice.ts';
import type { MemberDayCost } from '../ports/guild-policy.ts';
import { videoActionId, type VideoAction } from './actions.ts';
import {
  describeDeliveryRetry,
  describeExpired,
  describeFailure,
  describeVaryNote,
  membersLanguage,
  describeGatewayNotAnswering,
  describeLostTask,
  describeModeration,
  describeModerationRefusal,
  describeRefusedPublicUrl,
  describeStorageError,
  describeTimeout,
  describeUnknownOutcome,
  taskKey,
  type LostTaskReason,
} from './wording.ts';
import { DEFAULT_POLL_POLICY } from './poll-policy.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import {
  deliveryPending,
  isTerminal,
  madeVideo,
  moderationOf,
  taskLanguages,
  taskMessageUrl,
  type Delivery,
  type HandoffNote,
  type StatusCard,
  type TaskRecord,
} from './record.ts';
import { shorten } from '../lib/text.ts';

// The status card: one message per job in Components V2, edited in place from submission to the end. A
// container (its accent colour the job's state) holds the request (prompt and settings), then one tile
// per task: its progress or outcome, its cost, and once it is done its video in the media gallery and its
// buttons. A job has one task today; the layout takes several (variants), each its own tile, their
// videos side by side in the one gallery. Elapsed time is a Discord timestamp (`<t:…:R>`), which every
// client keeps current by itself, so the card only needs an edit when the status or progress changes.

const COLORS = { running: 0x5865f2, succeeded: 0x57f287, failed: 0xed4245, warning: 0xfee75c } as const;
const PROMPT_PREVIEW = 1000;

/** Discord's limits on a Components V2 message: components in all (nested ones too), and the text of its text displays together. */
export const CARD_LIMITS = { components: 40, textLength: 4000, galleryItems: 10 } as const;

/** The language a task's card is drawn in: the server's, stored with the task when it was asked for. */
function cardLocale(task: Pick<TaskRecord, 'locale'>): Locale {
  return task.locale;
}

/** A notice as the channel hears it about a video asked for in `asked` (by voice): in the language its card will be drawn in. */
export function inChannelWords(asked: Pick<InteractionContext, 'locale' | 'guildLocale'>, told: Notice): string {
  return word(taskLanguages(asked).locale, told);
}

/** A notice as the task's card (or what the bot posts about the task) says it: in the card's language. */
export function inCardWords(task: Pick<TaskRecord, 'locale'>, told: Notice): string {
  return word(cardLocale(task), told);
}

export function progressBar(progress: number, locale: Locale = ENGLISH): string {
  const filled = Math.round(Math.min(100, Math.max(0, progress)) / 10);
  const percent = formatNumber(locale, Math.round(progress) / 100, { style: 'percent' });
  return `${'▰'.repeat(filled)}${'▱'.repeat(10 - filled)} ${percent}`;
}

function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/** A link to a finished task's video, and what to say about it (in the card's language). Only ever an http(s) link. */
export function videoLink(task: TaskRecord, locale: Locale = cardLocale(task)): { url: string; note: string } | undefined {
  const stored = task.outcome.storedFile?.publicUrl;
  if (stored !== undefined && isHttpUrl(stored)) return { url: stored, note: translator(locale)('video.card.link.lasting') };
  const temporary = task.outcome.videoUrl;
  if (temporary !== undefined && isHttpUrl(temporary)) return { url: temporary, note: translator(locale)('video.card.link.temporary') };
  return undefined;
}

/** Discord plays a media gallery item it can fetch itself: a public https address (the gateway's links are checked to be public when fetched). */
function playableByDiscord(url: string): boolean {
  return url.startsWith('https://');
}

/** How a tile shows its video, if it has one to show. */
type TileVideo =
  | { kind: 'attachment'; fileName: string }
  | { kind: 'gallery-link'; url: string }
  | { kind: 'link-button'; url: string }
  | { kind: 'elsewhere'; url: string };

/**
 * Who the card is drawn for: the channel (the card itself, in the server's language stored with the task),
 * or a member privately (`/video status`, in `locale`, the member's), who sees where the video is.
 */
export interface CardView {
  audience: 'channel' | 'private';
  locale?: Locale;
  /** A task's own card in its member's DMs (made through their own install): where they asked for it. */
  askedIn?: string;
  /**
   * The last edit of a member's own install's job card before its token ends: where the `pending` videos
   * (still being made or shown) will come instead (record.ts, `handedOff`).
   */
  handoff?: { note: HandoffNote; pending: number };
}

function tileVideo(task: TaskRecord, audience: CardView['audience']): TileVideo | undefined {
  const delivery = task.delivery;
  if (delivery.state !== 'posted') return undefined;
  if (delivery.video.as === 'file') {
    // The file belongs to the card: a private answer can only point at it.
    if (audience === 'channel') return { kind: 'attachment', fileName: delivery.video.fileName };
    return delivery.messageId ? { kind: 'elsewhere', url: taskMessageUrl(task, delivery.messageId) } : undefined;
  }
  const link = videoLink(task);
  if (!link) return undefined;
  return playableByDiscord(link.url) ? { kind: 'gallery-link', url: link.url } : { kind: 'link-button', url: link.url };
}

/** Why a shown video is a link in its card rather than its file, when it is and the card says why. */
function linkReasonOf(delivery: Delivery): string | undefined {
  return delivery.state === 'posted' && delivery.video.as === 'link' ? delivery.video.reason : undefined;
}

function statusLine(task: TaskRecord, locale: Locale): string {
  const tr = translator(locale);
  switch (task.state) {
    case 'waiting':
      return task.place === undefined
        ? tr('video.card.status.waiting', { key: taskKey(task) })
        : tr('video.card.status.waiting-place', { place: task.place, key: taskKey(task) });
    case 'cancelled':
      return tr('video.card.status.cancelled', { member: task.cancelledBy === undefined ? '' : `<@${task.cancelledBy}>` });
    case 'submitting':
      return tr('video.card.status.submitting');
    case 'running': {
      const started = `<t:${unixSeconds(task.submittedAt ?? task.createdAt)}:R>`;
      return task.progress === undefined
        ? tr('video.card.status.generating', { started })
        : tr('video.card.status.progress', { bar: progressBar(task.progress, locale), started });
    }
    case 'succeeded':
      if (task.outcome.moderated) return tr('video.card.status.moderated');
      if (task.delivery.state === 'posted')
        return task.delivery.video.as === 'link' ? tr('video.card.status.shown-by-link') : tr('video.card.status.done');
      // Shown, then its card deleted: its delivery closed with the card's message.
      if (task.delivery.state === 'closed') return tr(task.cardDeleted ? 'video.card.status.done' : 'video.card.status.not-shown');
      return tr('video.card.status.fetching');
    case 'failed':
      return moderationOf(task) === 'refused' ? tr('video.card.status.refused') : tr('video.card.status.failed');
    case 'expired':
      return tr('video.card.status.expired');
    case 'timed_out':
      return tr('video.card.status.timed-out');
    case 'unknown':
      return tr('video.card.status.unknown');
  }
}

function outcomeText(task: TaskRecord, context: CardContext, locale: Locale): string | undefined {
  switch (task.state) {
    case 'failed':
      return moderationOf(task) === 'refused'
        ? describeModerationRefusal(locale, task.outcome)
        : describeFailure(locale, task.outcome, task);
    case 'timed_out':
      return describeTimeout(locale, task);
    case 'expired':
      return describeExpired(locale, task);
    case 'unknown':
      return describeUnknownOutcome(locale, task);
    case 'running':
      return task.pollErrors > 0
        ? describeGatewayNotAnswering(
            locale,
            task,
            (task.submittedAt ?? task.createdAt) + (context.deadlineMs ?? DEFAULT_POLL_POLICY.deadlineMs),
          )
        : undefined;
    case 'succeeded': {
      if (task.outcome.moderated) return describeModeration(locale, task.outcome);
      const { delivery } = task;
      const retrying = delivery.state !== 'closed' && delivery.state !== 'posted' && delivery.failures !== undefined;
      const linkReason = linkReasonOf(delivery);
      const link = linkReason ? videoLink(task, locale) : undefined;
      const notes = [
        link && linkReason
          ? translator(locale)('video.card.link-instead', { reason: linkReason, url: link.url, note: link.note })
          : undefined,
        describeStorageError(locale, task.outcome),
        describeRefusedPublicUrl(locale, task.outcome),
        delivery.state === 'closed' ? delivery.lastError : undefined,
        retrying ? describeDeliveryRetry(locale, task) : undefined,
      ];
      const text = notes.filter((note) => note !== undefined).join('\n');
      return text || undefined;
    }
    default:
      return undefined;
  }
}

function colorOf(task: TaskRecord): number {
  if (task.state === 'succeeded' && !task.outcome.moderated && (task.delivery.state !== 'closed' || task.cardDeleted))
    return COLORS.succeeded;
  if (task.state === 'running' || task.state === 'submitting' || task.state === 'waiting') return COLORS.running;
  if (task.state === 'failed') return COLORS.failed;
  return COLORS.warning;
}

/** A job's colour: blue while any task runs, red when any failed, green when all made their video, yellow otherwise. */
function jobColor(tasks: readonly TaskRecord[]): number {
  const colors = tasks.map(colorOf);
  if (colors.includes(COLORS.running)) return COLORS.running;
  if (colors.includes(COLORS.failed)) return COLORS.failed;
  return colors.every((color) => color === COLORS.succeeded) ? COLORS.succeeded : COLORS.warning;
}

/** What the card shows, as a key: an edit that would not change it is skipped. */
export function cardStateKey(task: TaskRecord): string {
  const trouble = task.pollErrors > 0 ? 'polls failing' : (task.delivery.failures ?? '');
  return [
    task.state,
    task.place ?? '',
    task.progress ?? '',
    task.delivery.state,
    linkReasonOf(task.delivery) ?? '',
    task.gatewayId ?? '',
    trouble,
  ].join('|');
}

/** What a card knows besides its task: when it is drawn, and its member's costs on the task's day (the usage ledger's). */
export interface CardContext {
  now: number;
  memberDay?: MemberDayCost;
  /**
   * How long after its creation the tracker gives a task up (its poll policy's `deadlineMs`; default the
   * production policy's): the card states that time, and the tracker closes the task then.
   */
  deadlineMs?: number;
}

/** What the task was expected to cost when it was submitted (its reservation); undefined when it reserved nothing. */
function estimateOf(task: TaskRecord): number | undefined {
  const usdTicks = task.reservation?.estimateUsdTicks;
  return usdTicks === undefined || usdTicks <= 0 ? undefined : usdTicks;
}

/**
 * What a finished task cost, when the gateway said (`$0.42 · your total today $1.30`), with its member's
 * total on the day it counts on. When the gateway made the video but reported no cost, its estimate is
 * what the usage ledger counts, so the card shows that, marked as an estimate (never `$0.00`); a task that
 * made nothing (failed, refunded) shows no cost.
 */
function costText(task: TaskRecord, context: CardContext, locale: Locale): string | undefined {
  if (!isTerminal(task.state)) return undefined;
  const tr = translator(locale);
  const usdTicks = task.outcome.costUsdTicks;
  if (usdTicks === undefined) {
    const estimate = estimateOf(task);
    return estimate !== undefined && madeVideo(task)
      ? tr('video.card.cost.estimated', { amount: formatEstimateIn(locale, estimate) })
      : undefined;
  }
  const day = context.memberDay;
  if (!day) return formatCostIn(locale, usdTicks);
  const today = dayKey(task.createdAt) === dayKey(context.now);
  return tr('video.card.cost.with-total', {
    cost: formatCostIn(locale, usdTicks),
    today: today ? 'yes' : 'no',
    day: dayKey(task.createdAt),
    total: formatCostIn(locale, day.costUsdTicks),
    unreported: day.costUnreported,
  });
}

/** The settings that shape the video, as the request sent them (the gateway's defaults where it left one out). */
function settingsLine(task: TaskRecord, tr: Translate): string {
  const { request } = task;
  const duration = readNumber(request, 'duration');
  const length =
    task.operation === 'generate'
      ? tr('video.card.length', { seconds: duration ?? GENERATION_DURATION.default })
      : task.operation === 'extend'
        ? tr('video.card.length-added', { seconds: duration ?? EXTENSION_DURATION.default })
        : undefined;
  const resolution = readString(request, 'resolution') ?? (task.operation === 'generate' ? DEFAULT_RESOLUTION : undefined);
  const aspectRatio = readString(request, 'aspect_ratio');
  return [`\`${task.model}\``, length, resolution, aspectRatio, tr('video.card.mode', { mode: task.mode.replaceAll('-', '_') })]
    .filter((part) => part !== undefined)
    .join(' · ');
}

function text(content: string): APITextDisplayComponent {
  return { type: ComponentType.TextDisplay, content };
}

function actionButton(label: string, action: VideoAction, taskId: string): APIButtonComponent {
  return { type: ComponentType.Button, style: ButtonStyle.Secondary, label, custom_id: videoActionId(action, taskId) };
}

/** Discord's most buttons in one action row. */
const MAX_BUTTONS_PER_ROW = 5;

function linkButton(label: string, url: string): APIButtonComponent {
  return { type: ComponentType.Button, style: ButtonStyle.Link, label, url };
}

/**
 * The buttons under a finished video: Extend, Edit, Regenerate, Change and regenerate; numbered when a
 * job has several videos, with Vary. Each variant's buttons are a row of their own: five actions,
 * Discord's most per row, and a card of four variants comes to at most 32 of its 40 components
 * (container, header, separator, four tiles, the gallery, and four rows of six), 34 with the row of its
 * Delete. Numbered buttons take one press where a select menu per action (or one "Act on variant…" menu)
 * would take two, and need no new kind of interaction.
 */
export function resultButtons(taskId: string, number?: number, locale: Locale = ENGLISH): APIButtonComponent[] {
  const tr = translator(locale);
  const label = (action: 'extend' | 'edit' | 'regenerate' | 'change' | 'vary') =>
    number === undefined ? tr('video.button.label', { action }) : tr('video.button.numbered', { action, number });
  return [
    actionButton(label('extend'), 'extend', taskId),
    actionButton(label('edit'), 'edit', taskId),
    actionButton(label('regenerate'), 'regenerate', taskId),
    actionButton(label('change'), 'change', taskId),
    ...(number === undefined ? [] : [actionButton(label('vary'), 'vary', taskId)]),
  ];
}

/** One task's part of the card: its text (cut to `textBudget`), its gallery item, and its row of buttons. */
function renderTile(
  task: TaskRecord,
  context: CardContext,
  view: CardView,
  number: number | undefined,
  textBudget: number,
  locale: Locale,
): { text: APITextDisplayComponent; item?: APIMediaGalleryItem; row?: APIActionRowComponent<APIComponentInMessageActionRow> } {
  const tr = translator(locale);
  const startedAt = task.submittedAt ?? task.createdAt;
  const lines = [number === undefined ? statusLine(task, locale) : `**${number}** · ${statusLine(task, locale)}`];
  // Until it is known what the task cost, the card carries what it is expected to (from the first card on).
  const estimate = estimateOf(task);
  if (!isTerminal(task.state) && estimate !== undefined)
    lines.push(tr('video.card.estimate', { amount: formatEstimateIn(locale, estimate) }));
  const cost = costText(task, context, locale);
  if (cost) lines.push(tr('video.card.cost', { cost }));
  const footer = [
    tr('video.card.ref', { ref: task.id }),
    task.layer,
    task.gatewayId ? tr('video.card.gateway-task', { id: task.gatewayId }) : undefined,
    task.finishedAt === undefined
      ? undefined
      : tr('video.card.took', { duration: formatDuration(locale, (task.finishedAt - startedAt) / 1000, 'narrow') }),
  ].filter((part) => part !== undefined);
  const footerLine = `-# ${footer.join(' · ')}`;
  const outcome = outcomeText(task, context, locale);
  const fixed = [...lines, footerLine].join('\n').length + 1;
  if (outcome) lines.push(shorten(outcome, textBudget - fixed));
  lines.push(footerLine);

  const video = tileVideo(task, view.audience);
  const buttons: APIButtonComponent[] = [];
  let item: APIMediaGalleryItem | undefined;
  if (video?.kind === 'attachment') item = { media: { url: `attachment://${video.fileName}` } };
  if (video?.kind === 'gallery-link') item = { media: { url: video.url } };
  if (video?.kind === 'link-button')
    buttons.push(
      linkButton(number === undefined ? tr('video.card.open-video') : tr('video.card.open-video-numbered', { number }), video.url),
    );
  if (video?.kind === 'elsewhere')
    buttons.push(
      linkButton(number === undefined ? tr('video.card.go-to-video') : tr('video.card.go-to-video-numbered', { number }), video.url),
    );
  // The buttons come with the video, as they came under the post; a private view points at them.
  // A card made through a member's own install carries none: they work through the server's install only.
  if (view.audience === 'channel' && task.delivery.state === 'posted' && !task.userInstall)
    buttons.unshift(...resultButtons(task.id, number, locale));
  // A job in line can be taken out of it, from the card everyone sees (the button says whose job it is).
  if (view.audience === 'channel' && task.state === 'waiting' && !task.userInstall)
    buttons.unshift(
      actionButton(number === undefined ? tr('video.button.unqueue') : tr('video.button.unqueue-numbered', { number }), 'unqueue', task.id),
    );
  // A row holds five buttons: a variant's five actions leave no room for its link button, whose link the
  // tile's text carries already.
  const row = buttons.slice(0, MAX_BUTTONS_PER_ROW);
  return {
    text: text(shorten(lines.join('\n'), textBudget)),
    ...(item ? { item } : {}),
    ...(row.length > 0 ? { row: { type: ComponentType.ActionRow, components: row } } : {}),
  };
}

/**
 * Whether a job's card offers Delete: the card everyone sees, once every task of the job has ended and has
 * nothing left to show (a video still to come would only have the bot post the card again), and not one
 * made through a member's own install (whose cards carry no buttons).
 */
function deletable(tasks: readonly TaskRecord[], view: CardView): boolean {
  return (
    view.audience === 'channel' &&
    tasks.every((task) => !deliveryPending(task) && task.userInstall === undefined && task.cardDeleted === undefined)
  );
}

/**
 * Adds Delete once per card: beside the buttons of a card of one video when its row has room (it deletes
 * the only video there is), else in a row of its own at the end, below every variant's row, where it
 * reads as the whole card's. A card of four variants then has 34 of its 40 components.
 */
function withDeleteButton(
  rows: APIActionRowComponent<APIComponentInMessageActionRow>[],
  button: APIButtonComponent,
  oneVideo: boolean,
): void {
  const last = rows.at(-1);
  if (oneVideo && last && last.components.length < MAX_BUTTONS_PER_ROW) last.components.push(button);
  else rows.push({ type: ComponentType.ActionRow, components: [button] });
}

/**
 * A job's card: the request, then each task's tile, the videos together in one media gallery. Tiles are
 * numbered when there are several. Text is cut to fit Discord's 4000 characters: the prompt first to its
 * preview, then each tile to its share of what is left.
 */
export function renderJobCard(
  tasks: readonly TaskRecord[],
  context: CardContext,
  view: CardView = { audience: 'channel' },
): ComponentsV2Message {
  const first = tasks[0];
  if (!first) throw new Error('a job card needs at least one task');
  // A task's own card in its member's DMs is theirs to read: in their language.
  const locale = view.locale ?? (view.askedIn !== undefined ? membersLanguage(first) : cardLocale(first));
  const tr = translator(locale);
  // Vary's note is worded for this card's reader.
  const varyNote = first.varyNote ? describeVaryNote(locale, first.varyNote) : undefined;
  const header = [
    `### ${tr('video.card.title', { operation: first.operation })}`,
    tr('video.card.requested-by', { user: `<@${first.userId}>` }),
    first.prompt ? `> ${shorten(first.prompt, PROMPT_PREVIEW).replaceAll('\n', '\n> ')}` : undefined,
    settingsLine(first, tr),
    varyNote ? `-# ${shorten(varyNote, PROMPT_PREVIEW)}` : undefined,
    // Whose key pays, where a server's members might think it is the server's.
    first.userInstall ? tr('user-install.card.operator-key', { member: `<@${first.userId}>` }) : undefined,
    view.askedIn === undefined ? undefined : tr('user-install.card.asked-in', { link: view.askedIn }),
  ]
    .filter((line) => line !== undefined)
    .join('\n');
  const unsent = first.job?.unsent;
  const sent = first.job?.size ?? tasks.length;
  const notes = [
    unsent
      ? tr('video.card.variants-sent', { sent, total: sent + unsent.count, reason: shorten(unsent.reason, PROMPT_PREVIEW) })
      : undefined,
    view.handoff ? tr(`user-install.card.handoff.${view.handoff.note}`, { count: view.handoff.pending }) : undefined,
    // Only a private view is drawn once the card is deleted: it says so, and links nothing there.
    first.cardDeleted ? `-# ${tr('video.card.deleted', { member: `<@${first.cardDeleted.by}>` })}` : undefined,
  ].filter((line) => line !== undefined);
  const note = notes.map((line) => `\n${line}`).join('');
  const share = Math.floor((CARD_LIMITS.textLength - header.length - note.length) / tasks.length);
  const numbered = tasks.length > 1 || first.job !== undefined;
  const tiles = tasks.map((task, index) =>
    renderTile(task, context, view, numbered ? (task.job?.number ?? index + 1) : undefined, share, locale),
  );
  const items = tiles.flatMap((tile) => (tile.item ? [tile.item] : []));
  const children: APIComponentInContainer[] = [
    text(header + note),
    { type: ComponentType.Separator, divider: true, spacing: SeparatorSpacingSize.Small },
    ...tiles.map((tile) => tile.text),
  ];
  if (items.length > 0) children.push({ type: ComponentType.MediaGallery, items: items.slice(0, CARD_LIMITS.galleryItems) });
  const rows = tiles.flatMap((tile) => (tile.row ? [tile.row] : []));
  if (deletable(tasks, view)) withDeleteButton(rows, actionButton(tr('video.button.delete'), 'delete', first.id), !numbered);
  children.push(...rows);
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [{ type: ComponentType.Container, accent_color: jobColor(tasks), components: children }],
  };
}

/** What a video asked for by voice shows until the submission draws its card there: who asked, and how (in the server's language). */
export function voiceRequestCard(userId: string, asked: Pick<InteractionContext, 'locale' | 'guildLocale'> = {}): ComponentsV2Message {
  const locale = taskLanguages(asked).locale;
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [
      {
        type: ComponentType.Container,
        accent_color: COLORS.running,
        components: [text(translator(locale)('video.card.asked-by-voice', { user: `<@${userId}>` }))],
      },
    ],
  };
}

/** A one-task job's card. */
export function renderStatusCard(task: TaskRecord, context: CardContext = { now: Date.now() }, view?: CardView): ComponentsV2Message {
  return renderJobCard([task], context, view);
}

/**
 * What the tracker keeps in memory of a task it follows, to close the task's card when its record is gone
 * from the store or cannot be read: where the card is, and the ids support and admins look a task up by.
 * A few hundred bytes, most of them the interaction token, which is dropped once it no longer edits the card.
 */
export interface KnownCard {
  taskId: string;
  operation: TaskRecord['operation'];
  userId: string;
  channelId: string;
  card: Pick<StatusCard, 'applicationId' | 'interactionToken' | 'tokenExpiresAt' | 'messageId'>;
  gatewayId: string | undefined;
  requestId: string | undefined;
  /** The card's language (the task's). */
  locale: Locale;
  /** A task of a member's own install: the bot's operator, not a server admin, can look it up. */
  ownInstall: boolean;
}

export function knownCard(task: TaskRecord, now: number): KnownCard {
  const { applicationId, tokenExpiresAt, messageId } = task.card;
  // Past its token the card is edited as a channel message; the token would only take memory.
  const interactionToken = now < tokenExpiresAt ? task.card.interactionToken : '';
  // A member's own install: past its token the card is reached only in their DMs, when it went there.
  const place = task.userInstall;
  return {
    taskId: task.id,
    operation: task.operation,
    userId: task.userId,
    channelId: place?.dmChannelId ?? task.channelId,
    card: {
      applicationId,
      interactionToken,
      tokenExpiresAt: place?.dmMessageId === undefined ? tokenExpiresAt : 0,
      messageId: place ? place.dmMessageId : messageId,
    },
    gatewayId: task.gatewayId,
    requestId: task.outcome.requestId,
    locale: cardLocale(task),
    ownInstall: place !== undefined,
  };
}

/** The card of a task the bot stopped following because its record is gone or unreadable: what it knows, and why. */
export function renderLostCard(known: KnownCard, reason: LostTaskReason): ComponentsV2Message {
  const { locale } = known;
  const tr = translator(locale);
  const footer = [
    tr('video.card.ref', { ref: known.taskId }),
    known.gatewayId ? tr('video.card.gateway-task', { id: known.gatewayId }) : undefined,
  ].filter((part) => part !== undefined);
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [
      {
        type: ComponentType.Container,
        accent_color: COLORS.failed,
        components: [
          text(
            [
              `### ${tr('video.card.title', { operation: known.operation })}`,
              tr('video.card.requested-by', { user: `<@${known.userId}>` }),
            ].join('\n'),
          ),
          { type: ComponentType.Separator, divider: true, spacing: SeparatorSpacingSize.Small },
          text(
            [
              reason === 'gone' ? tr('video.card.status.lost') : tr('video.card.status.unreadable'),
              shorten(describeLostTask(locale, reason, known), CARD_LIMITS.textLength / 2),
              `-# ${footer.join(' · ')}`,
            ].join('\n'),
          ),
        ],
      },
    ],
  };
}

// ---- What the bot says of a task's delivery: kept with the task in its card's language -------------------

/**
 * What a closed task's card keeps of why its video was not posted: `reason`, with a link to the video when
 * there is one; in the card's language, or the member's when only they read it (`forMember`).
 */
export function closedWords(task: TaskRecord, reason: string, forMember = false): string {
  const locale = forMember ? membersLanguage(task) : task.locale;
  const link = videoLink(task, locale);
  return link ? translator(locale)('video.card.closed-with-link', { reason, url: link.url, note: link.note }) : reason;
}
