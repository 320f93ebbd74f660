import { ButtonStyle, ComponentType, type APIActionRowComponent, type APIComponentInMessageActionRow, type APIEmbed } from 'discord.js';
import {
  DISCORD_ERRORS,
  isDiscordError,
  isReplyRefusal,
  type DiscordOutbox,
  type FileToPost,
  type OwnMessage,
  type PostedMessage,
} from '../discord/outbox.ts';
import {
  DownloadRefusedError,
  NotAVideoError,
  NotFoundError,
  ResponseTooLargeError,
  VideoUnavailableError,
  type GatewayError,
} from '../gateway/errors.ts';
import type { GatewayClient } from '../gateway/client.ts';
import type { SavedVideo, TaskResult } from '../gateway/types.ts';
import type { Logger } from '../lib/log.ts';
import { isHttpUrl } from '../lib/url.ts';
import { videoActionId, type VideoAction } from './actions.ts';
import { applyResult } from './apply-result.ts';
import type { DownloadFiles } from './download-files.ts';
import {
  CHANNEL_DELETED,
  describeDeliveryFailure,
  describeMissingPermission,
  describeOverUploadLimit,
  describeRefusedPublicUrl,
  describeRefusedVideo,
  describeStorageError,
  type LostTaskReason,
} from './wording.ts';
import type { MemberCosts, MemberDayCost } from '../ports/guild-policy.ts';
import { isTerminal, type TaskRecord } from './record.ts';
import type { TaskRepository } from './repository.ts';
import { cardStateKey, renderLostCard, renderStatusCard, type KnownCard } from './status-card.ts';
import type { BotMetrics } from '../lib/metrics.ts';

// Posting a finished video exactly once. Delivery is a small state machine kept in the store:
//   waiting --(download, then write "posting")--> posting --(post with nonce)--> posted
// A crash after the post but before "posted" is written leaves "posting"; the retry posts again with the
// same nonce and enforce_nonce, and Discord answers with the message it already has instead of a second.
// The video goes from the gateway to a temporary file and from there to Discord, a chunk at a time: a
// delivery holds a few hundred KB of it in memory whatever its size.

export function resultButtons(taskId: string): APIActionRowComponent<APIComponentInMessageActionRow>[] {
  const button = (label: string, action: VideoAction) => ({
    type: ComponentType.Button as const,
    style: ButtonStyle.Secondary as const,
    label,
    custom_id: videoActionId(action, taskId),
  });
  return [
    { type: ComponentType.ActionRow, components: [button('Extend', 'extend'), button('Edit', 'edit'), button('Regenerate', 'regenerate')] },
  ];
}

/** A link to post instead of the file, and what to say about it. Only ever an http(s) link. */
function linkFor(task: TaskRecord): { url: string; note: string } | undefined {
  const stored = task.outcome.storedFile?.publicUrl;
  if (stored !== undefined && isHttpUrl(stored)) return { url: stored, note: "This is a lasting link from the gateway's storage." };
  const temporary = task.outcome.videoUrl;
  if (temporary !== undefined && isHttpUrl(temporary))
    return { url: temporary, note: 'This is a temporary link and it expires soon: download the video now.' };
  return undefined;
}

const CONTENT_TYPES: Record<SavedVideo['container'], string> = { mp4: 'video/mp4', webm: 'video/webm' };

/**
 * A video the bot will not fetch or post, whatever it tries: an address that is not public or not an
 * http(s) link, or a body that is not a video.
 */
function isRefusedVideo(error: unknown): error is GatewayError {
  return (
    error instanceof DownloadRefusedError ||
    error instanceof NotAVideoError ||
    (error instanceof VideoUnavailableError && error.reason === 'not-http')
  );
}

/**
 * Discord answers a repeated nonce with the first message only for "a few minutes": a post first tried
 * longer ago than this may have gone out without the bot recording it, so the channel is searched first.
 */
const NONCE_TRUSTED_MS = 2 * 60_000;

export interface DeliveryDeps {
  /** Counts posts (and how long after the gateway finished) and failures by reason; default none. */
  metrics?: Pick<BotMetrics, 'videoPosted' | 'videoDeliveryFailure'>;
  repository: TaskRepository;
  outbox: DiscordOutbox;
  /** Where videos wait between their download and their post. */
  files: DownloadFiles;
  log: Logger;
  /** The status card is edited at most this often while a task runs (terminal edits always go out). */
  cardEditIntervalMs: number;
  /** Members' costs of the day, shown on the card beside a finished task's cost; default none (the cost alone). */
  costs?: MemberCosts;
  /** The tracker's deadline for a task (its poll policy's), which a card whose polls fail states; default production's. */
  taskDeadlineMs?: number;
}

export class VideoDelivery {
  readonly #deps: DeliveryDeps;

  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
  }

  /**
   * A task's status card as it stands: when the gateway reported what a finished task cost, with its
   * member's total on that day.
   */
  async card(task: TaskRecord, now = Date.now()): Promise<{ embeds: APIEmbed[] }> {
    const memberDay = await this.#memberDayCost(task);
    const { taskDeadlineMs } = this.#deps;
    return renderStatusCard(task, {
      now,
      ...(memberDay ? { memberDay } : {}),
      ...(taskDeadlineMs === undefined ? {} : { deadlineMs: taskDeadlineMs }),
    });
  }

  /** The member's costs on the day a finished, costed task counts on; undefined when there is nothing to show or they cannot be read. */
  async #memberDayCost(task: TaskRecord): Promise<MemberDayCost | undefined> {
    const costs = this.#deps.costs;
    if (!costs || task.outcome.costTicks === undefined || !isTerminal(task.state)) return undefined;
    try {
      return await costs.memberDayCost(task.guildId, task.userId, task.createdAt);
    } catch (error) {
      // The card still shows the task and its cost: the day's total is a courtesy, not worth a card left behind.
      this.#deps.log.warn("could not read a member's costs of the day; the status card shows the task's cost alone", {
        task: task.id,
        error,
      });
      return undefined;
    }
  }

  /**
   * Edits the status card when what it shows changed, at most once per interval while the task runs.
   * Returns the task with the card's bookkeeping updated; showAndSave() saves it.
   */
  async #updateCard(task: TaskRecord, now = Date.now()): Promise<TaskRecord> {
    const key = cardStateKey(task);
    if (task.card.renderedState === key) return task;
    const running = task.state === 'running' || task.state === 'submitting';
    if (running && task.card.renderedAt !== undefined && now - task.card.renderedAt < this.#deps.cardEditIntervalMs) return task;
    try {
      const messageId = await this.#deps.outbox.editCard(
        { ...task.card, channelId: task.channelId, messageId: task.card.messageId },
        await this.card(task, now),
        now,
      );
      return { ...task, card: { ...task.card, renderedAt: now, renderedState: key, messageId: messageId ?? task.card.messageId } };
    } catch (error) {
      // A card that cannot be edited (deleted, no access) must not stop the task or its delivery.
      if (isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) {
        // Past the interaction token the card is a channel message: without access there, nobody can be told.
        this.#deps.log.error('cannot tell the user about a video task: the bot may not edit its status card in the channel', {
          task: task.id,
          channel: task.channelId,
          user: task.userId,
          state: task.state,
          delivery: task.delivery.state,
          problem: task.delivery.lastError,
          error,
        });
      } else {
        this.#deps.log.warn('could not update a status card', { task: task.id, error });
      }
      return { ...task, card: { ...task.card, renderedAt: now, renderedState: key } };
    }
  }

  /**
   * Posts a succeeded task's video (or a link to it) in its channel. `result` is the answer that showed
   * the task done, when the caller has it; otherwise the task is queried again.
   */
  async deliver(task: TaskRecord, gateway: GatewayClient, result?: TaskResult): Promise<TaskRecord> {
    let current = task;
    if (current.delivery.state === 'posted' || current.delivery.state === 'closed') return current;

    const earlier = await this.#earlierPost(current);
    if (earlier) {
      // The bot posted it before it crashed (or lost Discord's answer), too long ago for the nonce to catch it.
      current = {
        ...current,
        delivery: {
          ...current.delivery,
          state: 'posted',
          messageId: earlier.messageId,
          ...(earlier.attachmentUrl ? { attachmentUrl: earlier.attachmentUrl } : {}),
        },
      };
      this.#deps.log.info('found the video already posted; recorded it instead of posting again', {
        task: current.id,
        message: earlier.messageId,
      });
      return this.showAndSave(current);
    }

    let latest = result;
    if (!latest) {
      if (!current.gatewayId) throw new Error(`task ${current.id} has no gateway id`);
      latest = await gateway.getTask(current.gatewayId);
      current = applyResult(current, latest, current.finishedAt ?? Date.now());
      if (current.delivery.state === 'closed' || current.state !== 'succeeded') {
        return this.showAndSave(current);
      }
    }

    const path = await this.#deps.files.pathFor(current.id);
    try {
      let file: FileToPost | undefined;
      let linkReason: string | undefined;
      try {
        const video = await gateway.saveVideo(latest, { maxBytes: current.attachmentSizeLimit, path });
        file = { name: `video-${current.id}.${video.container}`, path, contentType: CONTENT_TYPES[video.container] };
      } catch (error) {
        if (error instanceof ResponseTooLargeError) {
          linkReason = describeOverUploadLimit(error.size, current.attachmentSizeLimit);
        } else if (isRefusedVideo(error)) {
          // Trying again would be refused the same way; the address is not shared as a link either.
          this.#deps.log.warn('refused a finished video', { task: current.id, error });
          const { videoUrl: _refused, ...outcome } = current.outcome;
          return await this.#close({ ...current, outcome }, describeRefusedVideo(error));
        } else if (error instanceof VideoUnavailableError || error instanceof NotFoundError) {
          // The temporary video is gone: nothing can be posted any more.
          current = { ...current, state: 'expired', delivery: { ...current.delivery, state: 'closed', lastError: error.message } };
          return await this.showAndSave(current);
        } else {
          throw error;
        }
      }
      return await this.#post(current, file, linkReason);
    } finally {
      await this.#deps.files.remove(path);
    }
  }

  /**
   * The post of this task already in its channel, when an earlier try may have made one that Discord's
   * nonce no longer guards (tried longer ago than it remembers nonces). Only the last 50 messages are
   * searched; without Read Message History nothing can be searched, and the video is posted again.
   */
  async #earlierPost(task: TaskRecord): Promise<PostedMessage | undefined> {
    const { state, postingSince, nonce } = task.delivery;
    if (state !== 'posting') return undefined;
    if (postingSince !== undefined && Date.now() - postingSince < NONCE_TRUSTED_MS) return undefined;
    let messages: OwnMessage[];
    try {
      messages = await this.#deps.outbox.recentOwnMessages(task.channelId);
    } catch (error) {
      // A deleted channel: the post that follows is refused the same way, and closes the task.
      if (isDiscordError(error, DISCORD_ERRORS.unknownChannel)) return undefined;
      if (!isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) throw error;
      this.#deps.log.warn('cannot search the channel for an earlier post of a video; posting it again', {
        task: task.id,
        channel: task.channelId,
        error,
      });
      return undefined;
    }
    // Discord may leave the nonce out of listed messages; the result buttons carry the task id too.
    const extendButton = videoActionId('extend', task.id);
    return messages.find((message) => message.nonce === nonce || message.customIds.includes(extendButton));
  }

  /** `asReply`: as a reply to the status card, unless Discord refused that once already. */
  async #post(task: TaskRecord, file: FileToPost | undefined, linkReason: string | undefined, asReply = true): Promise<TaskRecord> {
    const { repository, outbox, log } = this.#deps;
    const link = file ? undefined : linkFor(task);
    if (!file && !link)
      return this.#close(task, `${linkReason ?? ''} The gateway gave no link to share either, so the video could not be posted.`.trim());

    let current: TaskRecord = {
      ...task,
      delivery: {
        ...task.delivery,
        state: 'posting',
        attempts: task.delivery.attempts + 1,
        postingSince: task.delivery.postingSince ?? Date.now(),
        ...(linkReason ? { linkReason } : {}),
      },
    };
    await repository.save(current);

    const lines = [`<@${task.userId}> your video is ready.`];
    if (link) lines.push(`${linkReason ?? ''} Here is a link instead:`.trim(), link.url, link.note);
    const storage = describeStorageError(task.outcome);
    if (storage) lines.push(storage);
    const refusedLink = describeRefusedPublicUrl(task.outcome);
    if (refusedLink) lines.push(refusedLink);
    try {
      const posted = await outbox.post({
        channelId: task.channelId,
        content: lines.filter((line) => line !== '').join('\n'),
        ...(file ? { file } : {}),
        components: resultButtons(task.id),
        ...(asReply && task.card.messageId ? { replyTo: task.card.messageId } : {}),
        mentionUsers: [task.userId],
        nonce: task.delivery.nonce,
      });
      current = {
        ...current,
        delivery: {
          ...current.delivery,
          state: 'posted',
          messageId: posted.messageId,
          ...(posted.attachmentUrl ? { attachmentUrl: posted.attachmentUrl } : {}),
        },
      };
    } catch (error) {
      // Each refusal below created no message, so posting again with the same nonce is safe.
      if (file && isDiscordError(error, DISCORD_ERRORS.requestEntityTooLarge)) {
        // The limit Discord enforced is lower than the one it announced: fall back to a link.
        return this.#post(current, undefined, `The video is over this server's upload limit.`, asReply);
      }
      if (file && isDiscordError(error, DISCORD_ERRORS.missingPermissions)) {
        // Most likely Attach Files is missing; if Send Messages is missing too, the link post says so.
        this.#deps.metrics?.videoDeliveryFailure('posted_as_link');
        log.warn('Discord refused the video file (no Attach Files?); posting a link instead', { task: task.id, channel: task.channelId });
        return this.#post(current, undefined, describeMissingPermission('Attach Files'), asReply);
      }
      if (asReply && isReplyRefusal(error)) {
        log.warn('Discord refused the post as a reply (no Read Message History?); posting it without', {
          task: task.id,
          channel: task.channelId,
          error,
        });
        return this.#post(current, file, linkReason, false);
      }
      if (isDiscordError(error, DISCORD_ERRORS.unknownChannel)) {
        // Trying again cannot bring the channel back; /video status elsewhere still shows the card and its link.
        this.#deps.metrics?.videoDeliveryFailure('channel_deleted');
        log.warn('the channel of a finished video was deleted; closing the task', { task: task.id, channel: task.channelId });
        return this.#close(current, CHANNEL_DELETED);
      }
      if (!isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) throw error;
      const missing = isDiscordError(error, DISCORD_ERRORS.missingAccess) ? 'View Channel' : 'Send Messages';
      this.#deps.metrics?.videoDeliveryFailure('missing_permission');
      log.warn('Discord refused to post a video in its channel', { task: task.id, channel: task.channelId, missing });
      return this.#close(current, describeMissingPermission(missing));
    }
    const saved = await this.showAndSave(current);
    // Logged once recorded: from here on the task is known as posted (edits and extensions use its attachment).
    if (task.finishedAt !== undefined) this.#deps.metrics?.videoPosted(Math.max(0, Date.now() - task.finishedAt) / 1000);
    log.info('video posted', { task: task.id, guild: task.guildId, message: saved.delivery.messageId, link: link !== undefined });
    return saved;
  }

  /** Closes a task that will not be posted; the card shows `reason` and a link to the video when there is one. */
  async #close(task: TaskRecord, reason: string, failures = task.delivery.failures): Promise<TaskRecord> {
    const link = linkFor(task);
    const lastError = link ? `${reason}\nThe video: ${link.url}\n${link.note}` : reason;
    const closed: TaskRecord = {
      ...task,
      delivery: { ...task.delivery, state: 'closed', lastError, ...(failures === undefined ? {} : { failures }) },
    };
    return this.showAndSave(closed);
  }

  /**
   * Counts a failed try to fetch or post a finished task's video, in the store so a restart does not reset
   * it. Under `tries`, the task waits for the next try; at `tries`, it is closed and the card says what went
   * wrong, with a link to the video when there is one.
   */
  async recordFailure(task: TaskRecord, error: unknown, tries: number): Promise<TaskRecord> {
    const failures = (task.delivery.failures ?? 0) + 1;
    this.#deps.metrics?.videoDeliveryFailure('error');
    const reason = describeDeliveryFailure(error);
    if (failures < tries) {
      // Shown on the card while it waits: nobody should watch "posting…" for minutes without a word.
      return this.showAndSave({ ...task, delivery: { ...task.delivery, failures, lastError: reason } });
    }
    this.#deps.log.error('gave up delivering a finished video', { task: task.id, failures, error });
    return this.#close(task, `${reason} The bot tried ${failures} times and gave up.`, failures);
  }

  /**
   * Closes the card of a task the bot no longer has a readable record of, from what the tracker kept of it.
   * Nothing is saved (there is no record to save), and a card that cannot be edited is logged, not thrown.
   */
  async showLost(known: KnownCard, reason: LostTaskReason, now = Date.now()): Promise<void> {
    try {
      const address = { ...known.card, channelId: known.channelId, messageId: known.card.messageId };
      await this.#deps.outbox.editCard(address, renderLostCard(known, reason), now);
    } catch (error) {
      this.#deps.log.warn('could not tell on its card that a video task was lost', { task: known.taskId, error });
    }
  }

  /**
   * Shows the task on its card, then saves it (with when the card was drawn): one save, after the card.
   * Killed between the two, the task is still in its previous state and the next start repeats the step
   * (posting again with the same nonce makes no second message); saved first, a kill before the edit
   * would leave the card saying "running" for good.
   */
  async showAndSave(task: TaskRecord, now = Date.now()): Promise<TaskRecord> {
    const updated = await this.#updateCard(task, now);
    await this.#deps.repository.save(updated);
    return updated;
  }
}
