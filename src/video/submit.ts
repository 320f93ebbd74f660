import { setTimeout } from 'node:timers/promises';
import { GatewayApiError, GatewayConnectionError, GatewayError, ValidationError } from '../gateway/errors.ts';
import type { GatewayClientPool } from '../gateway/pool.ts';
import type { GenerationRequest, SubmittedTask } from '../gateway/types.ts';
import { validateEdit, validateExtension } from '../gateway/validation.ts';
import { TASK_TIMEOUT_MS } from '../gateway/spec.ts';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import { KeyedLock } from '../lib/keyed-lock.ts';
import { StoreUnavailableError, UnstorableRecordError } from '../store/index.ts';
import type { Logger } from '../lib/log.ts';
import { codeLabel, type BotMetrics } from '../lib/metrics.ts';
import { LimitReachedError, type GuildVideoPolicy, type SpendReservation } from '../ports/guild-policy.ts';
import { tokenUsableUntil, type InteractionContext } from '../ports/interaction-context.ts';
import type { VideoDelivery } from './delivery.ts';
import { inCardWords } from './status-card.ts';
import { checkMemberLimits } from './member-limits.ts';
import { taskKey } from './wording.ts';
import { ENGLISH } from '../i18n/index.ts';
import { notice, word, type Notice } from '../wording/notice.ts';
import { jobSize, type SubmissionPlan } from './plan.ts';
import { TASK_RECORD_VERSION, taskLanguages, type JobPlace, type TaskRecord } from './record.ts';
import { newTaskId, type TaskRepository } from './repository.ts';
import { optionForField, optionNamedIn } from './requests.ts';
import type { TaskTracker } from './tracker.ts';

// Submitting a prepared request: the task is stored before the user hears it was accepted and before the
// gateway is called (a crash mid-submission is reported, not forgotten), counted against the limits in
// the same step, sent, shown on its card and handed to the tracker.

/** Storing an accepted task is asked again from 1 s, doubling to 30 s, while the store fails. */
const KEEP_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000, jitter: 0.25, spread: 'within-bounds' };

export interface VideoSubmissionDeps {
  repository: TaskRepository;
  tracker: TaskTracker;
  delivery: VideoDelivery;
  clients: GatewayClientPool;
  policy: GuildVideoPolicy;
  vendor: string;
  log: Logger;
  /** Counts submissions by outcome and gateway code; default none. */
  metrics?: Pick<BotMetrics, 'videoSubmission'>;
  /** A fresh url of a posted result's mp4 (Discord re-signs attachment urls). */
  attachmentUrl(channelId: string, messageId: string, fileName?: string): Promise<string | undefined>;
}

/** A limit or the gateway refused a submission; `notice` is what its member should read. */
export class SubmissionRefusedError extends Error {
  readonly notice: Notice;
  /** The stored task, when the refusal came from the gateway (a limit refuses before anything is stored). */
  readonly task: TaskRecord | undefined;
  constructor(told: Notice, task: TaskRecord | undefined) {
    super(word(ENGLISH, told));
    this.name = 'SubmissionRefusedError';
    this.notice = told;
    this.task = task;
  }
}

export class VideoSubmission {
  readonly #deps: VideoSubmissionDeps;
  /**
   * Limits are checked and a new task counted as one step per server (the step is a few store calls), so
   * neither a member's quick repeats nor several members at once can slip past a per-member or server cap.
   * Across workers (a guild handed over between them) the daily limits hold too: the policy checks them
   * again in the same store step that counts the task.
   */
  readonly #admission = new KeyedLock();

  constructor(deps: VideoSubmissionDeps) {
    this.#deps = deps;
  }

  /**
   * Submits a prepared task. The interaction must be deferred: the card is its reply. Throws
   * SubmissionRefusedError when a limit or the gateway refuses it.
   */
  async submit(prepared: SubmissionPlan, context: InteractionContext): Promise<TaskRecord> {
    const plan = await this.#withFreshSource(prepared);
    const wanted = jobSize(plan);
    const ids = [plan.taskId, ...Array.from({ length: wanted - 1 }, () => newTaskId())];
    const { admitted, refusal } = await this.#admit(
      ids.map((id) => this.#draft(plan, context, id)),
      plan.estimateUsdTicks,
      context,
    );
    const first = admitted[0];
    if (!first) {
      this.#deps.metrics?.videoSubmission('limited', plan.access.layer, undefined);
      throw new SubmissionRefusedError(refusal ?? notice('video.refusal.none-sent'), undefined);
    }
    if (wanted === 1) return this.#send(first, plan, true);
    // The card says how many went and why the rest did not before any is sent.
    if (admitted.length < wanted) {
      this.#deps.metrics?.videoSubmission('limited', plan.access.layer, undefined);
      await this.#deps.delivery.showAndSave(first).catch((error: unknown) => {
        this.#deps.log.warn('could not show a job on its card before sending it; the tracker will', { task: first.id, error });
      });
    }
    const sent = await Promise.allSettled(admitted.map((task) => this.#send(task, plan, false)));
    const shown = sent.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    if (shown.length === 0) {
      const reason = sent.find((result) => result.status === 'rejected');
      throw reason?.status === 'rejected' ? reason.reason : new Error('no variant of the job was sent');
    }
    return shown[0] ?? first;
  }

  /** A task of `plan`, as it is stored before anything is sent. */
  #draft(plan: SubmissionPlan, context: InteractionContext, id: string): TaskRecord {
    // Each variant is its own task at the gateway: its stored file carries its own id.
    const request = plan.operation === 'generate' ? { ...variantRequest(plan.request, plan.taskId, id) } : { ...plan.request };
    return {
      v: TASK_RECORD_VERSION,
      id,
      layer: plan.access.layer,
      keyId: plan.access.keyId,
      guildId: context.guildId,
      channelId: context.channelId,
      userId: context.userId,
      operation: plan.operation,
      mode: plan.mode,
      model: plan.model,
      prompt: plan.prompt,
      request,
      ...(plan.sourceTaskId ? { sourceTaskId: plan.sourceTaskId } : {}),
      ...(plan.varyNote ? { varyNote: plan.varyNote } : {}),
      createdAt: Date.now(),
      state: 'submitting',
      polls: 0,
      pollErrors: 0,
      outcome: {},
      card: {
        applicationId: context.applicationId,
        interactionToken: context.interactionToken,
        tokenExpiresAt: context.cardMessageId === undefined ? tokenUsableUntil(context) : 0,
        ...(context.cardMessageId === undefined ? {} : { messageId: context.cardMessageId }),
      },
      attachmentSizeLimit: context.attachmentSizeLimit,
      delivery: { state: 'waiting', attempts: 0 },
      ...taskLanguages(context),
    };
  }

  /**
   * Decides, before anything is sent, how many of a job's tasks the limits and budgets allow: each is
   * checked and counted as one video in turn (the ones admitted before it count as in progress), and
   * the first refusal stops the rest. The admitted ones are stored, numbered 1..k, with why the others
   * were not sent.
   */
  async #admit(
    drafts: readonly TaskRecord[],
    estimateUsdTicks: number,
    context: InteractionContext,
  ): Promise<{ admitted: TaskRecord[]; refusal: Notice | undefined }> {
    const { repository, policy, log } = this.#deps;
    return this.#admission.run(context.guildId, async () => {
      const counted: TaskRecord[] = [];
      let refusal: Notice | undefined;
      for (const draft of drafts) {
        const verdict = await checkMemberLimits(repository, policy, context, estimateUsdTicks, counted.length);
        if (!verdict.ok) {
          refusal = verdict.notice;
          break;
        }
        try {
          counted.push({ ...draft, reservation: await policy.recordSubmission(draft, estimateUsdTicks) });
        } catch (error) {
          if (!(error instanceof LimitReachedError)) {
            await this.#release(counted);
            throw this.#refusedIfUnstorable(error, context);
          }
          refusal = error.notice;
          break;
        }
      }
      const unsent = drafts.length - counted.length;
      const taskIds = counted.map((task) => task.id);
      // A refusal before any video is the member's to read; one after some went is said on their card.
      const card = drafts[0];
      const unsentReason = refusal !== undefined && card !== undefined ? inCardWords(card, refusal) : undefined;
      const jobOf = (number: number): JobPlace => ({
        id: taskIds[0] ?? '',
        number,
        size: counted.length,
        taskIds,
        ...(unsent > 0 && unsentReason !== undefined ? { unsent: { count: unsent, reason: unsentReason } } : {}),
      });
      const placed = drafts.length === 1 ? counted : counted.map((task, index) => ({ ...task, job: jobOf(index + 1) }));
      const admitted: TaskRecord[] = [];
      for (const [index, task] of placed.entries()) {
        try {
          await repository.create(task);
          admitted.push(task);
        } catch (error) {
          await this.#release(placed.slice(index));
          if (admitted.length === 0) throw this.#refusedIfUnstorable(error, context);
          // The card reads the job's tasks from the store: the ones stored are sent and shown.
          log.warn('could not store a variant of a job; sending the ones stored', { task: task.id, error });
          break;
        }
      }
      return { admitted, refusal };
    });
  }

  /**
   * A write the store refused for a number it cannot keep (a bug, never the member's doing), as a refusal
   * the member reads: nothing was sent, and what admission counted has been given back. Else `error`.
   */
  #refusedIfUnstorable(error: unknown, context: InteractionContext): unknown {
    if (!(error instanceof UnstorableRecordError)) return error;
    this.#deps.log.error('a video was refused: its records hold a number the store cannot keep', { guild: context.guildId, error });
    return new SubmissionRefusedError(notice('video.refusal.unrecordable'), undefined);
  }

  /** Gives back what admission counted for tasks that will not be stored. */
  async #release(tasks: readonly TaskRecord[]): Promise<void> {
    for (const task of tasks) {
      await this.#deps.policy.releaseSubmission(task, reservationOf(task)).catch((releaseError: unknown) => {
        this.#deps.log.warn('a task that could not be stored stays counted against the limits today', {
          task: task.id,
          guild: task.guildId,
          error: releaseError,
        });
      });
    }
  }

  /**
   * Sends one stored task, shows it on its card and hands it to the tracker. A refusal of a job of one
   * (`alone`) is thrown (its member hears it privately); a refused variant of a larger job is shown on its
   * tile, in the card's language, and thrown too.
   */
  async #send(stored: TaskRecord, plan: SubmissionPlan, alone: boolean): Promise<TaskRecord> {
    const { repository, clients, delivery, tracker, policy, log } = this.#deps;
    let task = stored;
    const id = task.id;
    const gateway = clients.get(plan.access.apiKey, plan.access.layer);
    let submitted: SubmittedTask;
    try {
      submitted =
        plan.operation === 'generate'
          ? await gateway.generate(variantRequest(plan.request, plan.taskId, id))
          : plan.operation === 'edit'
            ? await gateway.edit(plan.request)
            : await gateway.extend(plan.request);
    } catch (error) {
      const refusal = refusalNotice(error, plan, taskKey(task));
      this.#deps.metrics?.videoSubmission(
        refusal === undefined ? 'unknown' : 'refused',
        task.layer,
        error instanceof GatewayError ? codeLabel(error.code, error.status) : 'no_answer',
      );
      if (refusal !== undefined) {
        // Refused, or never delivered: nothing exists at the gateway and nothing was charged.
        task = { ...task, state: 'failed', finishedAt: Date.now(), delivery: { ...task.delivery, state: 'closed' } };
        if (!alone) task = { ...task, outcome: { ...task.outcome, error: { code: 'refused', message: inCardWords(task, refusal) } } };
        await repository.save(task);
        await policy.releaseSubmission(task, reservationOf(task));
        if (!alone)
          await delivery
            .showAndSave(task)
            .catch((showError: unknown) => log.warn('could not show a refused variant', { task: id, error: showError }));
        throw new SubmissionRefusedError(refusal, task);
      }
      // The gateway may have accepted it (no answer, or an answer the bot cannot read): the card says so
      // honestly, with the request id support can look up, and stays.
      log.error('a video submission has an unknown outcome', { task: id, guild: task.guildId, error });
      const requestId = error instanceof GatewayError ? error.requestId : undefined;
      return delivery.showAndSave({
        ...task,
        state: 'unknown',
        finishedAt: Date.now(),
        outcome: requestId ? { ...task.outcome, requestId } : task.outcome,
        delivery: { ...task.delivery, state: 'closed' },
      });
    }
    task = {
      ...task,
      gatewayId: submitted.id,
      state: 'running',
      submittedAt: Date.now(),
      outcome: submitted.requestId ? { requestId: submitted.requestId } : {},
    };
    await this.#keepAccepted(task);
    this.#deps.metrics?.videoSubmission('accepted', task.layer, undefined);
    log.info('video task submitted', {
      task: id,
      gatewayTask: submitted.id,
      layer: task.layer,
      operation: task.operation,
      guild: task.guildId,
      ...(task.job ? { job: task.job.id, variant: task.job.number } : {}),
    });
    // Shown, then followed: the tracker starts from the record as the card left it (the card's message id
    // with it), so that its first step cannot save over what showing it learned. A card that cannot be
    // shown yet is left to the tracker, which edits it again at its next step.
    let shown = task;
    try {
      shown = await delivery.showAndSave(task);
    } catch (error) {
      log.warn('could not show a submitted task on its card yet; the tracker will', { task: id, error });
    }
    tracker.track(shown);
    return shown;
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
        if (!(error instanceof StoreUnavailableError) || Date.now() - task.createdAt > TASK_TIMEOUT_MS) {
          this.#deps.log.error('an accepted video task could not be stored; it is lost to the bot', {
            task: task.id,
            gatewayTask: task.gatewayId,
            error,
          });
          throw error;
        }
        const delayMs = backoffDelay(failures, KEEP_BACKOFF);
        this.#deps.log.warn('could not store an accepted video task; trying again', {
          task: task.id,
          gatewayTask: task.gatewayId,
          retryInMs: delayMs,
          error,
        });
        await setTimeout(delayMs);
      }
    }
  }

  /** The plan with a freshly signed url of the posted source video, when Discord gives one that passes validation. */
  async #withFreshSource(plan: SubmissionPlan): Promise<SubmissionPlan> {
    const posted = plan.postedSource;
    if (!posted || plan.operation === 'generate') return plan;
    const url = await this.#deps.attachmentUrl(posted.channelId, posted.messageId, posted.fileName).catch((error: unknown) => {
      this.#deps.log.warn('could not refresh the url of a posted video; sending the stored one', { message: posted.messageId, error });
      return undefined;
    });
    if (!url || url === plan.request.video.url) return plan;
    const validation = { layer: plan.access.layer, vendor: this.#deps.vendor };
    try {
      if (plan.operation === 'edit') {
        const request = { ...plan.request, video: { url } };
        validateEdit(request, validation);
        return { ...plan, request };
      }
      const request = { ...plan.request, video: { url } };
      validateExtension(request, validation);
      return { ...plan, request };
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      this.#deps.log.warn('a refreshed video url does not validate; sending the stored one', { message: posted.messageId, error });
      return plan;
    }
  }
}

/** The generation request of a job's variant `taskId`: its stored file named after its own task. */
function variantRequest(request: GenerationRequest, firstId: string, taskId: string): GenerationRequest {
  const storage = request.storage_options;
  if (taskId === firstId || storage?.filename === undefined) return request;
  return { ...request, storage_options: { ...storage, filename: storage.filename.replace(firstId, taskId) } };
}

/** What admission reserved for a task (it always sets one before the task is stored). */
function reservationOf(task: TaskRecord): SpendReservation {
  return task.reservation ?? { estimateUsdTicks: 0, month: false };
}

/** The request fields that carry a link the gateway fetches. */
const LINK_FIELDS = /^(image|last_frame|reference_images|reference_audios|video)\b/;

/** What to tell the user when a submission certainly created nothing, or undefined when it may have. */
export function refusalNotice(
  error: unknown,
  plan: Pick<SubmissionPlan, 'model' | 'operation' | 'regenerated'>,
  key: 'in-use' | 'operator' = 'in-use',
): Notice | undefined {
  if (plan.regenerated && error instanceof GatewayApiError && error.status === 400 && LINK_FIELDS.test(error.param ?? '')) {
    return notice('video.refusal.expired-attachments', { operation: plan.operation });
  }
  const certainlyNothing =
    error instanceof GatewayApiError || error instanceof ValidationError || (error instanceof GatewayConnectionError && !error.requestSent);
  if (!certainlyNothing || !(error instanceof GatewayError)) return undefined;
  const option =
    error.param !== undefined
      ? optionForField(error.param)
      : error instanceof GatewayApiError && error.status === 400
        ? optionNamedIn(error.serverMessage)
        : undefined;
  return notice('video.refusal.nothing-charged', {
    words: { phrase: 'gateway-error', error, context: { key, purpose: 'use-model', model: plan.model, option } },
  });
}
