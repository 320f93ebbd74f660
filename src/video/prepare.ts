import { ValidationError } from '../gateway/errors.ts';
import { REFERENCE_MAX_RESOLUTION, videoModelCapabilities, videoModelNames, type VideoOperation } from '../gateway/spec.ts';
import { validateEdit, validateExtension, validateGeneration } from '../gateway/validation.ts';
import { isHttpUrl } from '../lib/url.ts';
import type { GuildVideoPolicy } from '../ports/guild-policy.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import type { EndUserIds } from './end-users.ts';
import { checkMemberLimits } from './member-limits.ts';
import { refuse, type Outcome } from '../wording/notice.ts';
import {
  confirmationThreshold,
  estimateOf,
  isCountableEstimate,
  jobEstimateUsdTicks,
  jobSize,
  type FormEstimate,
  type OperationRequest,
  type Prepared,
  type SubmissionPlan,
  type VideoSourceInput,
} from './plan.ts';
import type { TaskRecord } from './record.ts';
import { newTaskId, type TaskRepository } from './repository.ts';
import {
  InputError,
  inputNotice,
  buildEditRequest,
  buildExtensionRequest,
  buildGenerationRequest,
  generationMode,
  hasExpiredAttachmentLink,
  isMp4Attachment,
  optionForField,
  storageFilename,
  storageOptionsFor,
  type GenerationInput,
} from './requests.ts';
import { parseStoredRequest } from './stored-request.ts';
import { changedRequest, type RequestChanges } from './changes.ts';
import { promptAllowed } from './prompt-rules.ts';

// Preparing a /video request: the server's key and defaults applied, every rule of the spec, the server's
// blocked words and every limit of the server checked, before anything is sent. Reads only the local store, so a command can
// answer a refusal within Discord's 3 s and defer only what will be submitted.

export interface VideoPreparationDeps {
  policy: GuildVideoPolicy;
  repository: TaskRepository;
  endUsers: EndUserIds;
  vendor: string;
}

/** A rule of the gateway's the request breaks, naming the option to fix. */
function validationRefusal(error: ValidationError) {
  return refuse('video.refusal.invalid-option', {
    option: optionForField(error.field),
    message: { phrase: 'validation-error', error },
  });
}

type SourceUrl = Outcome<{ url: string; taskId?: string; postedSource?: SubmissionPlan['postedSource'] }>;

export class VideoPreparation {
  readonly #deps: VideoPreparationDeps;

  constructor(deps: VideoPreparationDeps) {
    this.#deps = deps;
  }

  async generation(
    context: InteractionContext,
    { variants, ...input }: Omit<GenerationInput, 'model'> & { model: string | undefined; variants?: number | undefined },
  ): Promise<Prepared> {
    const { policy, vendor } = this.#deps;
    const allowed = await promptAllowed(policy, context.guildId, input.prompt, 'typed');
    if (!allowed.ok) return allowed;
    const access = await policy.resolveGatewayAccess(context.guildId);
    if (!access.ok) return access;
    const defaults = await policy.defaults(context.guildId);
    const model = input.model ?? defaults.model ?? videoModelNames(vendor).latest;
    const withDefaults: GenerationInput = {
      ...input,
      model,
      duration: input.duration ?? defaults.duration,
      resolution: input.resolution ?? defaults.resolution,
      aspectRatio: input.aspectRatio ?? defaults.aspectRatio,
    };
    // A server default must not make a request invalid that the user did not shape that way: 1080p is
    // lowered to the highest the request can have.
    const capabilities = videoModelCapabilities(model, vendor);
    if (
      input.resolution === undefined &&
      withDefaults.resolution === '1080p' &&
      (!capabilities?.fullHd || input.referenceImages.length > 0)
    ) {
      withDefaults.resolution = REFERENCE_MAX_RESOLUTION;
    }
    try {
      const taskId = newTaskId();
      const storage = storageOptionsFor(defaults.storage, storageFilename(context.guildId, taskId));
      const request = buildGenerationRequest(withDefaults, await this.#deps.endUsers.of(context.userId), storage);
      validateGeneration(request, { layer: access.layer, vendor });
      const estimateUsdTicks = estimateOf(policy, { operation: 'generate', request }, model);
      const job = variantsOf(variants ?? defaults.variants);
      const verdict = await this.#checkLimits(
        context,
        model,
        estimateUsdTicks,
        jobEstimateUsdTicks({ operation: 'generate', estimateUsdTicks, ...job }),
      );
      if (!verdict.ok) return verdict;
      return {
        ok: true,
        plan: {
          operation: 'generate',
          taskId,
          mode: generationMode(request),
          model,
          prompt: input.prompt ?? '',
          request,
          access,
          estimateUsdTicks,
          // The member is asked about what the whole job may cost: N variants are N videos.
          ...confirmationThreshold(jobEstimateUsdTicks({ operation: 'generate', estimateUsdTicks, ...job }), defaults.confirmOverUsdTicks),
          ...job,
        },
      };
    } catch (error) {
      if (error instanceof InputError) return { ok: false, notice: inputNotice(error) };
      if (error instanceof ValidationError) return validationRefusal(error);
      throw error;
    }
  }

  async editOrExtension(
    context: InteractionContext,
    operation: 'edit' | 'extend',
    input: { prompt: string; model: string | undefined; duration: number | undefined; source: VideoSourceInput },
  ): Promise<Prepared> {
    const { policy, vendor } = this.#deps;
    const allowed = await promptAllowed(policy, context.guildId, input.prompt, 'typed');
    if (!allowed.ok) return allowed;
    const access = await policy.resolveGatewayAccess(context.guildId);
    if (!access.ok) return access;
    const source = await this.#sourceUrl(context, input.source);
    if (!source.ok) return source;
    const defaults = await policy.defaults(context.guildId);
    const model = input.model ?? defaults.model ?? videoModelNames(vendor).latest;
    const user = await this.#deps.endUsers.of(context.userId);
    try {
      const validation = { layer: access.layer, vendor };
      let operationRequest: OperationRequest;
      if (operation === 'edit') {
        const request = buildEditRequest(model, input.prompt, source.url, user);
        validateEdit(request, validation);
        operationRequest = { operation, request };
      } else {
        const request = buildExtensionRequest(model, input.prompt, source.url, input.duration, user);
        validateExtension(request, validation);
        operationRequest = { operation, request };
      }
      const estimateUsdTicks = estimateOf(policy, operationRequest, model);
      const verdict = await this.#checkLimits(context, model, estimateUsdTicks);
      if (!verdict.ok) return verdict;
      return {
        ok: true,
        plan: {
          ...operationRequest,
          estimateUsdTicks,
          ...confirmationThreshold(estimateUsdTicks, defaults.confirmOverUsdTicks),
          taskId: newTaskId(),
          mode: operation,
          model,
          prompt: input.prompt,
          access,
          ...(source.taskId ? { sourceTaskId: source.taskId } : {}),
          ...(source.postedSource ? { postedSource: source.postedSource } : {}),
        },
      };
    } catch (error) {
      if (error instanceof ValidationError) return validationRefusal(error);
      throw error;
    }
  }

  /**
   * What a form's video is expected to cost with the server's defaults (its model, and for a generation its
   * resolution): per second of the length the member types (generate, extend), or for the video (an edit,
   * priced whatever its length). A form shows it before the member writes a prompt.
   */
  async formEstimate(guildId: string, operation: VideoOperation): Promise<FormEstimate> {
    const { policy, vendor } = this.#deps;
    const defaults = await policy.defaults(guildId);
    const model = defaults.model ?? videoModelNames(vendor).latest;
    if (operation === 'edit') return { usdTicks: policy.estimate({ model, operation }), per: 'video' };
    // As generation() lowers a default 1080p the model cannot make.
    const resolution =
      operation === 'generate' && defaults.resolution === '1080p' && !videoModelCapabilities(model, vendor)?.fullHd
        ? REFERENCE_MAX_RESOLUTION
        : defaults.resolution;
    return { usdTicks: policy.estimate({ model, operation, duration: 1, resolution }), per: 'second' };
  }

  /** How many variants a generation makes when its member does not say (`/config defaults variants`): a form starts there. */
  async defaultVariants(guildId: string): Promise<number> {
    return jobSize({ operation: 'generate', variants: (await this.#deps.policy.defaults(guildId)).variants });
  }

  /**
   * Whether a member may press the buttons under a task's video (Extend, Edit, Regenerate): anyone, unless
   * the server keeps them to the member who made it (`/config defaults buttons: owner`). Either way what
   * they make is the presser's own task, under their own role rules and limits. A task the bot no longer
   * knows is let through: the button's own step says so.
   */
  async buttonAccess(context: Pick<InteractionContext, 'guildId' | 'userId'>, taskRef: string): Promise<Outcome> {
    const task = await this.#deps.repository.findInGuild(context.guildId, taskRef);
    return task ? this.mayPress(context, task) : { ok: true };
  }

  /** Whether a member may press the buttons under `task`'s video, for a caller that has read the task already (see buttonAccess()). */
  async mayPress(context: Pick<InteractionContext, 'guildId' | 'userId'>, task: TaskRecord): Promise<Outcome> {
    if (task.userId === context.userId) return { ok: true };
    const { buttons } = await this.#deps.policy.defaults(context.guildId);
    return buttons === 'owner' ? refuse('video.refusal.owners-buttons', { owner: `<@${task.userId}>` }) : { ok: true };
  }

  /**
   * The same request again, as a new task with the same model (the Regenerate button), or with the
   * member's `changes` (the Change and regenerate form), held to every rule a new request is.
   */
  async regeneration(context: InteractionContext, taskRef: string, changes?: RequestChanges): Promise<Prepared> {
    const { policy, repository, vendor } = this.#deps;
    const original = await repository.findInGuild(context.guildId, taskRef);
    if (!original) return refuse('video.refusal.task-unknown');
    const pressable = await this.mayPress(context, original);
    if (!pressable.ok) return pressable;
    // The form shows the prompt to change: one left as it was is the member's now. Regenerate's and Vary's
    // is the task's, let through when it was made, perhaps before the rule that refuses it now.
    const allowed = changes
      ? await promptAllowed(policy, context.guildId, changes.prompt, 'typed')
      : await promptAllowed(policy, context.guildId, original.prompt, 'again');
    if (!allowed.ok) return allowed;
    const access = await policy.resolveGatewayAccess(context.guildId);
    if (!access.ok) return access;
    let stored = original.request;
    try {
      if (changes) stored = changedRequest(original.operation, stored, changes);
    } catch (error) {
      if (error instanceof InputError) return { ok: false, notice: inputNotice(error) };
      throw error;
    }
    if (hasExpiredAttachmentLink(stored, Date.now())) return refuse('video.refusal.expired-attachments', { operation: original.operation });
    const user = await this.#deps.endUsers.of(context.userId);
    let operationRequest: OperationRequest;
    try {
      operationRequest = parseStoredRequest(original.operation, { ...stored, user }, { layer: access.layer, vendor });
    } catch (error) {
      if (error instanceof ValidationError)
        return changes
          ? validationRefusal(error)
          : refuse('video.refusal.cannot-send-again', { message: { phrase: 'validation-error', error } });
      throw error;
    }
    const estimateUsdTicks = estimateOf(policy, operationRequest, original.model);
    const verdict = await this.#checkLimits(context, original.model, estimateUsdTicks);
    if (!verdict.ok) return verdict;
    const { confirmOverUsdTicks } = await policy.defaults(context.guildId);
    const taskId = newTaskId();
    if (operationRequest.operation === 'generate' && operationRequest.request.storage_options) {
      // A new task is stored under its own name, not over the original's file.
      operationRequest.request.storage_options = {
        ...operationRequest.request.storage_options,
        filename: storageFilename(context.guildId, taskId),
      };
    }
    return {
      ok: true,
      plan: {
        ...operationRequest,
        taskId,
        mode: operationRequest.operation === 'generate' ? generationMode(operationRequest.request) : original.mode,
        model: original.model,
        prompt: changes?.prompt ?? original.prompt,
        access,
        sourceTaskId: original.id,
        regenerated: true,
        estimateUsdTicks,
        ...confirmationThreshold(estimateUsdTicks, confirmOverUsdTicks),
      },
    };
  }

  /**
   * Whether the member may start a video of `estimateUsdTicks` (a job of `jobTicks`): refused first when the
   * estimate is not a countable amount, which no budget could be checked against and no record could keep.
   */
  async #checkLimits(context: InteractionContext, model: string, estimateUsdTicks: number, jobTicks = estimateUsdTicks): Promise<Outcome> {
    if (!isCountableEstimate(estimateUsdTicks) || !isCountableEstimate(jobTicks))
      return refuse('video.refusal.estimate-unusable', { model });
    return checkMemberLimits(this.#deps.repository, this.#deps.policy, context, estimateUsdTicks);
  }

  /**
   * The source video of an edit or extension, as an `.mp4` link the gateway accepts, from the store alone
   * (the interaction is not answered yet). A posted attachment's url is refreshed when it is submitted.
   */
  async #sourceUrl(context: InteractionContext, source: VideoSourceInput): Promise<SourceUrl> {
    if ('attachment' in source) {
      if (!isMp4Attachment(source.attachment)) return refuse('video.refusal.not-mp4', { file: source.attachment.filename });
      return { ok: true, url: source.attachment.url };
    }
    const task = await this.#deps.repository.findInGuild(context.guildId, source.taskRef);
    if (!task) return refuse('video.refusal.no-task', { ref: source.taskRef });
    if (source.byButton) {
      const pressable = await this.mayPress(context, task);
      if (!pressable.ok) return pressable;
    }
    if (task.state !== 'succeeded' || task.outcome.moderated) {
      return refuse('video.refusal.no-finished-video', { ref: source.taskRef, state: task.state });
    }
    // A lasting stored link first; else the posted attachment (refreshed before sending); else the gateway's temporary link.
    const publicUrl = task.outcome.storedFile?.publicUrl;
    if (publicUrl !== undefined && isHttpUrl(publicUrl)) return { ok: true, url: publicUrl, taskId: task.id };
    const shown = task.delivery.state === 'posted' ? task.delivery : undefined;
    if (shown?.attachmentUrl) {
      const fileName = shown.video.as === 'file' ? shown.video.fileName : undefined;
      return {
        ok: true,
        url: shown.attachmentUrl,
        taskId: task.id,
        postedSource: { channelId: task.channelId, messageId: shown.messageId, ...(fileName === undefined ? {} : { fileName }) },
      };
    }
    if (task.outcome.videoUrl) return { ok: true, url: task.outcome.videoUrl, taskId: task.id };
    return refuse('video.refusal.video-gone', { ref: source.taskRef });
  }
}

/** A job's size as the plan carries it: set only past one, within 1..MAX_VARIANTS. */
function variantsOf(asked: number | undefined): { variants?: number } {
  const variants = jobSize({ operation: 'generate', variants: asked });
  return variants > 1 ? { variants } : {};
}
