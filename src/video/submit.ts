import { ValidationError } from '../gateway/errors.ts';
import type { GenerationRequest } from '../gateway/types.ts';
import { validateEdit, validateExtension } from '../gateway/validation.ts';
import { KeyedLock } from '../lib/keyed-lock.ts';
import { UnstorableRecordError } from '../store/index.ts';
import type { Logger } from '../lib/log.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import { LimitReachedError, type GuildVideoPolicy } from '../ports/guild-policy.ts';
import type { ModerationLogPort } from '../ports/moderation-log.ts';
import { tokenUsableUntil, type InteractionContext } from '../ports/interaction-context.ts';
import type { VideoDelivery } from './delivery.ts';
import { inCardWords } from './status-card.ts';
import { checkMemberLimits } from './member-limits.ts';
import { taskKey } from './wording.ts';
import { ENGLISH } from '../i18n/index.ts';
import { notice, word, type Notice } from '../wording/notice.ts';
import { jobSize, type SubmissionPlan } from './plan.ts';
import { reservationOf, type QueueSender } from './queue-sender.ts';
import { TASK_RECORD_VERSION, taskLanguages, type JobPlace, type TaskRecord } from './record.ts';
import { newTaskId, type TaskRepository } from './repository.ts';

// Submitting a prepared request: the task is stored before the user hears it was accepted and before the
// gateway is called (a crash mid-submission is reported, not forgotten), counted against the limits in
// the same step, and put in its key's line (queue-sender.ts), which sends it when the key has a slot: at
// once when it has one, the card saying where it stands in line when it has not.

export interface VideoSubmissionDeps {
  repository: TaskRepository;
  /** Every task waits its turn in its key's line, and is sent from there. */
  sender: QueueSender;
  delivery: VideoDelivery;
  policy: GuildVideoPolicy;
  vendor: string;
  log: Logger;
  /** Counts submissions by outcome and gateway code; default none. */
  metrics?: Pick<BotMetrics, 'videoSubmission'>;
  /** A fresh url of a posted result's mp4 (Discord re-signs attachment urls). */
  attachmentUrl(channelId: string, messageId: string, fileName?: string): Promise<string | undefined>;
  /** The server's moderation log, told of every job admitted; default none. */
  moderationLog?: Pick<ModerationLogPort, 'job'>;
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
    // Logged once it is in line or refused there, when its card (and so the link to it) is likeliest known.
    let shown: TaskRecord | undefined;
    try {
      if (wanted === 1) return (shown = await this.#queue(admitted, true));
      // The card says how many went and why the rest did not before any is sent.
      if (admitted.length < wanted) {
        this.#deps.metrics?.videoSubmission('limited', plan.access.layer, undefined);
        await this.#deps.delivery.showAndSave(first).catch((error: unknown) => {
          this.#deps.log.warn('could not show a job on its card before sending it; the tracker will', { task: first.id, error });
        });
      }
      return (shown = await this.#queue(admitted, false));
    } finally {
      this.#logJob(shown ?? first, admitted);
    }
  }

  /** Tells the server's moderation log of a job: its member, prompt, card and what its admitted videos are expected to cost. */
  #logJob(card: TaskRecord, admitted: readonly TaskRecord[]): void {
    this.#deps.moderationLog?.job({
      guildId: card.guildId,
      channelId: card.channelId,
      messageId: card.card.messageId,
      userId: card.userId,
      prompt: card.prompt,
      videos: admitted.length,
      estimateUsdTicks: admitted.reduce((sum, task) => sum + (task.reservation?.estimateUsdTicks ?? 0), 0),
    });
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
      ...(plan.regenerated ? { regenerated: true } : {}),
      createdAt: Date.now(),
      state: 'waiting',
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
   * Puts each admitted task of a job in its key's line, then drains the line: a task the key takes now is
   * sent and shown on its card; one that must wait is shown waiting, with its place. A job of one refused by
   * the gateway or by the line is thrown (its member hears it privately); a refused variant of a larger job
   * is shown on its tile.
   */
  async #queue(admitted: readonly TaskRecord[], alone: boolean): Promise<TaskRecord> {
    const { sender, log } = this.#deps;
    const inLine: TaskRecord[] = [];
    let refusal: { notice: Notice; task: TaskRecord } | undefined;
    for (const task of admitted) {
      const answer = await sender.enqueue(task);
      if (answer.kind !== 'refused') {
        inLine.push(task);
        continue;
      }
      const told = notice(answer.reason === 'member_limit' ? 'video.refusal.member-limit' : 'video.refusal.line-full', {
        limit: answer.limit,
        ...(answer.reason === 'line_full' ? { key: taskKey(task) } : {}),
      });
      // Every variant the line refuses is closed and gives back what it reserved; the first one says why.
      const closed = await this.#refuse(task, told, alone);
      refusal ??= { notice: told, task: closed };
    }
    if (inLine.length === 0) {
      this.#deps.metrics?.videoSubmission('limited', admitted[0]?.layer ?? 'compat', 'queue');
      throw new SubmissionRefusedError(refusal?.notice ?? notice('video.refusal.none-sent'), refusal?.task);
    }
    const outcomes = await Promise.all(inLine.map((task) => sender.sendOrWait(task, { refusalTold: alone })));
    const shown: TaskRecord[] = [];
    for (const [index, outcome] of outcomes.entries()) {
      const task = inLine[index]!;
      if (outcome.kind === 'sent') shown.push(outcome.task);
      else if (outcome.kind === 'refused') {
        if (alone) throw new SubmissionRefusedError(outcome.notice, outcome.task);
      } else
        shown.push(
          (await this.#deps.delivery.showWaiting(task.id, await sender.placeOf(task)).catch((error: unknown) => {
            log.warn('could not show a waiting video on its card yet; the tracker will', { task: task.id, error });
            return task;
          })) ?? task,
        );
    }
    const first = shown[0];
    if (!first)
      throw new SubmissionRefusedError(
        outcomes.find((outcome) => outcome.kind === 'refused')?.notice ?? notice('video.refusal.none-sent'),
        undefined,
      );
    return first;
  }

  /** A task the line refused: closed with why (on its tile, for a variant), and what it reserved given back. */
  async #refuse(task: TaskRecord, told: Notice, alone: boolean): Promise<TaskRecord> {
    const { repository, delivery, log } = this.#deps;
    let closed: TaskRecord = { ...task, state: 'failed', finishedAt: Date.now(), delivery: { ...task.delivery, state: 'closed' } };
    if (!alone) closed = { ...closed, outcome: { ...closed.outcome, error: { code: 'refused', message: inCardWords(task, told) } } };
    await repository.save(closed);
    await this.#release([closed]);
    if (!alone)
      await delivery.showAndSave(closed).catch((error: unknown) => log.warn('could not show a refused variant', { task: task.id, error }));
    return closed;
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
