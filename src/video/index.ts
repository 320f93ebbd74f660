import type { ComponentsV2Message, DiscordOutbox } from '../discord/outbox.ts';
import type { GatewayClientPool } from '../gateway/pool.ts';
import type { Logger } from '../lib/log.ts';
import { NO_METRICS, type BotMetrics } from '../lib/metrics.ts';
import type { GuildVideoPolicy, MemberCosts } from '../ports/guild-policy.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import type { ModerationLogPort } from '../ports/moderation-log.ts';
import type { Store } from '../store/index.ts';
import { refuse, type Outcome } from '../wording/notice.ts';
import { VideoConfirmations } from './confirmations.ts';
import { VideoDelivery } from './delivery.ts';
import { DirectMessageReach } from './dm-reach.ts';
import { DownloadFiles } from './download-files.ts';
import { EndUserIds } from './end-users.ts';
import { PolicyGatewayResolver } from './gateway-resolver.ts';
import type { Prepared, SubmissionPlan } from './plan.ts';
import { DEFAULT_POLL_POLICY, type PollPolicy } from './poll-policy.ts';
import { SourceForms } from './message-sources.ts';
import { FirstFrames } from './first-frame.ts';
import { VideoPreparation } from './prepare.ts';
import { ReadyPings } from './ready-ping.ts';
import { costOf, type TaskRecord } from './record.ts';
import { TaskRepository } from './repository.ts';
import type { CardView } from './status-card.ts';
import { KeyQueue } from './key-queue.ts';
import { logModeration } from './moderation-report.ts';
import { QueueSender } from './queue-sender.ts';
import { VideoSubmission } from './submit.ts';
import { TaskTracker } from './tracker.ts';
import { Variation } from './vary.ts';

// The video part, built in one place from what it depends on: src/app.ts, the benchmarks and the tests
// all take it from here.

/** Polls in flight at once: enough to follow thousands of tasks, few enough to be gentle on the gateway. */
const MAX_POLLS_IN_FLIGHT = 16;
/** A running task's card is edited at most this often (each edit is a Discord request). */
const CARD_EDIT_INTERVAL_MS = 4_000;

export interface VideoDeps {
  store: Store;
  clients: GatewayClientPool;
  policy: GuildVideoPolicy;
  /** Members' costs of the day, for the status cards; default none (a card shows a task's cost alone). */
  costs?: MemberCosts;
  outbox: DiscordOutbox;
  vendor: string;
  log: Logger;
  /** What the part counts for the operator; default nothing. */
  metrics?: BotMetrics;
  /** When and how often tasks are polled; default the production policy. */
  pollPolicy?: PollPolicy;
  maxPollsInFlight?: number;
  cardEditIntervalMs?: number;
  /** Where downloaded videos wait for their post; default a directory under the OS temporary directory. */
  downloadDirectory?: string;
  /** With sharding: the guilds whose tasks this process follows; default all. */
  ownsGuild?: (guildId: string) => boolean;
  /** Each server's moderation log, told of every job and of each task the provider's moderation ended; default none. */
  moderationLog?: Pick<ModerationLogPort, 'job'> & Partial<Pick<ModerationLogPort, 'moderated'>>;
}

export interface Video {
  /** Checks a request completely, before anything is sent. */
  prepare: VideoPreparation;
  /**
   * Vary: a task's request again, with its video's first frame as the image when the gateway takes one
   * (see Variation.prepare). Fetches and decodes the video: the interaction must be deferred if slow.
   */
  vary(context: InteractionContext, taskRef: string): Promise<Prepared>;
  /** Stores, sends and starts following a prepared request (see VideoSubmission.submit). */
  submit(plan: SubmissionPlan, context: InteractionContext): Promise<TaskRecord>;
  tasks: TaskRepository;
  tracker: TaskTracker;
  /** Every video job's key line: sends the jobs as their key takes them. */
  sender: QueueSender;
  /**
   * Takes a job out of its key's line before it is sent, for its member or a member who manages the server
   * (`mayManage`); refused, with why, for anyone else or a job no longer waiting.
   */
  cancelWaiting(context: Pick<InteractionContext, 'guildId' | 'userId'>, taskRef: string, mayManage: boolean): Promise<Outcome>;
  /**
   * Whether a member may delete the card of a task's job: its member, or one who may manage the channel's
   * messages (`mayManage`); refused, with whose card it is, for anyone else, or when it is gone already.
   */
  mayDeleteCard(context: Pick<InteractionContext, 'guildId' | 'userId'>, taskRef: string, mayManage: boolean): Promise<Outcome>;
  /**
   * Deletes the card of a finished job, for whoever mayDeleteCard() lets; every task of the job is kept,
   * but forgets the card (VideoDelivery.deleteCard).
   */
  deleteCard(context: Pick<InteractionContext, 'guildId' | 'userId'>, taskRef: string, mayManage: boolean): Promise<Outcome>;
  /**
   * A task's status card as it stands, for its member privately (`/video status`): with its cost and its
   * member's total that day when reported, and a link to the message that shows the video; drawn as `view`
   * says (the edge gives its member's language).
   */
  privateCard(task: TaskRecord, view: Omit<CardView, 'audience'>): Promise<ComponentsV2Message>;
  /** What members picked with a message command, while they fill in its form. */
  sourceForms: SourceForms;
  /** Videos estimated over the server's threshold, waiting for their member's confirm button. */
  confirmations: VideoConfirmations;
}

export function createVideo(deps: VideoDeps): Video {
  const { store, clients, policy, outbox, vendor, log, ownsGuild } = deps;
  const metrics = deps.metrics ?? NO_METRICS;
  const tasks = new TaskRepository(store, log);
  const files = new DownloadFiles(log, deps.downloadDirectory);
  // Leftovers of a bot killed mid-download are swept now, rather than at the first delivery.
  files
    .ready()
    .catch((error: unknown) =>
      log.warn('could not prepare the directory for downloaded videos; the first delivery tries again', { error }),
    );
  const pollPolicy = deps.pollPolicy ?? DEFAULT_POLL_POLICY;
  const delivery = new VideoDelivery({
    repository: tasks,
    outbox,
    files,
    log,
    cardEditIntervalMs: deps.cardEditIntervalMs ?? CARD_EDIT_INTERVAL_MS,
    metrics,
    taskDeadlineMs: pollPolicy.deadlineMs,
    dmReach: new DirectMessageReach(store),
    pings: new ReadyPings({ store, outbox, defaults: (guildId) => policy.defaults(guildId), log }),
    ...(deps.costs ? { costs: deps.costs } : {}),
  });
  const resolver = new PolicyGatewayResolver(policy, clients, log);
  const tracker = new TaskTracker(tasks, resolver, delivery, log, {
    policy: pollPolicy,
    maxInFlight: deps.maxPollsInFlight ?? MAX_POLLS_IN_FLIGHT,
    metrics,
  });
  // Awaited before the finished task is saved: a cost is recorded even when the bot dies right after.
  tracker.onFinished((task) => policy.recordCost(costOf(task)));
  tracker.onFinished((task) => metrics.videoTaskFinished(task.state, task.layer));
  tracker.onFinished((task) => logModeration(task, deps.moderationLog));
  const sender = new QueueSender({
    queue: new KeyQueue(store),
    repository: tasks,
    gateways: resolver,
    delivery,
    tracker,
    policy,
    log,
    metrics,
    statedLimit: (guildId) => policy.keyConcurrency?.(guildId) ?? Promise.resolve(undefined),
    ...(ownsGuild ? { ownsGuild } : {}),
  });
  // A task that was sent and ended frees its slot in its key's line.
  tracker.onFinished((task) => (task.gatewayId === undefined && task.state !== 'unknown' ? undefined : sender.finished(task)));
  tracker.followWaiting((task) => sender.lookAtWaiting(task));
  const prepare = new VideoPreparation({ policy, repository: tasks, endUsers: new EndUserIds(store), vendor });
  const submission = new VideoSubmission({
    repository: tasks,
    sender,
    delivery,
    policy,
    vendor,
    log,
    metrics,
    attachmentUrl: (channelId, messageId, fileName) => outbox.attachmentUrl(channelId, messageId, fileName),
    ...(deps.moderationLog ? { moderationLog: deps.moderationLog } : {}),
  });
  const variation = new Variation({ prepare, repository: tasks, resolver, files, frames: new FirstFrames(), vendor, log });
  return {
    prepare,
    vary: (context, taskRef) => variation.prepare(context, taskRef),
    submit: (plan, context) => submission.submit(plan, context),
    tasks,
    tracker,
    sender,
    cancelWaiting: async (context, taskRef, mayManage) => {
      const task = await tasks.findInGuild(context.guildId, taskRef);
      if (!task) return refuse('video.refusal.no-task', { ref: taskRef });
      if (task.userId !== context.userId && !mayManage) return refuse('video.unqueue.not-yours', { owner: `<@${task.userId}>` });
      if (task.state !== 'waiting' || !(await sender.cancel(task, context.userId))) return refuse('video.unqueue.too-late');
      return { ok: true };
    },
    mayDeleteCard: async (context, taskRef, mayManage) => {
      const deletable = await deletableCard(tasks, context, taskRef, mayManage);
      return deletable.ok ? { ok: true } : deletable;
    },
    deleteCard: async (context, taskRef, mayManage) => {
      const deletable = await deletableCard(tasks, context, taskRef, mayManage);
      return deletable.ok ? delivery.deleteCard(deletable.task, context.userId) : deletable;
    },
    privateCard: (task, view) => delivery.card(task, Date.now(), { ...view, audience: 'private' }),
    sourceForms: new SourceForms(store),
    confirmations: new VideoConfirmations({ store, policy, outbox, vendor, log }),
  };
}

/**
 * The task whose job's card a member may delete (its member, or `mayManage`), or why not. A member's own
 * install's card carries no buttons, and its tasks are not found in a server's list.
 */
async function deletableCard(
  tasks: TaskRepository,
  context: Pick<InteractionContext, 'guildId' | 'userId'>,
  taskRef: string,
  mayManage: boolean,
): Promise<Outcome<{ task: TaskRecord }>> {
  const task = await tasks.findInGuild(context.guildId, taskRef);
  if (!task || task.userInstall) return refuse('video.refusal.no-task', { ref: taskRef });
  if (task.userId !== context.userId && !mayManage) return refuse('video.delete.not-yours', { owner: `<@${task.userId}>` });
  if (task.cardDeleted) return refuse('video.delete.gone');
  return { ok: true, task };
}
