import type { TaskResult } from '../gateway/types.ts';
import type { Logger } from '../lib/log.ts';
import { NO_METRICS, type BotMetrics } from '../lib/metrics.ts';
import { StoreUnavailableError, StoredRecordError } from '../store/index.ts';
import { NotFoundError } from '../gateway/errors.ts';
import { applyResult } from './apply-result.ts';
import type { VideoDelivery } from './delivery.ts';
import type { GatewayResolver } from './gateway-resolver.ts';
import { errorBackoffDelay, nextPollDelay, type PollPolicy } from './poll-policy.ts';
import { TASK_NOT_FOUND, deliveryPending, handoffAt, handoffDue, isTerminal, needsWork, type TaskRecord } from './record.ts';
import type { TaskRepository } from './repository.ts';
import { Schedule } from './schedule.ts';
import { knownCard, type KnownCard } from './status-card.ts';
import type { LostTaskReason } from './wording.ts';
import { CLAIM_LEASE_MS } from './key-queue-record.ts';

// The background poller: follows every stored task to a terminal status, has its video posted, and
// resumes all of that after a restart. Memory per task is one schedule entry; the record itself is read
// from the store when its turn comes. Polls in flight are bounded, errors back off, and a task the
// gateway never finishes is given up after the policy's deadline. Downloads and posts have their own
// small queue, so a burst of finished videos never holds up polls, and polls never hold up posts.
// A task whose record disappears from the store (a Redis restarted without persistence) or stops
// parsing is not dropped in silence: it is logged, counted, and its card says so when the tracker still
// knows where the card is. A task of a member's own install is also looked at when its job's card is to
// be handed off, shortly before the interaction's token ends (record.ts, `handoffAt()`): its steps are
// never scheduled past that moment, which the stored token time gives after a restart too.

export interface TrackerOptions {
  policy: PollPolicy;
  /** Polls in flight at once. */
  maxInFlight: number;
  /** Deliveries (download, then post) in flight at once; Discord paces posts anyway. */
  maxDeliveriesInFlight?: number;
  /** Counts polls and lost tasks; default none. */
  metrics?: Pick<BotMetrics, 'videoPoll' | 'videoTaskLost'>;
  now?: () => number;
  random?: () => number;
}

const DEFAULT_MAX_DELIVERIES_IN_FLIGHT = 8;
/**
 * Cards the tracker remembers at most (a few hundred bytes each): twice the 10,000 tasks the benchmark
 * follows. Past it the oldest are forgotten; such a task, if its record is lost, is still logged and counted.
 */
const MAX_KNOWN_CARDS = 20_000;

/**
 * Told once a task reaches its end, and awaited before that is saved: what a listener records (a cost)
 * survives a crash, because a task killed before its save is finished again after the restart. So a
 * listener must be idempotent per task.
 */
export type FinishedListener = (task: TaskRecord) => Promise<void> | void;

/**
 * Looks at a task that waits in its key's line (queue-sender.ts): puts it back in line should the line have
 * lost it, has the line drained, and shows its place. Returns the task as it then stands.
 */
export type WaitingStep = (task: TaskRecord) => Promise<TaskRecord>;

/**
 * A task waiting in its key's line is looked at this often: its card's place kept current (card edits are
 * batched further by the delivery's edit interval), and the line drained should a wake-up have been lost.
 */
const WAITING_LOOK_MS = 5_000;

export class TaskTracker {
  readonly #repository: TaskRepository;
  readonly #gateways: GatewayResolver;
  readonly #delivery: VideoDelivery;
  readonly #log: Logger;
  readonly #options: Required<TrackerOptions>;
  readonly #schedule = new Schedule();
  readonly #polls = new Set<Promise<void>>();
  /**
   * Finished tasks waiting to be posted, in order. A task the poller just found done comes with its record
   * (as saved) and the answer that showed it done, so the delivery reads neither again.
   */
  readonly #deliveryQueue = new Map<string, { task: TaskRecord; result: TaskResult } | undefined>();
  readonly #deliveries = new Set<Promise<void>>();
  readonly #finishedListeners: FinishedListener[] = [];
  #waitingStep: WaitingStep | undefined;
  /** Tasks whose last step failed in the store itself, and how many times in a row: the backoff grows. */
  readonly #storeFailures = new Map<string, number>();
  /**
   * Where the card of each followed task is, from its last record the tracker saw: the record alone says
   * that, and a record that is gone or unreadable would leave its card saying "Generating…" for good.
   */
  readonly #cards = new Map<string, KnownCard>();
  /** Steps in flight per task (a poll and a delivery can overlap): a card is forgotten once its task has none and is not queued. */
  readonly #busy = new Map<string, number>();
  /** Tasks created since then belong to this process: one still "submitting" is being sent right now. */
  readonly #startedAt: number;
  #timer: NodeJS.Timeout | undefined;
  #timerDueAt = Infinity;
  #stopped = false;

  constructor(repository: TaskRepository, gateways: GatewayResolver, delivery: VideoDelivery, log: Logger, options: TrackerOptions) {
    this.#repository = repository;
    this.#gateways = gateways;
    this.#delivery = delivery;
    this.#log = log;
    this.#options = {
      now: Date.now,
      random: Math.random,
      maxDeliveriesInFlight: DEFAULT_MAX_DELIVERIES_IN_FLIGHT,
      metrics: NO_METRICS,
      ...options,
    };
    this.#startedAt = this.#options.now();
  }

  /** Tasks being followed (scheduled, waiting to be posted, or being worked on). */
  get size(): number {
    return this.#schedule.size + this.#polls.size + this.#deliveryQueue.size + this.#deliveries.size;
  }

  /** Called once per task that reaches a terminal state (succeeded, failed, expired, timed out, unknown). */
  onFinished(listener: FinishedListener): void {
    this.#finishedListeners.push(listener);
  }

  /** How a task waiting in its key's line is looked at; without one, such a task is only shown as it is. */
  followWaiting(step: WaitingStep): void {
    this.#waitingStep = step;
  }

  /**
   * Picks up every task that still needs work, as after a restart: with sharding, those of the guilds
   * `ownsGuild` says are this worker's (the tasks of a guild move with the guild when shards change).
   */
  async resume(ownsGuild?: (guildId: string) => boolean): Promise<number> {
    const now = this.#options.now();
    let count = 0;
    for await (const id of this.#repository.activeIds(ownsGuild)) {
      // Spread the first polls over one interval so a restart with many tasks does not burst.
      this.#schedule.set(id, now + Math.floor(this.#options.random() * this.#options.policy.intervalMs));
      count++;
    }
    this.#pump();
    return count;
  }

  /** Follows a newly submitted task: first poll after one interval. */
  track(task: TaskRecord): void {
    if (this.#stopped) return;
    this.#remember(task);
    this.#schedule.set(task.id, this.#options.now() + nextPollDelay(this.#options.policy, 0, undefined, this.#options.random));
    this.#pump();
  }

  /** Stops scheduling and waits for the work in flight; tasks stay in the store for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // Queued deliveries stay in the store as they are: the next start resumes them.
    await Promise.allSettled([...this.#polls, ...this.#deliveries]);
  }

  #pump(): void {
    if (this.#stopped) return;
    const now = this.#options.now();
    while (this.#polls.size < this.#options.maxInFlight) {
      const id = this.#schedule.takeDue(now);
      if (id === undefined) break;
      this.#run(this.#polls, this.#work(id));
    }
    while (this.#deliveries.size < this.#options.maxDeliveriesInFlight) {
      const next = this.#deliveryQueue.entries().next();
      if (next.done) break;
      const [id, found] = next.value;
      this.#deliveryQueue.delete(id);
      this.#run(this.#deliveries, this.#deliverWork(id, found));
    }
    this.#arm();
  }

  #run(slots: Set<Promise<void>>, work: Promise<void>): void {
    const running = work.finally(() => {
      slots.delete(running);
      this.#pump();
    });
    slots.add(running);
  }

  /** A finished task goes to the delivery queue (at most once). */
  #queueDelivery(id: string, found?: { task: TaskRecord; result: TaskResult }): void {
    if (this.#stopped) return;
    this.#deliveryQueue.set(id, found);
    this.#pump();
  }

  /** One timer, for the earliest due task (when a poll slot is free to take it). */
  #arm(): void {
    const dueAt = this.#polls.size < this.#options.maxInFlight ? (this.#schedule.peekDueAt() ?? Infinity) : Infinity;
    if (dueAt === this.#timerDueAt && this.#timer) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDueAt = dueAt;
    if (dueAt === Infinity) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerDueAt = Infinity;
        this.#pump();
      },
      Math.max(0, dueAt - this.#options.now()),
    );
  }

  #reschedule(id: string, delayMs: number): void {
    if (!this.#stopped) this.#schedule.set(id, this.#options.now() + delayMs);
  }

  /** Keeps where a task's card is while the task needs work (the latest record wins: it may carry the card's message id). */
  #remember(task: TaskRecord): void {
    if (!needsWork(task)) {
      this.#cards.delete(task.id);
      return;
    }
    this.#cards.set(task.id, knownCard(task, this.#options.now()));
    if (this.#cards.size > MAX_KNOWN_CARDS) {
      const oldest = this.#cards.keys().next();
      if (!oldest.done) this.#cards.delete(oldest.value);
    }
  }

  #enter(id: string): void {
    this.#busy.set(id, (this.#busy.get(id) ?? 0) + 1);
  }

  /** A step of the task ended: once nothing more is due for it, its card is forgotten. */
  #leave(id: string): void {
    const steps = (this.#busy.get(id) ?? 1) - 1;
    if (steps > 0) {
      this.#busy.set(id, steps);
      return;
    }
    this.#busy.delete(id);
    if (!this.#schedule.has(id) && !this.#deliveryQueue.has(id)) this.#cards.delete(id);
  }

  /** A task's turn in the schedule: poll it, or close it, or hand it to the delivery queue. */
  async #work(id: string): Promise<void> {
    this.#enter(id);
    try {
      const task = await this.#repository.get(id);
      this.#storeFailures.delete(id);
      if (!task) {
        await this.#lost(id, 'gone');
        return;
      }
      this.#remember(task);
      if (!needsWork(task)) return;
      const current = await this.#handOffIfDue(task);
      if (isTerminal(current.state)) {
        this.#queueDelivery(id);
        return;
      }
      const next = await this.#poll(current);
      this.#remember(next);
      if (next.state === 'waiting') {
        this.#reschedule(id, this.#notPastHandoff(next, WAITING_LOOK_MS));
      } else if (needsWork(next) && !isTerminal(next.state)) {
        const elapsed = this.#options.now() - (next.submittedAt ?? next.createdAt);
        const delay = nextPollDelay(this.#options.policy, elapsed, next.progress, this.#options.random);
        this.#reschedule(id, this.#notPastHandoff(next, this.#notPastDeadline(next, delay)));
      }
    } catch (error) {
      await this.#recover(id, error);
    } finally {
      this.#leave(id);
    }
  }

  /** Downloads and posts a finished task's video, from what the poll found when at hand, else from the store. */
  async #deliverWork(id: string, found: { task: TaskRecord; result: TaskResult } | undefined): Promise<void> {
    this.#enter(id);
    try {
      const task = found?.task ?? (await this.#repository.get(id));
      this.#storeFailures.delete(id);
      if (!task) {
        await this.#lost(id, 'gone');
        return;
      }
      this.#remember(task);
      if (!needsWork(task) || !isTerminal(task.state)) return;
      const current = await this.#handOffIfDue(task);
      const next = await this.#delivery.deliver(current, await this.#gateways.clientFor(current), found?.result);
      this.#remember(next);
      if (needsWork(next)) this.#reschedule(id, this.#notPastHandoff(next, this.#options.policy.intervalMs));
    } catch (error) {
      await this.#recover(id, error);
    } finally {
      this.#leave(id);
    }
  }

  /**
   * A followed task whose record is gone from the store (`gone`) or no longer parses (`unreadable`): it
   * cannot be followed any further. Logged and counted, and its card, when the tracker knows where it
   * is, says so with the ids to check, instead of "Generating…" for good.
   */
  async #lost(id: string, reason: LostTaskReason, error?: StoredRecordError): Promise<void> {
    const known = this.#cards.get(id);
    this.#cards.delete(id);
    this.#storeFailures.delete(id);
    this.#options.metrics.videoTaskLost(reason);
    if (error) {
      this.#repository.reportUnreadable(id, error);
    } else {
      this.#log.error('a followed video task is gone from the store (restarted without persistence, or evicted?); it is lost', {
        task: id,
        gatewayTask: known?.gatewayId,
        requestId: known?.requestId,
        cardTold: known !== undefined,
      });
    }
    if (known) await this.#delivery.showLost(known, reason, this.#options.now());
    if (reason !== 'gone') return;
    try {
      // A gone record's marker may have outlived it (an eviction): the next start would report it again.
      await this.#repository.forgetActive(id);
    } catch (forgetError) {
      this.#log.warn('could not unmark a lost video task; the next start reports it again', { task: id, error: forgetError });
    }
  }

  async #recover(id: string, error: unknown): Promise<void> {
    let storeError = error;
    if (!(error instanceof StoreUnavailableError)) {
      try {
        await this.#failed(id, error);
        this.#storeFailures.delete(id);
        return;
      } catch (recordingError) {
        storeError = recordingError;
      }
    }
    if (storeError instanceof StoredRecordError) {
      // Nothing can be done with a record that does not parse; it stays in the store for a person to look at.
      await this.#lost(id, 'unreadable', storeError);
      return;
    }
    // The store could not say where the task stands, or record the failure: never taken as "gone", and not
    // counted against the task (the gateway and Discord did nothing wrong).
    const failures = (this.#storeFailures.get(id) ?? 0) + 1;
    this.#storeFailures.set(id, failures);
    const delay = errorBackoffDelay(this.#options.policy, failures, this.#options.random);
    this.#log.warn('the store failed during a task step; trying again', { task: id, failures, retryInMs: delay, error: storeError });
    this.#reschedule(id, delay);
  }

  /** A step failed: back off and try again, or close the task when its time or its tries are up. */
  async #failed(id: string, error: unknown): Promise<void> {
    // The step may have moved the task on before failing (saved it as posting, say).
    const task = await this.#repository.get(id);
    if (!task) {
      // Gone since the step read it: saving what the step holds would bring back a record the store lost, without its indexes.
      await this.#lost(id, 'gone');
      return;
    }
    if (isTerminal(task.state) && !deliveryPending(task)) {
      // Only its member's ping is left (the delivery keeps it due when it fails): its next step tries again.
      if (needsWork(task)) this.#reschedule(id, errorBackoffDelay(this.#options.policy, 1, this.#options.random));
      return;
    }
    if (isTerminal(task.state) && needsWork(task)) {
      // Fetching or posting a finished video failed: counted in the store, so a restart cannot make it endless.
      const next = await this.#delivery.recordFailure(task, error, this.#options.policy.deliveryTries);
      if (!needsWork(next)) return;
      const delay = this.#notPastHandoff(next, errorBackoffDelay(this.#options.policy, next.delivery.failures ?? 1, this.#options.random));
      this.#log.warn('could not deliver a finished video; backing off', {
        task: id,
        failures: next.delivery.failures,
        retryInMs: delay,
        error,
      });
      this.#reschedule(id, delay);
      return;
    }
    if (!isTerminal(task.state) && error instanceof NotFoundError) {
      // The gateway no longer knows the task (it restarted and lost it, say): no later poll will find it.
      this.#log.warn('the gateway does not know a running task; closing it', { task: id, gatewayTask: task.gatewayId, error });
      await this.#finish({
        ...task,
        state: 'failed',
        finishedAt: this.#options.now(),
        outcome: {
          ...task.outcome,
          error: { code: TASK_NOT_FOUND, message: error.serverMessage },
          requestId: error.requestId ?? task.outcome.requestId,
        },
        delivery: { ...task.delivery, state: 'closed' },
      });
      return;
    }
    // A poll failed (the gateway unreachable, an error answer, no usable key): counted in the store, so
    // the card can tell later whether the bot lost track of the task or the gateway just never finished it.
    const failed = { ...task, pollErrors: task.pollErrors + 1 };
    const failures = failed.pollErrors;
    const delay = errorBackoffDelay(this.#options.policy, failures, this.#options.random);
    this.#log.warn('task poll failed; backing off', { task: id, failures, retryInMs: delay, error });
    if (this.#pastDeadline(failed)) {
      await this.#giveUp(failed);
      return;
    }
    // The card says the gateway is not answering, and until when the bot keeps asking: the task is
    // looked at again by then, so it closes at the time the card states, not up to a backoff later.
    this.#remember(await this.#delivery.showAndSave(failed, this.#options.now()));
    this.#reschedule(id, this.#notPastHandoff(failed, this.#notPastDeadline(failed, delay)));
  }

  /** A task's deadline runs from when it was sent: the time it waited in its key's line does not count. */
  #pastDeadline(task: TaskRecord): boolean {
    return !isTerminal(task.state) && task.state !== 'waiting' && this.#options.now() - sentAt(task) > this.#options.policy.deadlineMs;
  }

  /** `delayMs`, or less: a task is looked at again just past its deadline at the latest, and closed then. */
  #notPastDeadline(task: TaskRecord, delayMs: number): number {
    const untilPast = sentAt(task) + this.#options.policy.deadlineMs + 1 - this.#options.now();
    return Math.min(delayMs, Math.max(0, untilPast));
  }

  /** `delayMs`, or less: a task of a member's own install is looked at when its job's card is to be handed off. */
  #notPastHandoff(task: TaskRecord, delayMs: number): number {
    const at = handoffAt(task);
    const until = at === undefined ? Infinity : at - this.#options.now();
    return until > 0 ? Math.min(delayMs, until) : delayMs;
  }

  /** Hands off the job's card of a member's own install when its time has come (the card's last edit), saved; else the task as it is. */
  async #handOffIfDue(task: TaskRecord): Promise<TaskRecord> {
    const now = this.#options.now();
    if (!handoffDue(task, now)) return task;
    const next = await this.#delivery.showAndSave(task, now);
    this.#remember(next);
    return next;
  }

  async #giveUp(task: TaskRecord): Promise<void> {
    const closed: TaskRecord = {
      ...task,
      state: 'timed_out',
      finishedAt: this.#options.now(),
      delivery: { ...task.delivery, state: 'closed' },
    };
    await this.#finish(closed);
  }

  /** One step for a task that is not finished: poll it, or close it. Returns the task as saved. */
  async #poll(task: TaskRecord): Promise<TaskRecord> {
    if (task.state === 'waiting') return this.#waitingStep ? this.#waitingStep(task) : task;
    if (task.state === 'submitting') {
      if (this.#beingSent(task)) {
        // Being sent right now, by this process or another (a resume can list it): the sender hands it over when it is done.
        this.#log.debug('a task is still being submitted; leaving it to its sender', { task: task.id });
        return task;
      }
      // Left by a previous process that died while sending it. Nobody can tell if the gateway has it.
      return this.#finish({ ...task, state: 'unknown', finishedAt: this.#options.now(), delivery: { ...task.delivery, state: 'closed' } });
    }
    if (this.#pastDeadline(task)) {
      await this.#giveUp(task);
      return { ...task, state: 'timed_out', delivery: { ...task.delivery, state: 'closed' } };
    }
    const gateway = await this.#gateways.clientFor(task);
    if (!task.gatewayId) throw new Error(`task ${task.id} is running without a gateway id`);
    this.#options.metrics.videoPoll(task.layer);
    const result = await gateway.getTask(task.gatewayId);
    const next = applyResult(task, result, this.#options.now());
    if (!isTerminal(next.state)) return this.#delivery.showAndSave(next, this.#options.now());
    await this.#notifyFinished(next);
    if (next.delivery.state === 'waiting') {
      // Saved as finished first, so a restart does not announce it again; then posted from the delivery
      // queue, with this answer (a native video url is fetched without another poll).
      await this.#repository.save(next);
      this.#queueDelivery(next.id, { task: next, result });
      return next;
    }
    return this.#delivery.showAndSave(next, this.#options.now());
  }

  /**
   * Whether a `submitting` task may still be in a sender's hands: within its claim's lease of when its
   * sending began (queue-sender.ts writes that as `submittedAt`); a task stored before the line, created
   * by this process. Past that its sender died mid-send, and nobody can tell if the gateway has it.
   */
  #beingSent(task: TaskRecord): boolean {
    if (task.submittedAt !== undefined) return this.#options.now() - task.submittedAt < CLAIM_LEASE_MS;
    return task.createdAt >= this.#startedAt && !this.#pastDeadline(task);
  }

  async #finish(task: TaskRecord): Promise<TaskRecord> {
    await this.#notifyFinished(task);
    return this.#delivery.showAndSave(task, this.#options.now());
  }

  async #notifyFinished(task: TaskRecord): Promise<void> {
    await Promise.all(
      this.#finishedListeners.map(async (listener) => {
        try {
          await listener(task);
        } catch (error) {
          this.#log.error('a task-finished listener failed', { task: task.id, error });
        }
      }),
    );
  }
}

/** When a task was sent to the gateway (or, for one stored before it was written, asked for). */
function sentAt(task: TaskRecord): number {
  return task.submittedAt ?? task.createdAt;
}
