import type { GatewayClient } from '../gateway/client.ts';
import type { Logger } from '../log.ts';
import { applyResult } from './apply-result.ts';
import type { VideoDelivery } from './delivery.ts';
import { errorBackoffDelay, nextPollDelay, type PollPolicy } from './poll-policy.ts';
import { isTerminal, needsWork, type TaskRecord } from './record.ts';
import type { TaskRepository } from './repository.ts';
import { Schedule } from './schedule.ts';

// The background poller: follows every stored task to a terminal status, has its video posted, and
// resumes all of that after a restart. Memory per task is one schedule entry; the record itself is read
// from the store when its turn comes. Polls in flight are bounded, errors back off, and a task the
// gateway never finishes is given up after the policy's deadline.

export interface GatewayResolver {
  /** The client to follow this task with: the layer it was submitted on, and the key that submitted it. */
  clientFor(task: TaskRecord): Promise<GatewayClient>;
}

export interface TrackerOptions {
  policy: PollPolicy;
  maxInFlight: number;
  now?: () => number;
  random?: () => number;
}

export type FinishedListener = (task: TaskRecord) => void;

export class TaskTracker {
  readonly #repository: TaskRepository;
  readonly #gateways: GatewayResolver;
  readonly #delivery: VideoDelivery;
  readonly #log: Logger;
  readonly #options: Required<TrackerOptions>;
  readonly #schedule = new Schedule();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #finishedListeners: FinishedListener[] = [];
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
    this.#options = { now: Date.now, random: Math.random, ...options };
    this.#startedAt = this.#options.now();
  }

  /** Tasks being followed (scheduled or being worked on). */
  get size(): number {
    return this.#schedule.size + this.#inFlight.size;
  }

  /** Called once per task that reaches a terminal state (succeeded, failed, expired, timed out, unknown). */
  onFinished(listener: FinishedListener): void {
    this.#finishedListeners.push(listener);
  }

  /** Picks up every task that still needs work, as after a restart. */
  async resume(): Promise<number> {
    const now = this.#options.now();
    let count = 0;
    for await (const id of this.#repository.activeIds()) {
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
    this.#schedule.set(task.id, this.#options.now() + nextPollDelay(this.#options.policy, 0, undefined, this.#options.random));
    this.#pump();
  }

  /** Stops scheduling and waits for the work in flight; tasks stay in the store for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await Promise.allSettled([...this.#inFlight]);
  }

  #pump(): void {
    if (this.#stopped) return;
    const now = this.#options.now();
    while (this.#inFlight.size < this.#options.maxInFlight) {
      const id = this.#schedule.takeDue(now);
      if (id === undefined) break;
      const work = this.#work(id).finally(() => {
        this.#inFlight.delete(work);
        this.#pump();
      });
      this.#inFlight.add(work);
    }
    this.#arm();
  }

  /** One timer, for the earliest due task (when a poll slot is free to take it). */
  #arm(): void {
    const dueAt = this.#inFlight.size < this.#options.maxInFlight ? (this.#schedule.peekDueAt() ?? Infinity) : Infinity;
    if (dueAt === this.#timerDueAt && this.#timer) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDueAt = dueAt;
    if (dueAt === Infinity) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerDueAt = Infinity;
      this.#pump();
    }, Math.max(0, dueAt - this.#options.now()));
  }

  #reschedule(id: string, delayMs: number): void {
    if (!this.#stopped) this.#schedule.set(id, this.#options.now() + delayMs);
  }

  async #work(id: string): Promise<void> {
    let task: TaskRecord | undefined;
    try {
      task = await this.#repository.get(id);
      if (!task || !needsWork(task)) return;
      const next = await this.#advance(task);
      if (needsWork(next)) {
        const elapsed = this.#options.now() - (next.submittedAt ?? next.createdAt);
        this.#reschedule(id, nextPollDelay(this.#options.policy, elapsed, next.progress, this.#options.random));
      }
    } catch (error) {
      await this.#failed(id, task, error).catch((handlingError: unknown) => {
        this.#log.error('could not record a failed task step; trying again later', { task: id, error: handlingError });
        this.#reschedule(id, this.#options.policy.errorBackoffMs.max);
      });
    }
  }

  /** A step failed: back off and try again, or close the task when its time or its tries are up. */
  async #failed(id: string, read: TaskRecord | undefined, error: unknown): Promise<void> {
    // The step may have moved the task on before failing (a poll found it done, then the download failed).
    const task = (await this.#repository.get(id)) ?? read;
    if (task && isTerminal(task.state) && needsWork(task)) {
      // Fetching or posting a finished video failed: counted in the store, so a restart cannot make it endless.
      const next = await this.#delivery.recordFailure(task, error, this.#options.policy.deliveryTries);
      if (!needsWork(next)) return;
      const delay = errorBackoffDelay(this.#options.policy, next.delivery.failures ?? 1, this.#options.random);
      this.#log.warn('could not deliver a finished video; backing off', { task: id, failures: next.delivery.failures, retryInMs: delay, error });
      this.#reschedule(id, delay);
      return;
    }
    // A poll failed (the gateway unreachable, an error answer, no usable key): counted in the store, so
    // the card can tell later whether the bot lost track of the task or the gateway just never finished it.
    const failed = task ? { ...task, pollErrors: task.pollErrors + 1 } : undefined;
    const failures = failed?.pollErrors ?? 1;
    const delay = errorBackoffDelay(this.#options.policy, failures, this.#options.random);
    this.#log.warn('task poll failed; backing off', { task: id, failures, retryInMs: delay, error });
    if (failed && this.#pastDeadline(failed)) {
      await this.#giveUp(failed);
      return;
    }
    if (failed) await this.#repository.save(failed);
    this.#reschedule(id, delay);
  }

  #pastDeadline(task: TaskRecord): boolean {
    return !isTerminal(task.state) && this.#options.now() - (task.submittedAt ?? task.createdAt) > this.#options.policy.deadlineMs;
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

  /** One step for one task: poll it, or post it, or close it. Returns the task as saved. */
  async #advance(task: TaskRecord): Promise<TaskRecord> {
    if (task.state === 'submitting') {
      if (task.createdAt >= this.#startedAt && !this.#pastDeadline(task)) {
        // Being sent by this process right now (a resume can list it): submit() hands it over when it is done.
        this.#log.debug('a task is still being submitted by this process; leaving it to the submission', { task: task.id });
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
    if (isTerminal(task.state)) return this.#delivery.deliver(task, gateway);

    if (!task.gatewayId) throw new Error(`task ${task.id} is running without a gateway id`);
    const result = await gateway.getTask(task.gatewayId);
    let next = applyResult(task, result, this.#options.now());
    if (!isTerminal(next.state)) {
      next = await this.#delivery.updateCard(next, this.#options.now());
      await this.#repository.save(next);
      return next;
    }
    this.#notifyFinished(next);
    await this.#repository.save(next);
    if (next.delivery.state === 'waiting') return this.#delivery.deliver(next, gateway, result);
    const carded = await this.#delivery.updateCard(next, this.#options.now());
    await this.#repository.save(carded);
    return carded;
  }

  async #finish(task: TaskRecord): Promise<TaskRecord> {
    this.#notifyFinished(task);
    const carded = await this.#delivery.updateCard(task, this.#options.now());
    await this.#repository.save(carded);
    return carded;
  }

  #notifyFinished(task: TaskRecord): void {
    for (const listener of this.#finishedListeners) {
      try {
        listener(task);
      } catch (error) {
        this.#log.error('a task-finished listener failed', { task: task.id, error });
      }
    }
  }
}
