import { randomUUID } from 'node:crypto';
import { GatewayApiError, GatewayError } from '../gateway/errors.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { TASK_TIMEOUT_MS } from '../gateway/spec.ts';
import type { SubmittedTask } from '../gateway/types.ts';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import { StoreUnavailableError } from '../store/index.ts';
import type { Logger } from '../lib/log.ts';
import { codeLabel, NO_METRICS, type BotMetrics } from '../lib/metrics.ts';
import type { GuildVideoPolicy, SpendReservation } from '../ports/guild-policy.ts';
import type { Notice } from '../wording/notice.ts';
import type { VideoDelivery } from './delivery.ts';
import type { GatewayResolver } from './gateway-resolver.ts';
import type { Claimant, ClaimTicket, EnqueueAnswer, KeyQueue, QueueJob, WaitingPlace } from './key-queue.ts';
import { routingGuildId, type TaskRecord } from './record.ts';
import type { TaskRepository } from './repository.ts';
import { inCardWords } from './status-card.ts';
import { parseStoredRequest } from './stored-request.ts';
import { refusalNotice } from './submission-refusal.ts';
import type { TaskTracker } from './tracker.ts';
import { taskKey } from './wording.ts';

// Sends the jobs of each key's line (key-queue.ts) as the key takes them. Every way a video is asked for
// stores its task as `waiting` and puts it in line here; whoever frees a slot (a task that ended, a
// refusal, a Retry-After passed) drains the line again. A job is taken from its record's `waiting` to
// `submitting` in one atomic step of the store before it is sent, so it is sent at most once whichever
// process claimed it; the queue's claims make it sent at least once. The gateway's limit refusals put the
// job back first in line (the queue learns the key's limit from them); any other answer ends its wait.
// A drain only claims: each claimed job is sent on its own, in the background, so that a member whose job
// joins the line hears where it stands at once, not once another job's gateway call has answered (up to
// the gateway client's deadline). Whatever frees a slot or puts a job back in line drains again.

/** What became of a job a member is waiting on while they are answered (submit.ts). */
export type SendOutcome =
  /** Sent now: the task as shown on its card. */
  | { kind: 'sent'; task: TaskRecord }
  /** Refused by the gateway for good (nothing exists there): `notice` is why, the task as saved. */
  | { kind: 'refused'; notice: Notice; task: TaskRecord }
  /** Still in line (or sent by another process): it is sent when the key has a slot. */
  | { kind: 'waiting' };

export interface QueueSenderDeps {
  queue: KeyQueue;
  repository: TaskRepository;
  gateways: GatewayResolver;
  delivery: VideoDelivery;
  tracker: TaskTracker;
  policy: Pick<GuildVideoPolicy, 'releaseSubmission'>;
  log: Logger;
  /** An admin's `key_concurrency` for the server's key, when stated: nothing past it is sent, nothing probed. */
  statedLimit?(guildId: string): Promise<number | undefined>;
  /** With sharding: the guilds this process follows tasks of (another process's are followed there). */
  ownsGuild?: (guildId: string) => boolean;
  metrics?: Pick<BotMetrics, 'videoSubmission' | 'videoQueueWaiting' | 'videoQueueWaited' | 'gatewayLimitRefusal'>;
  now?: () => number;
}

/** Storing an accepted task is asked again from 1 s, doubling to 30 s, while the store fails. */
const KEEP_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000, jitter: 0.25, spread: 'within-bounds' };

/** A place read of a key's line is used for this long by every card that asks: one read per key, not per job. */
const PLACES_FRESH_MS = 1_000;

export class QueueSender {
  readonly #deps: QueueSenderDeps;
  readonly #log: Logger;
  readonly #metrics: NonNullable<QueueSenderDeps['metrics']>;
  readonly #now: () => number;
  /** Keys being drained by this process: whether another round was asked for meanwhile, and the drain's end. */
  readonly #draining = new Map<string, { again: boolean; done: Promise<void> }>();
  /** A drain asked for later (a Retry-After, a lease's end), per key. */
  readonly #wakeTimers = new Map<string, NodeJS.Timeout>();
  /** Sends in flight, so that stop() can wait for them. */
  readonly #sends = new Set<Promise<void>>();
  /** The jobs this process claimed and is sending: their members hear when the send answers. */
  readonly #sending = new Set<string>();
  /** Members answered when their own job's fate is known (submit.ts); `refusalTold`: they hear a refusal privately, not on the card. */
  readonly #awaited = new Map<string, { task: TaskRecord; resolve: (outcome: SendOutcome) => void; refusalTold: boolean }>();
  readonly #places = new Map<string, { at: number; order: Promise<WaitingPlace[]> }>();
  readonly #waitingPerKey = new Map<string, number>();
  /** This process's run: new at every start, so that the next start tells its claims from its own. */
  readonly #run = randomUUID();
  /** Who this process's claims name, once it said which worker it is (`releaseEarlierClaims`). */
  #claimant: Claimant | undefined;
  #stopped = false;

  constructor(deps: QueueSenderDeps) {
    this.#deps = deps;
    this.#log = deps.log;
    this.#metrics = deps.metrics ?? NO_METRICS;
    this.#now = deps.now ?? (() => Date.now());
  }

  /** Puts a stored `waiting` task in its key's line. */
  enqueue(task: TaskRecord): Promise<EnqueueAnswer> {
    return this.#deps.queue.enqueue(jobOf(task));
  }

  /**
   * Drains `task`'s key's line and answers what became of `task` in this drain: sent, refused, or still
   * waiting. The task must be in line (enqueue()). A task this drain claims is answered when its own send
   * does; one it leaves in line, as soon as the drain has claimed what the key takes now (the sends of
   * other jobs go on without it). With `refusalTold`, a refusal is left to the caller to tell, not shown on
   * the task's card.
   */
  async sendOrWait(task: TaskRecord, options: { refusalTold: boolean }): Promise<SendOutcome> {
    const outcome = new Promise<SendOutcome>((resolve) => this.#awaited.set(task.id, { task, resolve, refusalTold: options.refusalTold }));
    try {
      await this.#drain(task.keyId, task.guildId);
    } catch (error) {
      // It stays stored and in line: the tracker's look at it drains the line again.
      this.#log.warn("could not look at a key's line of videos; a waiting video is looked at again", { task: task.id, error });
    }
    // Not claimed by this drain: it waits (or another process took it, which shows its card).
    if (!this.#sending.has(task.id)) this.#answerWaiting(task.id);
    return outcome;
  }

  /** Drains the key's line: a slot of it may have freed, or a job may have joined it. */
  wake(keyId: string, guildId: string): void {
    void this.#drain(keyId, guildId).catch((error: unknown) => {
      this.#log.warn("could not look at a key's line of videos; its next change looks again", { error });
    });
  }

  /** A task that was sent ended: its slot is free for the next job of its line. */
  async finished(task: TaskRecord): Promise<void> {
    await this.#deps.queue.finished(task.keyId, task.id);
    this.wake(task.keyId, task.guildId);
  }

  /**
   * The tracker's look at a task that waits (tracker.ts, WaitingStep): back in line should the line have lost
   * it (a store restarted without persistence), the line drained should a wake-up have been lost, and its
   * card showing its place. Returns the task as it then stands.
   */
  async lookAtWaiting(task: TaskRecord): Promise<TaskRecord> {
    const answer = await this.enqueue(task);
    if (answer.kind === 'refused')
      this.#log.warn('a waiting video is not in its line, and the line is full; it is looked at again', { task: task.id });
    this.wake(task.keyId, task.guildId);
    return (await this.#deps.delivery.showWaiting(task.id, await this.placeOf(task))) ?? task;
  }

  /** The task's place in its key's line (1 is next), or undefined when it is not waiting there. */
  async placeOf(task: Pick<TaskRecord, 'id' | 'keyId'>): Promise<number | undefined> {
    const now = this.#now();
    let read = this.#places.get(task.keyId);
    if (!read || now - read.at > PLACES_FRESH_MS) {
      read = { at: now, order: this.#deps.queue.waiting(task.keyId) };
      this.#places.set(task.keyId, read);
      read.order.then(
        (order) => this.#countWaiting(task.keyId, order.length),
        () => this.#places.delete(task.keyId),
      );
    }
    return (await read.order).find((waiting) => waiting.jobId === task.id)?.place;
  }

  /**
   * Where a task stands in its key's line as a member asks (`/video list`, `/video status`, the voice
   * tool): read now, since the card's place is up to a card interval old. A line that no longer holds it
   * (claimed since the record was read) or cannot be read leaves the place its record last stored.
   */
  async currentPlace(task: TaskRecord): Promise<number | undefined> {
    if (task.state !== 'waiting') return undefined;
    try {
      return (await this.placeOf(task)) ?? task.place;
    } catch (error) {
      this.#log.warn("could not read a key's line of videos; the place last stored is shown", { task: task.id, error });
      return task.place;
    }
  }

  /** Takes a waiting job out of line: true when it was still waiting in its record (it is then never sent). */
  async cancel(task: TaskRecord, byUserId: string): Promise<TaskRecord | undefined> {
    const now = this.#now();
    let cancelled = false;
    const stored = await this.#deps.repository.change(task.id, (current) => {
      cancelled = current.state === 'waiting';
      if (!cancelled) return undefined;
      return { ...current, state: 'cancelled', cancelledBy: byUserId, finishedAt: now, delivery: { ...current.delivery, state: 'closed' } };
    });
    if (!cancelled || !stored) return undefined;
    await this.#deps.queue.cancel(task.keyId, task.id).catch((error: unknown) => {
      // The record says cancelled: a claim of it reports it finished without sending it.
      this.#log.warn('could not take a cancelled video out of its line; it is skipped when its turn comes', { task: task.id, error });
    });
    this.#places.delete(task.keyId);
    await this.#release(stored);
    this.#log.info('a waiting video was cancelled', { task: task.id, guild: task.guildId });
    return this.#deps.delivery.showAndSave(stored);
  }

  /**
   * Names this process's claims from now on as `worker`'s (the application and its shards: one process at
   * a time is that worker), and releases the claims earlier runs of the same worker left unreported (killed
   * between a claim and its report), then drains their lines: their slots come back now instead of at the
   * end of their lease. A released job is handed out again as a lease run out would hand it: its record
   * says whether it was sent, so it is never sent twice. Resolves with how many lines it released claims on.
   */
  async releaseEarlierClaims(worker: string): Promise<number> {
    const claimant: Claimant = { worker, run: this.#run };
    this.#claimant = claimant;
    const released = await this.#deps.queue.releaseEarlierRuns(claimant, this.#now());
    for (const { keyId, guildId } of released) this.wake(keyId, guildId);
    return released.length;
  }

  /** Stops draining and waits for the sends in flight; the lines stay in the store for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#wakeTimers.values()) clearTimeout(timer);
    this.#wakeTimers.clear();
    await Promise.allSettled([...this.#sends]);
  }

  /**
   * Claims jobs of the key's line until it has no free slot or nothing waits, each claimed job sent in the
   * background. One drain per key at a time: asked for while one runs, it runs another round, and answers
   * when that one has claimed (not when its sends have answered).
   */
  #drain(keyId: string, guildId: string): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const running = this.#draining.get(keyId);
    if (running) {
      running.again = true;
      return running.done;
    }
    const state = { again: true, done: Promise.resolve() };
    this.#draining.set(keyId, state);
    state.done = this.#drainRounds(keyId, guildId, state);
    return state.done;
  }

  async #drainRounds(keyId: string, guildId: string, state: { again: boolean }): Promise<void> {
    try {
      while (state.again && !this.#stopped) {
        state.again = false;
        // Only a server's own key takes a stated limit, and only that server's jobs stand in its line: any
        // job's guild would answer the same.
        const statedLimit = await this.#deps.statedLimit?.(guildId);
        for (;;) {
          const claimant = this.#claimant;
          const answer = await this.#deps.queue.claimNext(keyId, this.#now(), {
            ...(statedLimit === undefined ? {} : { statedLimit }),
            ...(claimant ? { claimant } : {}),
          });
          if (answer.kind === 'claimed') {
            this.#sendInBackground(answer.ticket, answer.job, answer.resumed);
            continue;
          }
          if (answer.kind === 'paused') this.#wakeAt(keyId, guildId, answer.until);
          if (answer.kind === 'full') this.#wakeAt(keyId, guildId, answer.retryAt);
          break;
        }
        this.#places.delete(keyId);
      }
    } finally {
      this.#draining.delete(keyId);
    }
  }

  /**
   * Sends a claimed job without holding up the drain. A send that fails is logged; its member, if it left
   * them unanswered (put back in line, or not sent), hears that it waits, and the tracker follows it.
   */
  #sendInBackground(ticket: ClaimTicket, job: QueueJob, resumed: boolean): void {
    this.#sending.add(job.jobId);
    const send = this.#sendClaimed(ticket, job, resumed)
      .catch((error: unknown) => this.#log.error('a queued video could not be sent', { task: job.jobId, error }))
      .finally(() => {
        this.#sending.delete(job.jobId);
        this.#answerWaiting(job.jobId);
      });
    this.#sends.add(send);
    void send.finally(() => this.#sends.delete(send));
  }

  /** Tells the member still waiting on the task that it waits in line, and has the tracker look at it meanwhile. */
  #answerWaiting(taskId: string): void {
    const task = this.#awaited.get(taskId)?.task;
    if (!task || !this.#settle(taskId, { kind: 'waiting' })) return;
    if (this.#deps.ownsGuild?.(routingGuildId(task)) ?? true) this.#deps.tracker.track(task);
  }

  #wakeAt(keyId: string, guildId: string, at: number): void {
    if (this.#stopped || !Number.isFinite(at)) return;
    clearTimeout(this.#wakeTimers.get(keyId));
    const timer = setTimeout(
      () => {
        this.#wakeTimers.delete(keyId);
        this.wake(keyId, guildId);
      },
      Math.max(0, at - this.#now()),
    );
    timer.unref();
    this.#wakeTimers.set(keyId, timer);
  }

  #countWaiting(keyId: string, jobs: number): void {
    this.#waitingPerKey.set(keyId, jobs);
    let total = 0;
    for (const count of this.#waitingPerKey.values()) total += count;
    this.#metrics.videoQueueWaiting(total);
  }

  /** Answers the member waiting on the task's fate, if one still is: whether this answered them. */
  #settle(taskId: string, outcome: SendOutcome): boolean {
    const awaited = this.#awaited.get(taskId);
    if (!awaited) return false;
    this.#awaited.delete(taskId);
    awaited.resolve(outcome);
    return true;
  }

  /**
   * One claimed job: taken from `waiting` to `submitting` in its record (or, when its record says it is
   * past waiting, reported to the queue as the record has it), sent, and its answer stored before it is
   * reported to the queue.
   */
  async #sendClaimed(ticket: ClaimTicket, job: QueueJob, resumed: boolean): Promise<void> {
    const { queue, repository } = this.#deps;
    const now = this.#now();
    let taken = false;
    const stored = await repository.change(job.jobId, (current) => {
      taken = current.state === 'waiting';
      return taken ? { ...current, state: 'submitting', submittedAt: now } : undefined;
    });
    if (!stored || !taken) {
      // Sent already (a resumed claim, an enqueue tried again), cancelled, or gone: never sent again.
      if (stored?.state === 'running') await queue.accepted(ticket, now);
      else {
        await queue.finished(ticket.keyId, ticket.jobId);
        // Its slot is free and nothing was sent: the next job need not wait for a lease or a look.
        this.wake(ticket.keyId, job.guildId);
      }
      this.#log.info('a claimed video was not sent: its record is past waiting', { task: job.jobId, state: stored?.state, resumed });
      return;
    }
    this.#metrics.videoQueueWaited(Math.max(0, now - job.askedAt) / 1000);
    let submitted: SubmittedTask;
    try {
      submitted = await this.#submit(stored);
    } catch (error) {
      await this.#refused(stored, ticket, error);
      return;
    }
    await this.#accepted(stored, ticket, submitted);
  }

  async #submit(task: TaskRecord): Promise<SubmittedTask> {
    const gateway = await this.#deps.gateways.clientFor(task);
    const options = { queuedOnKeyLimits: true };
    // Stored as it is sent: read back field by field and held to the gateway's rules again.
    const asked = parseStoredRequest(task.operation, task.request, gateway.validationOptions);
    switch (asked.operation) {
      case 'generate':
        return gateway.generate(asked.request, options);
      case 'edit':
        return gateway.edit(asked.request, options);
      case 'extend':
        return gateway.extend(asked.request, options);
    }
  }

  /**
   * Stores a task the gateway accepted. Only this record knows the gateway's id, so a store that fails is
   * asked again (with the error backoff) for as long as the gateway keeps the task, rather than losing it.
   */
  async #keepAccepted(task: TaskRecord): Promise<void> {
    for (let failures = 0; ; failures++) {
      try {
        await this.#deps.repository.save(task);
        return;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || this.#now() - task.createdAt > TASK_TIMEOUT_MS) {
          this.#log.error('an accepted video task could not be stored; it is lost to the bot', {
            task: task.id,
            gatewayTask: task.gatewayId,
            error,
          });
          throw error;
        }
        const delayMs = backoffDelay(failures, KEEP_BACKOFF);
        this.#log.warn('could not store an accepted video task; trying again', {
          task: task.id,
          gatewayTask: task.gatewayId,
          retryInMs: delayMs,
          error,
        });
        await sleep(delayMs);
      }
    }
  }

  async #accepted(stored: TaskRecord, ticket: ClaimTicket, submitted: SubmittedTask): Promise<void> {
    const { queue, delivery, tracker } = this.#deps;
    const task: TaskRecord = {
      ...stored,
      gatewayId: submitted.id,
      state: 'running',
      submittedAt: this.#now(),
      outcome: submitted.requestId ? { requestId: submitted.requestId } : {},
    };
    await this.#keepAccepted(task);
    await queue.accepted(ticket, this.#now()).catch((error: unknown) => {
      this.#log.warn('could not tell the key line a video was accepted; its claim runs out and is reported then', { task: task.id, error });
    });
    this.#metrics.videoSubmission('accepted', task.layer, undefined);
    this.#log.info('video task submitted', {
      task: task.id,
      gatewayTask: submitted.id,
      layer: task.layer,
      operation: task.operation,
      guild: task.guildId,
      ...(task.job ? { job: task.job.id, variant: task.job.number } : {}),
    });
    // Shown, then followed: the tracker starts from the record as the card left it (the card's message id
    // with it). A card that cannot be shown yet is left to the tracker, which edits it at its next step.
    let shown = task;
    try {
      shown = await delivery.showAndSave(task);
    } catch (error) {
      this.#log.warn('could not show a submitted task on its card yet; the tracker will', { task: task.id, error });
    }
    // Another process's task is followed there: its tracker looks at the waiting task and finds it running.
    if (this.#deps.ownsGuild?.(routingGuildId(shown)) ?? true) tracker.track(shown);
    this.#settle(task.id, { kind: 'sent', task: shown });
  }

  async #refused(stored: TaskRecord, ticket: ClaimTicket, error: unknown): Promise<void> {
    const { repository, queue, delivery } = this.#deps;
    const now = this.#now();
    const code = error instanceof GatewayApiError ? error.code : undefined;
    if (code === 'too_many_requests' || code === 'rate_limit') {
      // Nothing exists at the gateway: the job waits again, first in line.
      this.#metrics.gatewayLimitRefusal(code);
      await repository.change(stored.id, (current) => (current.state === 'submitting' ? { ...current, state: 'waiting' } : undefined));
      if (code === 'rate_limit') await queue.refusedForRate(ticket, (error as GatewayApiError).retryAfterMs ?? NaN, now);
      else await queue.refusedForConcurrency(ticket, now);
      this.#log.info("the gateway refused a video for its key's limits; it waits again", { task: stored.id, code });
      // The line now says when the key takes it again (a pause, a lease): a drain sets the wake-up.
      this.wake(ticket.keyId, stored.guildId);
      return;
    }
    const refusal = refusalNotice(
      error,
      { model: stored.model, operation: stored.operation, regenerated: stored.regenerated === true },
      taskKey(stored),
    );
    this.#metrics.videoSubmission(
      refusal === undefined ? 'unknown' : 'refused',
      stored.layer,
      error instanceof GatewayError ? codeLabel(error.code, error.status) : 'no_answer',
    );
    await queue.finished(ticket.keyId, ticket.jobId);
    // Its slot is free: the next job need not wait for a task to end or the tracker's look.
    this.wake(ticket.keyId, stored.guildId);
    if (refusal !== undefined) {
      // Refused, or never delivered: nothing exists at the gateway and nothing was charged.
      const failed: TaskRecord = {
        ...stored,
        state: 'failed',
        finishedAt: now,
        outcome: { ...stored.outcome, error: { code: 'refused', message: inCardWords(stored, refusal) } },
        delivery: { ...stored.delivery, state: 'closed' },
      };
      await repository.save(failed);
      await this.#release(failed);
      const toldPrivately = this.#awaited.get(stored.id)?.refusalTold === true;
      this.#settle(stored.id, { kind: 'refused', notice: refusal, task: failed });
      if (toldPrivately) return;
      await delivery.showAndSave(failed).catch((showError: unknown) => {
        this.#log.warn('could not show a refused video on its card', { task: stored.id, error: showError });
      });
      return;
    }
    // The gateway may have accepted it (no answer, or one the bot cannot read): the card says so honestly,
    // with the request id support can look up, and stays.
    this.#log.error('a video submission has an unknown outcome', { task: stored.id, guild: stored.guildId, error });
    const requestId = error instanceof GatewayError ? error.requestId : undefined;
    const unknown = await delivery.showAndSave({
      ...stored,
      state: 'unknown',
      finishedAt: now,
      outcome: requestId ? { ...stored.outcome, requestId } : stored.outcome,
      delivery: { ...stored.delivery, state: 'closed' },
    });
    this.#settle(stored.id, { kind: 'sent', task: unknown });
  }

  /** Gives back what a task that will not be made reserved against its server's limits. */
  async #release(task: TaskRecord): Promise<void> {
    await this.#deps.policy.releaseSubmission(task, reservationOf(task)).catch((error: unknown) => {
      this.#log.warn('a video that was not made stays counted against the limits today', { task: task.id, error });
    });
  }
}

/** A stored task as a job of its key's line. */
export function jobOf(task: TaskRecord): QueueJob {
  return { jobId: task.id, keyId: task.keyId, guildId: task.guildId, memberId: task.userId, askedAt: task.createdAt };
}

/** What admission reserved for a task (it always sets one before the task is stored). */
export function reservationOf(task: TaskRecord): SpendReservation {
  return task.reservation ?? { estimateUsdTicks: 0, month: false };
}
