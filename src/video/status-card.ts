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
import { formatCost, formatEstimate } from '../wording/cost.ts';
import type { MemberDayCost } from '../ports/guild-policy.ts';
import { videoActionId, type VideoAction } from './actions.ts';
import {
  describeDeliveryRetry,
  describeExpired,
  describeFailure,
  describeGatewayNotAnswering,
  describeLostTask,
  describeModeration,
  describeRefusedPublicUrl,
  describeStorageError,
  describeTimeout,
  describeUnknownOutcome,
  type LostTaskReason,
} from './wording.ts';
import { DEFAULT_POLL_POLICY } from './poll-policy.ts';
import { isTerminal, madeVideo, type StatusCard, type TaskRecord } from './record.ts';

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

const MODE_LABELS: Record<TaskRecord['mode'], string> = {
  'text-to-video': 'Text to video',
  'image-to-video': 'Image to video',
  reference: 'Reference material',
  'first-last-frame': 'First/last frame',
  edit: 'Edit',
  extend: 'Extension',
};

const TITLES: Record<TaskRecord['operation'], string> = { generate: 'Video generation', edit: 'Video edit', extend: 'Video extension' };

export function progressBar(progress: number): string {
  const filled = Math.round(Math.min(100, Math.max(0, progress)) / 10);
  return `${'▰'.repeat(filled)}${'▱'.repeat(10 - filled)} ${Math.round(progress)}%`;
}

function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function truncate(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, Math.max(0, length - 1))}…`;
}

function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
}

/** A link to a finished task's video, and what to say about it. Only ever an http(s) link. */
export function videoLink(task: TaskRecord): { url: string; note: string } | undefined {
  const stored = task.outcome.storedFile?.publicUrl;
  if (stored !== undefined && isHttpUrl(stored)) return { url: stored, note: "This is a lasting link from the gateway's storage." };
  const temporary = task.outcome.videoUrl;
  if (temporary !== undefined && isHttpUrl(temporary))
    return { url: temporary, note: 'This is a temporary link and it expires soon: download the video now.' };
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

/** Who the card is drawn for: the channel (the card itself), or a member privately (`/video status`), who sees where the video is. */
export interface CardView {
  audience: 'channel' | 'private';
}

function messageUrl(task: TaskRecord, messageId: string): string {
  return `https://discord.com/channels/${task.guildId}/${task.channelId}/${messageId}`;
}

function tileVideo(task: TaskRecord, audience: CardView['audience']): TileVideo | undefined {
  const delivery = task.delivery;
  if (delivery.state !== 'posted') return undefined;
  if (!delivery.inCard) {
    // An earlier version posted it as a message of its own: that message has it (and its buttons).
    return delivery.messageId && audience === 'private' ? { kind: 'elsewhere', url: messageUrl(task, delivery.messageId) } : undefined;
  }
  if (delivery.fileName !== undefined && delivery.linkReason === undefined) {
    // The file belongs to the card: a private answer can only point at it.
    if (audience === 'channel') return { kind: 'attachment', fileName: delivery.fileName };
    return delivery.messageId ? { kind: 'elsewhere', url: messageUrl(task, delivery.messageId) } : undefined;
  }
  const link = videoLink(task);
  if (!link) return undefined;
  return playableByDiscord(link.url) ? { kind: 'gallery-link', url: link.url } : { kind: 'link-button', url: link.url };
}

function statusLine(task: TaskRecord): string {
  switch (task.state) {
    case 'submitting':
      return '**Sending to the gateway…**';
    case 'running': {
      const started = `started <t:${unixSeconds(task.submittedAt ?? task.createdAt)}:R>`;
      return task.progress === undefined ? `**Generating…** ${started}` : `**Generating** ${progressBar(task.progress)} · ${started}`;
    }
    case 'succeeded':
      if (task.outcome.moderated) return '**Held back by moderation**';
      if (task.delivery.state === 'posted') {
        if (!task.delivery.inCard) return task.delivery.linkReason ? '**Done**: link posted below' : '**Done**: posted below';
        return task.delivery.linkReason ? '**Done**: shown by its link' : '**Done**';
      }
      if (task.delivery.state === 'closed') return '**Done**, but it could not be shown';
      return '**Done**: fetching the video…';
    case 'failed':
      return '**Failed**';
    case 'expired':
      return '**Expired** before it could be fetched';
    case 'timed_out':
      return '**Timed out**';
    case 'unknown':
      return '**Outcome unknown**';
  }
}

function outcomeText(task: TaskRecord, context: CardContext): string | undefined {
  switch (task.state) {
    case 'failed':
      return describeFailure(task.outcome);
    case 'timed_out':
      return describeTimeout(task);
    case 'expired':
      return describeExpired(task);
    case 'unknown':
      return describeUnknownOutcome(task);
    case 'running':
      return task.pollErrors > 0
        ? describeGatewayNotAnswering(task, task.createdAt + (context.deadlineMs ?? DEFAULT_POLL_POLICY.deadlineMs))
        : undefined;
    case 'succeeded': {
      if (task.outcome.moderated) return describeModeration(task.outcome);
      const { delivery } = task;
      const retrying = delivery.state !== 'closed' && delivery.state !== 'posted' && delivery.failures !== undefined;
      const link = delivery.inCard && delivery.state === 'posted' && delivery.linkReason ? videoLink(task) : undefined;
      const notes = [
        link ? `${delivery.linkReason} Here is a link instead: ${link.url}\n${link.note}` : undefined,
        describeStorageError(task.outcome),
        describeRefusedPublicUrl(task.outcome),
        delivery.state === 'closed' ? delivery.lastError : undefined,
        retrying ? describeDeliveryRetry(task) : undefined,
      ];
      const text = notes.filter((note) => note !== undefined).join('\n');
      return text || undefined;
    }
    default:
      return undefined;
  }
}

function colorOf(task: TaskRecord): number {
  if (task.state === 'succeeded' && !task.outcome.moderated && task.delivery.state !== 'closed') return COLORS.succeeded;
  if (task.state === 'running' || task.state === 'submitting') return COLORS.running;
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
  return [task.state, task.progress ?? '', task.delivery.state, task.delivery.linkReason ?? '', task.gatewayId ?? '', trouble].join('|');
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

/** What the task was expected to cost when it was submitted (its reservation); undefined for a task submitted before estimates. */
function estimateOf(task: TaskRecord): number | undefined {
  const ticks = task.reservation?.estimateTicks;
  return ticks === undefined || ticks <= 0 ? undefined : ticks;
}

/**
 * What a finished task cost, when the gateway said (`$0.42 · your total today $1.30`), with its member's
 * total on the day it counts on. When the gateway made the video but reported no cost, its estimate is
 * what the usage ledger counts, so the card shows that, marked as an estimate (never `$0.00`); a task that
 * made nothing (failed, refunded) shows no cost.
 */
function costText(task: TaskRecord, context: CardContext): string | undefined {
  if (!isTerminal(task.state)) return undefined;
  const ticks = task.outcome.costTicks;
  if (ticks === undefined) {
    const estimate = estimateOf(task);
    return estimate !== undefined && madeVideo(task) ? `${formatEstimate(estimate)} (estimated)` : undefined;
  }
  const day = context.memberDay;
  if (!day) return formatCost(ticks);
  const when = dayKey(task.createdAt) === dayKey(context.now) ? 'today' : `on ${dayKey(task.createdAt)}`;
  const unreported = day.costUnreported > 0 ? ` (+ ${day.costUnreported} without a reported cost)` : '';
  return `${formatCost(ticks)} · your total ${when} ${formatCost(day.costTicks)}${unreported}`;
}

/** The settings that shape the video, as the request sent them (the gateway's defaults where it left one out). */
function settingsLine(task: TaskRecord): string {
  const { request } = task;
  const duration = readNumber(request, 'duration');
  const length =
    task.operation === 'generate'
      ? `${duration ?? GENERATION_DURATION.default} s`
      : task.operation === 'extend'
        ? `+${duration ?? EXTENSION_DURATION.default} s`
        : undefined;
  const resolution = readString(request, 'resolution') ?? (task.operation === 'generate' ? DEFAULT_RESOLUTION : undefined);
  const aspectRatio = readString(request, 'aspect_ratio');
  return [`\`${task.model}\``, length, resolution, aspectRatio, MODE_LABELS[task.mode]].filter((part) => part !== undefined).join(' · ');
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
 * (container, header, separator, four tiles, the gallery, and four rows of six). Numbered buttons take one
 * press where a select menu per action (or one "Act on variant…" menu) would take two, and need no new
 * kind of interaction.
 */
export function resultButtons(taskId: string, number?: number): APIButtonComponent[] {
  const suffix = number === undefined ? '' : ` ${number}`;
  return [
    actionButton(`Extend${suffix}`, 'extend', taskId),
    actionButton(`Edit${suffix}`, 'edit', taskId),
    actionButton(`Regenerate${suffix}`, 'regenerate', taskId),
    actionButton(`Change and regenerate${suffix}`, 'change', taskId),
    ...(number === undefined ? [] : [actionButton(`Vary${suffix}`, 'vary', taskId)]),
  ];
}

/** One task's part of the card: its text (cut to `textBudget`), its gallery item, and its row of buttons. */
function renderTile(
  task: TaskRecord,
  context: CardContext,
  view: CardView,
  number: number | undefined,
  textBudget: number,
): { text: APITextDisplayComponent; item?: APIMediaGalleryItem; row?: APIActionRowComponent<APIComponentInMessageActionRow> } {
  const startedAt = task.submittedAt ?? task.createdAt;
  const lines = [number === undefined ? statusLine(task) : `**${number}** · ${statusLine(task)}`];
  // Until it is known what the task cost, the card carries what it is expected to (from the first card on).
  const estimate = estimateOf(task);
  if (!isTerminal(task.state) && estimate !== undefined) lines.push(`Estimate: ${formatEstimate(estimate)}`);
  const cost = costText(task, context);
  if (cost) lines.push(`Cost: ${cost}`);
  const footer = [
    `ref ${task.id}`,
    task.layer,
    task.gatewayId ? `task \`${task.gatewayId}\`` : undefined,
    task.finishedAt === undefined ? undefined : `took ${formatDuration(task.finishedAt - startedAt)}`,
  ].filter((part) => part !== undefined);
  const footerLine = `-# ${footer.join(' · ')}`;
  const outcome = outcomeText(task, context);
  const fixed = [...lines, footerLine].join('\n').length + 1;
  if (outcome) lines.push(truncate(outcome, textBudget - fixed));
  lines.push(footerLine);

  const video = tileVideo(task, view.audience);
  const buttons: APIButtonComponent[] = [];
  let item: APIMediaGalleryItem | undefined;
  if (video?.kind === 'attachment') item = { media: { url: `attachment://${video.fileName}` } };
  if (video?.kind === 'gallery-link') item = { media: { url: video.url } };
  if (video?.kind === 'link-button') buttons.push(linkButton(number === undefined ? 'Open the video' : `Open video ${number}`, video.url));
  if (video?.kind === 'elsewhere') buttons.push(linkButton(number === undefined ? 'Go to the video' : `Go to video ${number}`, video.url));
  // The buttons come with the video, as they came under the post; a private view points at them.
  if (view.audience === 'channel' && task.delivery.state === 'posted' && task.delivery.inCard)
    buttons.unshift(...resultButtons(task.id, number));
  // A row holds five buttons: a variant's five actions leave no room for its link button, whose link the
  // tile's text carries already.
  const row = buttons.slice(0, MAX_BUTTONS_PER_ROW);
  return {
    text: text(truncate(lines.join('\n'), textBudget)),
    ...(item ? { item } : {}),
    ...(row.length > 0 ? { row: { type: ComponentType.ActionRow, components: row } } : {}),
  };
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
  const header = [
    `### ${TITLES[first.operation]}`,
    `Requested by <@${first.userId}>`,
    first.prompt ? `> ${truncate(first.prompt, PROMPT_PREVIEW).replaceAll('\n', '\n> ')}` : undefined,
    settingsLine(first),
  ]
    .filter((line) => line !== undefined)
    .join('\n');
  const unsent = first.job?.unsent;
  const note = unsent
    ? `\n**${first.job?.size ?? tasks.length} of ${(first.job?.size ?? tasks.length) + unsent.count} variants sent.** ${truncate(unsent.reason, PROMPT_PREVIEW)}`
    : '';
  const share = Math.floor((CARD_LIMITS.textLength - header.length - note.length) / tasks.length);
  const numbered = tasks.length > 1 || first.job !== undefined;
  const tiles = tasks.map((task, index) => renderTile(task, context, view, numbered ? (task.job?.number ?? index + 1) : undefined, share));
  const items = tiles.flatMap((tile) => (tile.item ? [tile.item] : []));
  const children: APIComponentInContainer[] = [
    text(header + note),
    { type: ComponentType.Separator, divider: true, spacing: SeparatorSpacingSize.Small },
    ...tiles.map((tile) => tile.text),
  ];
  if (items.length > 0) children.push({ type: ComponentType.MediaGallery, items: items.slice(0, CARD_LIMITS.galleryItems) });
  children.push(...tiles.flatMap((tile) => (tile.row ? [tile.row] : [])));
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [{ type: ComponentType.Container, accent_color: jobColor(tasks), components: children }],
  };
}

/** What a video asked for by voice shows until the submission draws its card there: who asked, and how. */
export function voiceRequestCard(userId: string): ComponentsV2Message {
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [
      { type: ComponentType.Container, accent_color: COLORS.running, components: [text(`🎙️ <@${userId}> asked for a video by voice.`)] },
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
  card: Pick<StatusCard, 'applicationId' | 'interactionToken' | 'tokenExpiresAt' | 'messageId' | 'componentsV2'>;
  gatewayId: string | undefined;
  requestId: string | undefined;
}

export function knownCard(task: TaskRecord, now: number): KnownCard {
  const { applicationId, tokenExpiresAt, messageId, componentsV2 } = task.card;
  // Past its token the card is edited as a channel message; the token would only take memory.
  const interactionToken = now < tokenExpiresAt ? task.card.interactionToken : '';
  return {
    taskId: task.id,
    operation: task.operation,
    userId: task.userId,
    channelId: task.channelId,
    card: { applicationId, interactionToken, tokenExpiresAt, messageId, ...(componentsV2 ? { componentsV2 } : {}) },
    gatewayId: task.gatewayId,
    requestId: task.outcome.requestId,
  };
}

/** The card of a task the bot stopped following because its record is gone or unreadable: what it knows, and why. */
export function renderLostCard(known: KnownCard, reason: LostTaskReason): ComponentsV2Message {
  const footer = [`ref ${known.taskId}`, known.gatewayId ? `task \`${known.gatewayId}\`` : undefined].filter((part) => part !== undefined);
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [
      {
        type: ComponentType.Container,
        accent_color: COLORS.failed,
        components: [
          text([`### ${TITLES[known.operation]}`, `Requested by <@${known.userId}>`].join('\n')),
          { type: ComponentType.Separator, divider: true, spacing: SeparatorSpacingSize.Small },
          text(
            [
              reason === 'gone' ? '**Lost**' : '**Record unreadable**',
              truncate(describeLostTask(reason, known), CARD_LIMITS.textLength / 2),
              `-# ${footer.join(' · ')}`,
            ].join('\n'),
          ),
        ],
      },
    ],
  };
}
