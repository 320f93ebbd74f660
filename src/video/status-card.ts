import type { APIEmbed } from 'discord.js';
import { dayKey } from '../lib/day-key.ts';
import { formatCost, formatEstimate } from '../wording/cost.ts';
import type { MemberDayCost } from '../ports/guild-policy.ts';
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

// The status card: the reply to /video, edited in place as the task moves. Elapsed time is a Discord
// timestamp (`<t:…:R>`), which every client keeps current by itself, so the card only needs an edit
// when the status or progress changes.

const COLORS = { running: 0x5865f2, succeeded: 0x57f287, failed: 0xed4245, warning: 0xfee75c } as const;
const PROMPT_PREVIEW = 300;

const MODE_LABELS: Record<TaskRecord['mode'], string> = {
  'text-to-video': 'Text to video',
  'image-to-video': 'Image to video',
  reference: 'Reference material',
  'first-last-frame': 'First/last frame',
  edit: 'Edit',
  extend: 'Extension',
};

export function progressBar(progress: number): string {
  const filled = Math.round(Math.min(100, Math.max(0, progress)) / 10);
  return `${'▰'.repeat(filled)}${'▱'.repeat(10 - filled)} ${Math.round(progress)}%`;
}

function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function truncate(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}

function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
}

function statusLine(task: TaskRecord): string {
  switch (task.state) {
    case 'submitting':
      return 'Sending to the gateway…';
    case 'running':
      return task.progress === undefined ? 'Generating…' : `Generating ${progressBar(task.progress)}`;
    case 'succeeded':
      if (task.outcome.moderated) return 'Held back by moderation';
      if (task.delivery.state === 'posted') return task.delivery.linkReason ? 'Done: link posted below' : 'Done: posted below';
      if (task.delivery.state === 'closed') return 'Done, but it could not be posted';
      return 'Done: posting…';
    case 'failed':
      return 'Failed';
    case 'expired':
      return 'Expired before it could be fetched';
    case 'timed_out':
      return 'Timed out';
    case 'unknown':
      return 'Outcome unknown';
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
      const retrying = task.delivery.state !== 'closed' && task.delivery.state !== 'posted' && task.delivery.failures !== undefined;
      const notes = [
        describeStorageError(task.outcome),
        describeRefusedPublicUrl(task.outcome),
        task.delivery.state === 'closed' ? task.delivery.lastError : undefined,
        retrying ? describeDeliveryRetry(task) : undefined,
      ];
      const text = notes.filter((note) => note !== undefined).join('\n');
      return text || undefined;
    }
    default:
      return undefined;
  }
}

function color(task: TaskRecord): number {
  if (task.state === 'succeeded' && !task.outcome.moderated && task.delivery.state !== 'closed') return COLORS.succeeded;
  if (task.state === 'running' || task.state === 'submitting') return COLORS.running;
  if (task.state === 'failed') return COLORS.failed;
  return COLORS.warning;
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

const TITLES: Record<TaskRecord['operation'], string> = { generate: 'Video generation', edit: 'Video edit', extend: 'Video extension' };

export function renderStatusCard(task: TaskRecord, context: CardContext = { now: Date.now() }): { embeds: APIEmbed[] } {
  const fields: NonNullable<APIEmbed['fields']> = [
    { name: 'Model', value: `\`${task.model}\``, inline: true },
    { name: 'Mode', value: MODE_LABELS[task.mode], inline: true },
    { name: 'Layer', value: task.layer, inline: true },
    { name: 'Task', value: task.gatewayId ? `\`${task.gatewayId}\`` : '—', inline: true },
    { name: 'Status', value: statusLine(task), inline: true },
  ];
  const startedAt = task.submittedAt ?? task.createdAt;
  fields.push(
    task.finishedAt === undefined
      ? { name: 'Started', value: `<t:${unixSeconds(startedAt)}:R>`, inline: true }
      : { name: 'Took', value: formatDuration(task.finishedAt - startedAt), inline: true },
  );
  const cost = costText(task, context);
  if (cost) fields.push({ name: 'Cost', value: cost });
  // Until it is known what the task cost, the card carries what it is expected to (from the first card on).
  const estimate = estimateOf(task);
  if (!isTerminal(task.state) && estimate !== undefined) fields.push({ name: 'Estimate', value: formatEstimate(estimate), inline: true });
  const outcome = outcomeText(task, context);
  if (outcome) fields.push({ name: 'Details', value: truncate(outcome, 1024) });

  return {
    embeds: [
      {
        title: TITLES[task.operation],
        description: [
          `Requested by <@${task.userId}>`,
          task.prompt ? `> ${truncate(task.prompt, PROMPT_PREVIEW).replaceAll('\n', '\n> ')}` : undefined,
        ]
          .filter((line) => line !== undefined)
          .join('\n'),
        color: color(task),
        fields,
        footer: { text: `ref ${task.id}` },
      },
    ],
  };
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
}

export function knownCard(task: TaskRecord, now: number): KnownCard {
  const { applicationId, tokenExpiresAt, messageId } = task.card;
  // Past its token the card is edited as a channel message; the token would only take memory.
  const interactionToken = now < tokenExpiresAt ? task.card.interactionToken : '';
  return {
    taskId: task.id,
    operation: task.operation,
    userId: task.userId,
    channelId: task.channelId,
    card: { applicationId, interactionToken, tokenExpiresAt, messageId },
    gatewayId: task.gatewayId,
    requestId: task.outcome.requestId,
  };
}

/** The card of a task the bot stopped following because its record is gone or unreadable: what it knows, and why. */
export function renderLostCard(known: KnownCard, reason: LostTaskReason): { embeds: APIEmbed[] } {
  return {
    embeds: [
      {
        title: TITLES[known.operation],
        description: `Requested by <@${known.userId}>`,
        color: COLORS.failed,
        fields: [
          { name: 'Task', value: known.gatewayId ? `\`${known.gatewayId}\`` : '—', inline: true },
          { name: 'Status', value: reason === 'gone' ? 'Lost' : 'Record unreadable', inline: true },
          { name: 'Details', value: truncate(describeLostTask(reason, known), 1024) },
        ],
        footer: { text: `ref ${known.taskId}` },
      },
    ],
  };
}
