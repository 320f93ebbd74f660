import {
  DISCORD_ERRORS,
  isDiscordError,
  type CardEdit,
  type ComponentsV2Message,
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
import { videoActionId } from './actions.ts';
import { applyResult } from './apply-result.ts';
import type { DownloadFiles } from './download-files.ts';
import {
  describeChannelDeleted,
  describeDeliveryFailure,
  describeDmClosed,
  describeGaveUp,
  describeMissingPermission,
  describeNoLink,
  describeOverDiscordLimit,
  describeOverUploadLimit,
  describeRefusedVideo,
  type LostTaskReason,
} from './wording.ts';
import type { MemberCosts, MemberDayCost } from '../ports/guild-policy.ts';
import {
  askedInUrl,
  closedDelivery,
  deliveryPending,
  handoffDue,
  isTerminal,
  postingSince,
  withPingDue,
  type HandoffNote,
  type PostedDelivery,
  type ShownVideo,
  type TaskRecord,
  type UserInstallTask,
} from './record.ts';
import type { DirectMessageReach } from './dm-reach.ts';
import type { ReadyPings } from './ready-ping.ts';
import type { TaskRepository } from './repository.ts';
import { cardStateKey, closedWords, renderJobCard, renderLostCard, videoLink, type CardView, type KnownCard } from './status-card.ts';
import { KeyedLock } from '../lib/keyed-lock.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import { refuse, type Outcome } from '../wording/notice.ts';

/**
 * Discord answers a repeated nonce with the first message only for "a few minutes": a card first posted
 * again longer ago than this may have gone out without the bot recording it, so the channel is searched first.
 */
const NONCE_TRUSTED_MS = 2 * 60_000;

// Showing a finished video exactly once, in its status card. Delivery is a small state machine kept in
// the store:
//   waiting --(download, then write "posting")--> posting --(edit the card with the file)--> posted
// The edit lists the file it uploads as the card's only attachment, so repeating it shows one video: a
// crash after the edit but before "posted" is written leaves "posting", and the retry edits again.
// The video goes from the gateway to a temporary file and from there to Discord, a chunk at a time: a
// delivery holds a few hundred KB of it in memory whatever its size.

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
  /** Whether members' DMs were last found closed to the bot, for the handoff of their own install's card; default unknown (open). */
  dmReach?: DirectMessageReach;
  /** Tells a member their job ended, once per job; default none (nobody is told beyond the card). */
  pings?: ReadyPings;
}

export class VideoDelivery {
  readonly #deps: DeliveryDeps;
  /**
   * The tasks of a job share one card: its edits (each drawn from all the job's tasks as stored, and
   * listing the files to keep) and the saves that follow them go one at a time per job, so no edit
   * draws a sibling's tile, or drops its file, from before that sibling's last edit.
   */
  readonly #cardLock = new KeyedLock();

  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
  }

  /**
   * A task's status card as it stands: when the gateway reported what a finished task cost, with its
   * member's total on that day.
   */
  async card(task: TaskRecord, now = Date.now(), view?: CardView): Promise<ComponentsV2Message> {
    return this.#render(await this.#jobTasks(task), task, now, view);
  }

  async #render(tasks: readonly TaskRecord[], task: TaskRecord, now: number, view?: CardView): Promise<ComponentsV2Message> {
    const memberDay = await this.#memberDayCost(task);
    const { taskDeadlineMs } = this.#deps;
    const context = { now, ...(memberDay ? { memberDay } : {}), ...(taskDeadlineMs === undefined ? {} : { deadlineMs: taskDeadlineMs }) };
    return renderJobCard(tasks, context, view);
  }

  /** The tasks a task's card shows: its job's, as stored, with `task` as it is in hand; a sibling that cannot be read is left out. */
  async #jobTasks(task: TaskRecord): Promise<TaskRecord[]> {
    const job = task.job;
    if (!job) return [task];
    const tasks = await Promise.all(
      job.taskIds.map(async (id) => {
        if (id === task.id) return task;
        try {
          return await this.#deps.repository.get(id);
        } catch (error) {
          this.#deps.log.warn("could not read a variant of a job; its card is drawn without that variant's tile", { task: id, error });
          return undefined;
        }
      }),
    );
    return tasks.filter((sibling) => sibling !== undefined);
  }

  /** One card edit (and the save after it) at a time per job. */
  #oneAtATime<T>(task: TaskRecord, work: () => Promise<T>): Promise<T> {
    return this.#cardLock.run(task.job?.id ?? task.id, work);
  }

  /** The member's costs on the day a finished, costed task counts on; undefined when there is nothing to show or they cannot be read. */
  async #memberDayCost(task: TaskRecord): Promise<MemberDayCost | undefined> {
    const costs = this.#deps.costs;
    if (!costs || task.outcome.costUsdTicks === undefined || !isTerminal(task.state)) return undefined;
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
    if (handoffDue(task, now)) {
      const handedOff = await this.#handOff(task, task.userInstall, now);
      if (handedOff) return handedOff;
    }
    const key = cardStateKey(task);
    if (task.card.renderedState === key) return task;
    const running = task.state === 'running' || task.state === 'submitting' || task.state === 'waiting';
    if (running && task.card.renderedAt !== undefined && now - task.card.renderedAt < this.#deps.cardEditIntervalMs) return task;
    try {
      if (pastItsToken(task, now)) return await this.#updateCardInDm(task, task.userInstall, now);
      const tasks = await this.#jobTasks(task);
      const edited = await this.#editCard(task, { ...(await this.#render(tasks, task, now)), keep: keptFiles(tasks, task) }, now, tasks);
      // Discord ended the token before the bot's clock did: the same as past it.
      if (!edited && task.userInstall) return await this.#updateCardInDm(task, task.userInstall, now);
      if (!edited)
        this.#deps.log.warn('a status card is out of reach: its interaction token ended before its message id was known', {
          task: task.id,
        });
      const messageId = edited?.messageId ?? task.card.messageId;
      return { ...task, card: { ...task.card, renderedAt: now, renderedState: key, messageId } };
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
   * The last edit of a member's own install's job card, a minute before its token can no longer be used,
   * while something of the job is still to come (a video being made, or being fetched and shown): the card
   * says it will come to their DMs, or, when their DMs were last found closed, that `/video status` shows
   * it. The task is saved as handed off, and from then on what it still has to show goes to their DMs
   * (pastItsToken()). A variant whose sibling made the edit is marked without another; a job with nothing
   * left to come needs none (undefined: the card is edited as usual, showing how it ended). An edit that
   * fails leaves the task as it was, and the next step tries again while the token lives.
   */
  async #handOff(task: TaskRecord, place: UserInstallTask, now: number): Promise<TaskRecord | undefined> {
    const tasks = await this.#jobTasks(task);
    const drawn = { ...task.card, renderedAt: now, renderedState: cardStateKey(task) };
    const bySibling = tasks.find((sibling) => sibling.id !== task.id && sibling.userInstall?.handedOff !== undefined);
    const siblingNote = bySibling?.userInstall?.handedOff;
    if (siblingNote) return { ...task, card: drawn, userInstall: { ...place, handedOff: siblingNote } };
    const pending = tasks.filter(deliveryPending).length;
    if (pending === 0) return undefined;
    const note: HandoffNote = (await this.#dmsKnownClosed(task)) ? 'status' : 'dms';
    let messageId = task.card.messageId;
    try {
      const card = await this.#render(tasks, task, now, { audience: 'channel', handoff: { note, pending } });
      const edited = await this.#editCard(task, { ...card, keep: keptFiles(tasks, task) }, now, tasks);
      // Discord ended the token early: nothing can be said there any more, and the rest goes to their DMs all the same.
      if (!edited) this.#deps.log.warn("a member's own install: its card's token ended before the last edit", { task: task.id });
      // Their DM card links to it.
      messageId = edited?.messageId ?? messageId;
    } catch (error) {
      this.#deps.log.warn("a member's own install: could not make the last edit of its card; trying again at the next step", {
        task: task.id,
        error,
      });
      return task;
    }
    this.#deps.log.info("a member's own install: the card where they asked had its last edit; the rest goes to their DMs", {
      task: task.id,
      note,
      pending,
    });
    return { ...task, card: { ...drawn, messageId }, userInstall: { ...place, handedOff: note } };
  }

  /** Whether the bot last found the task's member's DMs closed; a store that cannot say counts as open (a DM is tried all the same). */
  async #dmsKnownClosed(task: TaskRecord): Promise<boolean> {
    try {
      return (await this.#deps.dmReach?.knownClosed(task.userId)) === true;
    } catch (error) {
      this.#deps.log.warn("could not read whether a member's DMs are closed; taking them as open", { task: task.id, error });
      return false;
    }
  }

  /** Remembers what a DM to the task's member met (their DMs closed or open); a store that fails is logged, not thrown. */
  async #noteDms(task: TaskRecord, reach: 'closed' | 'opened', now: number): Promise<void> {
    const dmReach = this.#deps.dmReach;
    if (!dmReach) return;
    try {
      if (reach === 'closed') await dmReach.closed(task.userId, now);
      else await dmReach.opened(task.userId);
    } catch (error) {
      this.#deps.log.warn("could not record whether a member's DMs are closed", { task: task.id, error });
    }
  }

  /**
   * A member's own install past its token: the job's card where they asked cannot be edited any more. The
   * task's own card in their DMs is edited once it is there; it goes there when the task ends without a
   * video to show (failed, timed out, held back, could not be shown), so they hear how it ended. A task
   * still running waits; a finished video goes there with its file (#showInCard).
   */
  async #updateCardInDm(task: TaskRecord, place: UserInstallTask, now: number): Promise<TaskRecord> {
    const drawn: TaskRecord = { ...task, card: { ...task.card, renderedAt: now, renderedState: cardStateKey(task) } };
    const toldHowItEnded = isTerminal(task.state) && task.delivery.state === 'closed';
    if (place.dmMessageId === undefined && !toldHowItEnded) return drawn;
    const shown = await this.#showInDm(task, place, undefined, now);
    return { ...drawn, userInstall: { ...place, dmChannelId: shown.channelId, dmMessageId: shown.messageId } };
  }

  /**
   * The task's own card in its member's DMs, with `file` when it shows the video: their DM channel opened
   * (Discord answers the same channel each time), then the card edited when it is there, else posted once:
   * with the task's nonce (enforced), and past the few minutes Discord keeps one, after a look among the
   * channel's last messages for a post an earlier try made.
   */
  async #showInDm(
    task: TaskRecord,
    place: UserInstallTask,
    file: FileToPost | undefined,
    now: number,
  ): Promise<PostedMessage & { channelId: string }> {
    const { outbox } = this.#deps;
    const channelId = place.dmChannelId ?? (await outbox.openDm(task.userId));
    const card: CardEdit = {
      // Their DMs are theirs: the renderer draws it in their language, where the card they asked from is in the server's.
      ...(await this.#render([task], task, now, { audience: 'channel', askedIn: askedInUrl({ ...task, userInstall: place }) })),
      ...(file ? { file } : {}),
    };
    if (place.dmMessageId !== undefined) {
      const address = { ...task.card, tokenExpiresAt: 0, channelId, messageId: place.dmMessageId };
      const edited = await outbox.editCard(address, card, now);
      if (edited) return { ...edited, channelId };
    }
    const earlier = await this.#postedPastNonce(task, now, channelId);
    if (earlier) return { ...earlier, channelId };
    this.#deps.log.info("a member's own install: showing the task in their DMs, its interaction token has ended", { task: task.id });
    let posted: PostedMessage;
    try {
      posted = await outbox.postCard(channelId, card, task.id);
    } catch (error) {
      if (isDiscordError(error, DISCORD_ERRORS.cannotMessageUser, DISCORD_ERRORS.noMutualGuilds)) await this.#noteDms(task, 'closed', now);
      throw error;
    }
    await this.#noteDms(task, 'opened', now);
    return { ...posted, channelId };
  }

  /**
   * Edits the task's card. A variant that does not know the card's message id yet takes it from a
   * sibling (the first edit through the shared interaction token tells it to whichever task made it).
   */
  #editCard(task: TaskRecord, edit: CardEdit, now: number, tasks: readonly TaskRecord[] = [task]): Promise<PostedMessage | undefined> {
    // A member's own install: where they asked, the bot reaches the card only through the token.
    const messageId = task.userInstall
      ? undefined
      : (task.card.messageId ?? tasks.find((sibling) => sibling.card.messageId !== undefined)?.card.messageId);
    const address = { ...task.card, channelId: task.channelId, messageId };
    return this.#deps.outbox.editCard(address, edit, now);
  }

  /**
   * Shows a succeeded task's video (or a link to it) in its status card. `result` is the answer that showed
   * the task done, when the caller has it; otherwise the task is queried again.
   */
  async deliver(task: TaskRecord, gateway: GatewayClient, result?: TaskResult): Promise<TaskRecord> {
    let current = task;
    if (current.delivery.state === 'posted' || current.delivery.state === 'closed')
      return this.#oneAtATime(current, () => this.#ping(current));

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
          linkReason = describeOverUploadLimit(current, error.size);
        } else if (isRefusedVideo(error)) {
          // Trying again would be refused the same way; the address is not shared as a link either.
          this.#deps.log.warn('refused a finished video', { task: current.id, error });
          const { videoUrl: _refused, ...outcome } = current.outcome;
          return await this.#close({ ...current, outcome }, describeRefusedVideo(current, error));
        } else if (error instanceof VideoUnavailableError || error instanceof NotFoundError) {
          // The temporary video is gone: nothing can be posted any more.
          current = { ...current, state: 'expired', delivery: closedDelivery(current.delivery, error.message) };
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
   * The card an earlier try posted, looked for only once the task's first try is older than Discord keeps
   * its nonce (before that, posting again with the nonce answers with that card).
   */
  async #postedPastNonce(task: TaskRecord, now: number, channelId = task.channelId): Promise<PostedMessage | undefined> {
    const since = postingSince(task.delivery) ?? now;
    return now - since >= NONCE_TRUSTED_MS ? this.#postedInChannel(task, channelId) : undefined;
  }

  /**
   * A message of the bot's in the task's channel that shows its video (found by its nonce, or by its
   * Extend button). Only the last 50 messages are searched; without Read Message History nothing can be
   * searched, and the video is shown again (twice then, at worst, and never lost).
   */
  async #postedInChannel(task: TaskRecord, channelId = task.channelId): Promise<PostedMessage | undefined> {
    let messages: OwnMessage[];
    try {
      messages = await this.#deps.outbox.recentOwnMessages(channelId);
    } catch (error) {
      // A deleted channel: the edit that follows is refused the same way, and closes the task.
      if (isDiscordError(error, DISCORD_ERRORS.unknownChannel)) return undefined;
      if (!isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) throw error;
      this.#deps.log.warn('cannot search the channel for an earlier post of a video; showing it in its card', {
        task: task.id,
        channel: task.channelId,
        error,
      });
      return undefined;
    }
    // Discord may leave the nonce out of listed messages; the result buttons carry the task id too.
    const extendButton = videoActionId('extend', task.id);
    return messages.find((message) => message.nonce === task.id || message.customIds.includes(extendButton));
  }

  /** Edits the video (the file, or else a link to it) into the task's card, and records it shown. */
  async #post(task: TaskRecord, file: FileToPost | undefined, linkReason: string | undefined): Promise<TaskRecord> {
    const { repository, log } = this.#deps;
    // What the card says is worded in its language when it is stored: every later edit shows it as it is.
    const link = file ? undefined : videoLink(task);
    if (!file && !link) return this.#close(task, describeNoLink(task, linkReason));

    const { attempts, failures, lastError } = task.delivery;
    const tries = {
      attempts: attempts + 1,
      ...(failures === undefined ? {} : { failures }),
      ...(lastError === undefined ? {} : { lastError }),
    };
    const since = postingSince(task.delivery) ?? Date.now();
    const current: TaskRecord = { ...task, delivery: { state: 'posting', ...tries, postingSince: since } };
    await repository.save(current);

    // The card as it is once the video is in it: drawn now, and sent with the file it names. Shown in the
    // card, until Discord's answer says which message shows it.
    const now = Date.now();
    const video: ShownVideo = file ? { as: 'file', fileName: file.name } : { as: 'link', ...(linkReason ? { reason: linkReason } : {}) };
    const showing: PostedDelivery = { state: 'posted', ...tries, postingSince: since, messageId: task.card.messageId ?? '', video };
    const shown: TaskRecord = { ...current, delivery: showing };
    const edited = await this.#oneAtATime(
      shown,
      async (): Promise<{ ok: { posted: TaskRecord; messageId: string } } | { error: unknown }> => {
        let shownIn: { message: PostedMessage; reposted: boolean; dmChannelId?: string };
        try {
          const tasks = await this.#jobTasks(shown);
          const edit = { ...(await this.#render(tasks, shown, now)), keep: keptFiles(tasks, shown), ...(file ? { file } : {}) };
          shownIn = await this.#showInCard(shown, edit, now, tasks);
        } catch (error) {
          return { error };
        }
        const { message, reposted, dmChannelId } = shownIn;
        const delivered: PostedDelivery = {
          ...showing,
          messageId: message.messageId,
          ...(file && message.attachmentUrl ? { attachmentUrl: message.attachmentUrl } : {}),
          ...(file && message.attachmentId ? { attachmentId: message.attachmentId } : {}),
        };
        // Shown in the member's DMs: the task's own card there; the job's card where they asked stays as it was.
        const posted: TaskRecord = dmChannelId
          ? {
              ...shown,
              delivery: delivered,
              userInstall: { ...shown.userInstall, dmChannelId, dmMessageId: message.messageId },
              card: { ...shown.card, renderedAt: now, renderedState: cardStateKey(shown) },
            }
          : {
              ...shown,
              delivery: delivered,
              card: {
                ...shown.card,
                messageId: message.messageId,
                renderedAt: now,
                renderedState: cardStateKey(shown),
                // A card posted again is a channel message: the interaction's token would edit the one that is gone.
                ...(reposted ? { tokenExpiresAt: 0 } : {}),
              },
            };
        // The card shows it already: saved without another edit (one without the file would take the video off).
        const saved = withPingDue(posted);
        await repository.save(saved);
        return { ok: { posted: await this.#ping(saved), messageId: message.messageId } };
      },
    );
    if ('ok' in edited) {
      const { posted, messageId } = edited.ok;
      // Logged once recorded: from here on the task is known as posted (edits and extensions use its attachment).
      if (task.finishedAt !== undefined) this.#deps.metrics?.videoPosted(Math.max(0, Date.now() - task.finishedAt) / 1000);
      log.info('video posted', { task: task.id, guild: task.guildId, message: messageId, link: link !== undefined });
      return posted;
    }
    const error = edited.error;
    // Each refusal below changed nothing, so editing again is safe.
    if (file && isDiscordError(error, DISCORD_ERRORS.requestEntityTooLarge)) {
      // The limit Discord enforced is lower than the one it announced: fall back to a link.
      return this.#post(current, undefined, describeOverDiscordLimit(current));
    }
    if (file && isDiscordError(error, DISCORD_ERRORS.missingPermissions)) {
      // Most likely Attach Files is missing; if more is missing, the edit with the link says so.
      this.#deps.metrics?.videoDeliveryFailure('posted_as_link');
      log.warn('Discord refused the video file (no Attach Files?); showing a link instead', { task: task.id, channel: task.channelId });
      return this.#post(current, undefined, describeMissingPermission(current, 'Attach Files'));
    }
    if (task.userInstall && isDiscordError(error, DISCORD_ERRORS.cannotMessageUser, DISCORD_ERRORS.noMutualGuilds)) {
      // Trying again cannot open the member's DMs; /video status still shows the task and its link.
      this.#deps.metrics?.videoDeliveryFailure('missing_permission');
      log.warn("a member's DMs are closed to the bot; closing their task", { task: task.id });
      // Read only by them (`/video status`): the card where they asked can no longer show it.
      return this.#close(current, describeDmClosed(current), current.delivery.failures, true);
    }
    if (isDiscordError(error, DISCORD_ERRORS.unknownChannel)) {
      // Trying again cannot bring the channel back; /video status elsewhere still shows the task and its link.
      this.#deps.metrics?.videoDeliveryFailure('channel_deleted');
      log.warn('the channel of a finished video was deleted; closing the task', { task: task.id, channel: task.channelId });
      return this.#close(current, describeChannelDeleted(current));
    }
    if (!isDiscordError(error, DISCORD_ERRORS.missingAccess, DISCORD_ERRORS.missingPermissions)) throw error;
    const missing = isDiscordError(error, DISCORD_ERRORS.missingAccess) ? 'View Channel' : 'Send Messages';
    this.#deps.metrics?.videoDeliveryFailure('missing_permission');
    log.warn('Discord refused to show a video in its card', { task: task.id, channel: task.channelId, missing });
    return this.#close(current, describeMissingPermission(current, missing));
  }

  /**
   * Edits the card with its video; when the card is gone (deleted) or out of reach (its interaction token
   * expired before its message id was known), posts it again with the video, guarded by the task's nonce
   * (and, past the few minutes Discord keeps nonces, by a look for the card an earlier try posted).
   */
  async #showInCard(
    task: TaskRecord,
    edit: CardEdit,
    now: number,
    tasks: readonly TaskRecord[],
  ): Promise<{ message: PostedMessage; reposted: boolean; dmChannelId?: string }> {
    const place = task.userInstall;
    if (!place || !pastItsToken(task, now)) {
      try {
        const edited = await this.#editCard(task, edit, now, tasks);
        if (edited) return { message: edited, reposted: false };
      } catch (error) {
        if (!isDiscordError(error, DISCORD_ERRORS.unknownMessage)) throw error;
      }
    }
    if (place) {
      // A member's own install whose card cannot be reached where they asked: the video goes to their DMs.
      const { channelId, ...message } = await this.#showInDm(task, place, edit.file, now);
      return { message, reposted: false, dmChannelId: channelId };
    }
    this.#deps.log.warn("a finished video's card is gone or out of reach; posting the card again with the video", {
      task: task.id,
      channel: task.channelId,
    });
    const earlier = await this.#postedPastNonce(task, now);
    if (earlier) return { message: earlier, reposted: true };
    return { message: await this.#deps.outbox.postCard(task.channelId, edit, task.id), reposted: true };
  }

  /**
   * Closes a task that will not be posted; the card shows `reason` and a link to the video when there is
   * one (worded for its member alone when only they read it, `forMember`).
   */
  async #close(task: TaskRecord, reason: string, failures = task.delivery.failures, forMember = false): Promise<TaskRecord> {
    return this.showAndSave({ ...task, delivery: closedDelivery(task.delivery, closedWords(task, reason, forMember), failures) });
  }

  /**
   * Counts a failed try to fetch or post a finished task's video, in the store so a restart does not reset
   * it. Under `tries`, the task waits for the next try; at `tries`, it is closed and the card says what went
   * wrong, with a link to the video when there is one.
   */
  async recordFailure(task: TaskRecord, error: unknown, tries: number): Promise<TaskRecord> {
    const failures = (task.delivery.failures ?? 0) + 1;
    this.#deps.metrics?.videoDeliveryFailure('error');
    const reason = describeDeliveryFailure(task, error);
    if (failures < tries) {
      // Shown on the card while it waits: nobody should watch "posting…" for minutes without a word.
      return this.showAndSave({ ...task, delivery: { ...task.delivery, failures, lastError: reason } });
    }
    this.#deps.log.error('gave up delivering a finished video', { task: task.id, failures, error });
    return this.#close(task, describeGaveUp(task, reason, failures), failures);
  }

  /**
   * Closes the card of a task the bot no longer has a readable record of, from what the tracker kept of it.
   * Nothing is saved (there is no record to save), and a card that cannot be edited is logged, not thrown.
   */
  async showLost(known: KnownCard, reason: LostTaskReason, now = Date.now()): Promise<void> {
    try {
      const address = { ...known.card, channelId: known.channelId, messageId: known.card.messageId };
      const card = renderLostCard(known, reason);
      await this.#deps.outbox.editCard(address, card, now);
    } catch (error) {
      this.#deps.log.warn('could not tell on its card that a video task was lost', { task: known.taskId, error });
    }
  }

  /**
   * Shows the task on its card, then saves it (with when the card was drawn): one save, after the card.
   * Killed between the two, the task is still in its previous state and the next start repeats the step
   * (editing the video into the card again shows it once); saved first, a kill before the edit
   * would leave the card saying "running" for good.
   */
  /**
   * Shows a task that waits in its key's line, at `place`, and saves that only while it still waits: the
   * sender takes a task out of `waiting` in one step of the store, which a card drawn from an older read
   * must not undo (only the card's message id, once learned, is kept either way). Undefined: no such task.
   */
  async showWaiting(id: string, place: number | undefined, now = Date.now()): Promise<TaskRecord | undefined> {
    const { repository } = this.#deps;
    const read = await repository.get(id);
    if (read?.state !== 'waiting') return read;
    return this.#oneAtATime(read, async () => {
      const current = await repository.get(id);
      if (current?.state !== 'waiting') return current;
      const drawn = await this.#updateCard(place === undefined ? current : { ...current, place }, now);
      const kept = await repository.change(id, (stored) =>
        stored.state === 'waiting'
          ? { ...stored, ...(drawn.place === undefined ? {} : { place: drawn.place }), card: drawn.card }
          : stored.card.messageId === undefined && drawn.card.messageId !== undefined
            ? { ...stored, card: { ...stored.card, messageId: drawn.card.messageId } }
            : undefined,
      );
      return kept ?? drawn;
    });
  }

  async showAndSave(task: TaskRecord, now = Date.now()): Promise<TaskRecord> {
    return this.#oneAtATime(task, async () => {
      const updated = withPingDue(await this.#updateCard(task, now));
      await this.#deps.repository.save(updated);
      return this.#ping(updated);
    });
  }

  /**
   * A task whose member is owed the ping of its job (`ping: 'due'`, saved with its outcome): the ping sent
   * when its job has ended (ready-ping.ts), and the task saved as done. Called within the job's card lock,
   * so the variants of a job ending in this process look at one another one at a time; a store that fails
   * leaves it due, for the task's next step.
   */
  async #ping(task: TaskRecord): Promise<TaskRecord> {
    if (task.ping !== 'due') return task;
    const { pings, repository, log } = this.#deps;
    try {
      if (pings) await pings.announce(task, await this.#jobTasksAsStored(task));
      const done: TaskRecord = { ...task, ping: 'done' };
      await repository.save(done);
      return done;
    } catch (error) {
      log.warn("could not tell a member their video job ended; the task's next step tries again", { task: task.id, error });
      return task;
    }
  }

  /**
   * Deletes a finished job's card (its Delete button, after its private confirm), then has every task of
   * the job forget it (forgetCard): one step at a time with the job's edits, from the tasks as stored.
   * Refused while any of them still runs or has a video to show (the card would be posted again), and
   * when the card was deleted already. A card Discord no longer has (deleted from Discord's own menu)
   * is forgotten all the same.
   */
  async deleteCard(task: TaskRecord, byUserId: string, now = Date.now()): Promise<Outcome> {
    const { repository, outbox, log } = this.#deps;
    return this.#oneAtATime(task, async () => {
      const tasks = await this.#jobTasksAsStored((await repository.get(task.id)) ?? task);
      if (tasks.some((sibling) => sibling.cardDeleted !== undefined)) return refuse('video.delete.gone');
      if (tasks.some(deliveryPending)) return refuse('video.delete.not-finished');
      // The job's first task holds the card's interaction token; any of them may have learned its message id.
      const owner = tasks.find((sibling) => sibling.id === (task.job?.id ?? task.id)) ?? task;
      const messageId = owner.card.messageId ?? tasks.find((sibling) => sibling.card.messageId !== undefined)?.card.messageId;
      let deleted: Awaited<ReturnType<DiscordOutbox['deleteCard']>>;
      try {
        deleted = await outbox.deleteCard({ ...owner.card, channelId: owner.channelId, messageId }, undefined, now);
      } catch (error) {
        log.warn('could not delete a status card; it stays as it was', { task: owner.id, error });
        return refuse('video.delete.failed');
      }
      if (deleted === 'unreachable') {
        log.warn('could not delete a status card: its message id is unknown and its token has ended', { task: owner.id });
        return refuse('video.delete.failed');
      }
      await Promise.all(tasks.map((sibling) => repository.change(sibling.id, (current) => forgetCard(current, byUserId, now))));
      log.info('a status card was deleted', { task: owner.id, guild: owner.guildId, by: byUserId, found: deleted === 'deleted' });
      return { ok: true };
    });
  }

  /** Every task of `task`'s job, as stored (`task` as in hand); a sibling the store no longer has counts as ended, one it cannot read throws. */
  async #jobTasksAsStored(task: TaskRecord): Promise<TaskRecord[]> {
    const ids = task.job?.taskIds ?? [task.id];
    const tasks = await Promise.all(ids.map((id) => (id === task.id ? Promise.resolve(task) : this.#deps.repository.get(id))));
    return tasks.filter((sibling) => sibling !== undefined);
  }
}

/**
 * A task whose job's card was deleted by `by`: the card's message id and token are dropped, and a posted
 * video's delivery closes (its message went with the card), so nothing edits, links or fetches from the
 * deleted message; the card as drawn is marked current, so no step tries to edit it again.
 */
export function forgetCard(task: TaskRecord, by: string, at: number): TaskRecord {
  const { messageId: _deleted, ...card } = task.card;
  const { delivery } = task;
  const forgotten: TaskRecord = {
    ...task,
    card: { ...card, interactionToken: '', tokenExpiresAt: 0 },
    delivery:
      delivery.state === 'posted'
        ? {
            state: 'closed',
            attempts: delivery.attempts,
            postingSince: delivery.postingSince,
            ...(delivery.failures === undefined ? {} : { failures: delivery.failures }),
          }
        : delivery,
    cardDeleted: { by, at },
  };
  return { ...forgotten, card: { ...forgotten.card, renderedState: cardStateKey(forgotten) } };
}

/**
 * A task of a member's own install whose job's card the bot no longer edits where they asked (its
 * interaction token has ended, or the card had its last edit: handed off), or whose own card is in their
 * DMs already: what it shows goes there.
 */
function pastItsToken(task: TaskRecord, now: number): task is TaskRecord & { userInstall: UserInstallTask } {
  const place = task.userInstall;
  return place !== undefined && (place.dmMessageId !== undefined || place.handedOff !== undefined || now >= task.card.tokenExpiresAt);
}

/**
 * The ids of the files a job's card shows that an edit must keep: an edit keeps only the attachments it
 * lists, and each variant's video was uploaded by the edit that showed it.
 */
function keptFiles(tasks: readonly TaskRecord[], editing: TaskRecord): { id: string; filename: string }[] {
  return tasks.flatMap((task) => {
    const current = task.id === editing.id ? editing : task;
    const delivery = current.delivery;
    // A video shown in a member's DMs is a file of the card there, not of the job's card.
    const elsewhere = current.userInstall?.dmMessageId !== undefined;
    return delivery.state === 'posted' && delivery.video.as === 'file' && !elsewhere && delivery.attachmentId !== undefined
      ? [{ id: delivery.attachmentId, filename: delivery.video.fileName }]
      : [];
  });
}
