import { randomBytes } from 'node:crypto';
import { GatewayApiError, GatewayConnectionError, GatewayError, ValidationError } from '../gateway/errors.ts';
import type { GatewayClientPool } from '../gateway/pool.ts';
import { videoModelCapabilities, videoModelNames, type Layer } from '../gateway/spec.ts';
import type { EditRequest, ExtensionRequest, GenerationRequest, SubmittedTask } from '../gateway/types.ts';
import { validateEdit, validateExtension, validateGeneration } from '../gateway/validation.ts';
import type { Logger } from '../lib/log.ts';
import { KeyedLock } from '../lib/keyed-lock.ts';
import type { Collection, Store } from '../store.ts';
import type { VideoDelivery } from './delivery.ts';
import { describeExpiredAttachments, describeSubmissionError } from './messages.ts';
import { isTerminal, type TaskMode, type TaskRecord } from './record.ts';
import { DEFAULT_POLL_POLICY } from './poll-policy.ts';
import { parseStoredRequest } from './stored-request.ts';
import { newTaskId, type TaskRepository } from './repository.ts';
import {
  InputError,
  buildEditRequest,
  buildExtensionRequest,
  buildGenerationRequest,
  endUserId,
  generationMode,
  optionForField,
  optionNamedIn,
  hasExpiredAttachmentLink,
  storageFilename,
  storageOptionsFor,
  type AttachmentInput,
  type GenerationInput,
  type StorageDefaults,
} from './requests.ts';
import type { TaskTracker } from './tracker.ts';
import { onceUntilFailure } from '../lib/once-until-failure.ts';

// /video's work: check a request completely before anything is sent, store the task before the user
// hears it was accepted, submit it, and hand it to the tracker.

export const INTERACTION_TOKEN_LIFETIME_MS = 15 * 60_000;
/** How long a key's model list serves autocomplete before the gateway is asked again. */
const MODEL_LIST_TTL_MS = 60_000;
/** Discord drops an autocomplete answer after 3 s: a model list slower than this is left out of it. */
const SUGGESTION_WAIT_MS = 2_000;
/** Leave a margin: the interaction reached the bot a little after Discord made it, and an edit sent at 14:59 may arrive after 15:00. */
const TOKEN_SAFETY_MARGIN_MS = 30_000;

export type GatewayAccess =
  | { ok: true; apiKey: string; layer: Layer; keyId: string }
  | { ok: false; message: string };

export interface VideoDefaults {
  model: string | undefined;
  resolution: string | undefined;
  duration: number | undefined;
  aspectRatio: string | undefined;
  storage: StorageDefaults;
}

export type PolicyVerdict = { ok: true } | { ok: false; message: string };

/** What a server's settings decide for /video: its key and layer, its defaults and its limits. */
export interface GuildVideoPolicy {
  resolveGatewayAccess(guildId: string): Promise<GatewayAccess>;
  defaults(guildId: string): Promise<VideoDefaults>;
  checkLimits(request: { guildId: string; userId: string; activeTasksOfUser: number; now: number }): Promise<PolicyVerdict>;
  /** Counts a task against its member's and server's daily limits (before it is sent). */
  recordSubmission(task: TaskRecord): Promise<void>;
  /** The gateway refused it: it does not count. */
  releaseSubmission(task: TaskRecord): Promise<void>;
  recordCost(task: TaskRecord): Promise<void>;
}

export interface InteractionContext {
  guildId: string;
  channelId: string;
  userId: string;
  applicationId: string;
  interactionToken: string;
  /**
   * When this process received the interaction (Date.now()): its token expires 15 minutes from about
   * then. Not the id's snowflake time, which another clock wrote.
   */
  interactionReceivedAt: number;
  attachmentSizeLimit: number;
}

export type OperationRequest =
  | { operation: 'generate'; request: GenerationRequest }
  | { operation: 'edit'; request: EditRequest }
  | { operation: 'extend'; request: ExtensionRequest };

export type SubmissionPlan = OperationRequest & {
  /** The new task's id, made when the request is prepared: its storage filename carries it. */
  taskId: string;
  mode: TaskMode;
  model: string;
  prompt: string;
  access: Extract<GatewayAccess, { ok: true }>;
  sourceTaskId?: string;
  /** Regenerate: an earlier task's request sent again (its attachment links may have expired since). */
  regenerated?: boolean;
  /**
   * The source is a video the bot posted: Discord re-signs attachment urls, so submit() asks for a fresh
   * one. It is a network call, so it waits until the interaction has been answered.
   */
  postedSource?: { channelId: string; messageId: string };
};

export type Prepared = { ok: true; plan: SubmissionPlan } | { ok: false; message: string };

/** Where the source of an edit or extension comes from: an attachment or a finished task. */
export type VideoSourceInput = { attachment: AttachmentInput } | { taskRef: string };

export interface VideoServiceDeps {
  repository: TaskRepository;
  tracker: TaskTracker;
  delivery: VideoDelivery;
  clients: GatewayClientPool;
  policy: GuildVideoPolicy;
  store: Store;
  vendor: string;
  log: Logger;
  /** A fresh url of a posted result's mp4 (Discord re-signs attachment urls). */
  attachmentUrl(channelId: string, messageId: string): Promise<string | undefined>;
}

function parseSalt(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length < 32) throw new Error('expected a salt');
  return raw;
}

function isMp4Attachment(attachment: AttachmentInput): boolean {
  const type = attachment.contentType?.split(';')[0]?.trim().toLowerCase();
  let path: string;
  try {
    path = new URL(attachment.url).pathname.toLowerCase();
  } catch {
    return false;
  }
  return path.endsWith('.mp4') && (type === undefined || type === 'video/mp4');
}

export class VideoService {
  readonly #deps: VideoServiceDeps;
  readonly #meta: Collection<string>;
  /**
   * Limits are checked and a new task counted as one step per server (the step is a few store calls), so
   * neither a member's quick repeats nor several members at once can slip past a per-member or server cap.
   */
  readonly #admission = new KeyedLock();
  /**
   * The installation's secret salt for end-user ids: made once, kept in the store. Every caller waits for
   * the same read (or creation), and a new salt is read back after writing it, so what is used is always
   * what the store holds: two first uses cannot hash the same member with two salts.
   */
  readonly #userSalt = onceUntilFailure(() => this.#loadUserSalt());
  /** Model lists per key fingerprint, for autocomplete. */
  readonly #models = new Map<string, { at: number; models: Promise<string[]> }>();

  constructor(deps: VideoServiceDeps) {
    this.#deps = deps;
    this.#meta = deps.store.collection('video_meta', parseSalt);
  }

  async #loadUserSalt(): Promise<Buffer> {
    let salt = await this.#meta.get('user-salt');
    if (!salt) {
      await this.#meta.set('user-salt', randomBytes(32).toString('base64url'));
      salt = await this.#meta.get('user-salt');
      if (!salt) throw new Error('the user salt was written but cannot be read back');
    }
    return Buffer.from(salt, 'base64url');
  }

  async #access(guildId: string): Promise<{ ok: true; access: Extract<GatewayAccess, { ok: true }> } | { ok: false; message: string }> {
    const access = await this.#deps.policy.resolveGatewayAccess(guildId);
    return access.ok ? { ok: true, access } : access;
  }

  async #checkLimits(context: InteractionContext): Promise<PolicyVerdict> {
    const now = Date.now();
    // A task older than the poller's deadline is finished (or closed at its next poll): only younger ones are read.
    const recent = await this.#deps.repository.recentForUser(context.guildId, context.userId, undefined, now - DEFAULT_POLL_POLICY.deadlineMs);
    const active = recent.filter((task) => !isTerminal(task.state)).length;
    return this.#deps.policy.checkLimits({ guildId: context.guildId, userId: context.userId, activeTasksOfUser: active, now });
  }

  #validationMessage(error: ValidationError): string {
    return `\`${optionForField(error.field)}\`: ${error.message}`;
  }

  async prepareGeneration(context: InteractionContext, input: Omit<GenerationInput, 'model'> & { model: string | undefined }): Promise<Prepared> {
    const granted = await this.#access(context.guildId);
    if (!granted.ok) return granted;
    const defaults = await this.#deps.policy.defaults(context.guildId);
    const model = input.model ?? defaults.model ?? videoModelNames(this.#deps.vendor).latest;
    const withDefaults: GenerationInput = {
      ...input,
      model,
      duration: input.duration ?? defaults.duration,
      resolution: input.resolution ?? defaults.resolution,
      aspectRatio: input.aspectRatio ?? defaults.aspectRatio,
    };
    // A server default must not make a request invalid that the user did not shape that way.
    const capabilities = videoModelCapabilities(model, this.#deps.vendor);
    if (input.resolution === undefined && withDefaults.resolution === '1080p' && (!capabilities?.fullHd || input.referenceImages.length > 0)) {
      withDefaults.resolution = '720p';
    }
    try {
      const taskId = newTaskId();
      const storage = storageOptionsFor(defaults.storage, storageFilename(context.guildId, taskId));
      const request = buildGenerationRequest(withDefaults, endUserId(await this.#userSalt(), context.userId), storage);
      validateGeneration(request, { layer: granted.access.layer, vendor: this.#deps.vendor });
      const verdict = await this.#checkLimits(context);
      if (!verdict.ok) return verdict;
      return {
        ok: true,
        plan: { operation: 'generate', taskId, mode: generationMode(request), model, prompt: input.prompt ?? '', request, access: granted.access },
      };
    } catch (error) {
      if (error instanceof InputError) return { ok: false, message: error.message };
      if (error instanceof ValidationError) return { ok: false, message: this.#validationMessage(error) };
      throw error;
    }
  }

  /**
   * The source video of an edit or extension, as an `.mp4` link the gateway accepts, from the store alone
   * (the interaction is not answered yet). A posted attachment's url is refreshed later, in submit().
   */
  async #sourceUrl(
    context: InteractionContext,
    source: VideoSourceInput,
  ): Promise<{ ok: true; url: string; taskId?: string; postedSource?: SubmissionPlan['postedSource'] } | { ok: false; message: string }> {
    if ('attachment' in source) {
      if (!isMp4Attachment(source.attachment)) {
        return { ok: false, message: `\`video\` must be an .mp4 file (got ${source.attachment.filename}).` };
      }
      return { ok: true, url: source.attachment.url };
    }
    const task = await this.findTask(context.guildId, source.taskRef);
    if (!task) return { ok: false, message: `\`task\`: no task \`${source.taskRef}\` on this server. \`/video list\` shows yours.` };
    if (task.state !== 'succeeded' || task.outcome.moderated) {
      return { ok: false, message: `\`task\`: task \`${source.taskRef}\` has no finished video to work from (it is ${task.state}).` };
    }
    // A lasting stored link first; else the posted attachment (refreshed before sending); else the gateway's temporary link.
    const publicUrl = task.outcome.storedFile?.publicUrl;
    if (publicUrl) return { ok: true, url: publicUrl, taskId: task.id };
    const { attachmentUrl, messageId } = task.delivery;
    if (attachmentUrl && messageId) return { ok: true, url: attachmentUrl, taskId: task.id, postedSource: { channelId: task.channelId, messageId } };
    if (task.outcome.videoUrl) return { ok: true, url: task.outcome.videoUrl, taskId: task.id };
    return { ok: false, message: `\`task\`: the video of task \`${source.taskRef}\` is no longer available.` };
  }

  /** The plan with a freshly signed url of the posted source video, when Discord gives one that passes validation. */
  async #withFreshSource(plan: SubmissionPlan): Promise<SubmissionPlan> {
    const posted = plan.postedSource;
    if (!posted || plan.operation === 'generate') return plan;
    const url = await this.#deps.attachmentUrl(posted.channelId, posted.messageId).catch((error: unknown) => {
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

  async prepareEditOrExtension(
    context: InteractionContext,
    operation: 'edit' | 'extend',
    input: { prompt: string; model: string | undefined; duration: number | undefined; source: VideoSourceInput },
  ): Promise<Prepared> {
    const granted = await this.#access(context.guildId);
    if (!granted.ok) return granted;
    const source = await this.#sourceUrl(context, input.source);
    if (!source.ok) return source;
    const defaults = await this.#deps.policy.defaults(context.guildId);
    const model = input.model ?? defaults.model ?? videoModelNames(this.#deps.vendor).latest;
    const user = endUserId(await this.#userSalt(), context.userId);
    try {
      const validation = { layer: granted.access.layer, vendor: this.#deps.vendor };
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
      const verdict = await this.#checkLimits(context);
      if (!verdict.ok) return verdict;
      return {
        ok: true,
        plan: {
          ...operationRequest,
          taskId: newTaskId(),
          mode: operation,
          model,
          prompt: input.prompt,
          access: granted.access,
          ...(source.taskId ? { sourceTaskId: source.taskId } : {}),
          ...(source.postedSource ? { postedSource: source.postedSource } : {}),
        },
      };
    } catch (error) {
      if (error instanceof ValidationError) return { ok: false, message: this.#validationMessage(error) };
      throw error;
    }
  }

  /** The same request again, as a new task (the Regenerate button). */
  async prepareRegeneration(context: InteractionContext, taskRef: string): Promise<Prepared> {
    const original = await this.findTask(context.guildId, taskRef);
    if (!original) return { ok: false, message: 'That task is no longer known to the bot, so it cannot be regenerated.' };
    const granted = await this.#access(context.guildId);
    if (!granted.ok) return granted;
    const verdict = await this.#checkLimits(context);
    if (!verdict.ok) return verdict;
    if (hasExpiredAttachmentLink(original.request, Date.now())) return { ok: false, message: describeExpiredAttachments(original.operation) };
    const user = endUserId(await this.#userSalt(), context.userId);
    let operationRequest: OperationRequest;
    try {
      operationRequest = parseStoredRequest(original.operation, { ...original.request, user }, { layer: granted.access.layer, vendor: this.#deps.vendor });
    } catch (error) {
      if (error instanceof ValidationError) return { ok: false, message: `That task cannot be sent again as it was: ${error.message}` };
      throw error;
    }
    const taskId = newTaskId();
    if (operationRequest.operation === 'generate' && operationRequest.request.storage_options) {
      // A new task is stored under its own name, not over the original's file.
      operationRequest.request.storage_options = { ...operationRequest.request.storage_options, filename: storageFilename(context.guildId, taskId) };
    }
    return {
      ok: true,
      plan: {
        ...operationRequest,
        taskId,
        mode: original.mode,
        model: original.model,
        prompt: original.prompt,
        access: granted.access,
        sourceTaskId: original.id,
        regenerated: true,
      },
    };
  }

  /**
   * Submits a prepared task. The interaction must be deferred: the card is its reply. Stored before the
   * gateway is called, so a crash mid-submission is reported rather than forgotten.
   */
  async submit(prepared: SubmissionPlan, context: InteractionContext): Promise<TaskRecord> {
    const { repository, clients, delivery, tracker, policy, log } = this.#deps;
    const plan = await this.#withFreshSource(prepared);
    const now = Date.now();
    const id = plan.taskId;
    let task: TaskRecord = {
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
      request: { ...plan.request },
      ...(plan.sourceTaskId ? { sourceTaskId: plan.sourceTaskId } : {}),
      createdAt: now,
      state: 'submitting',
      polls: 0,
      pollErrors: 0,
      outcome: {},
      card: {
        applicationId: context.applicationId,
        interactionToken: context.interactionToken,
        tokenExpiresAt: context.interactionReceivedAt + INTERACTION_TOKEN_LIFETIME_MS - TOKEN_SAFETY_MARGIN_MS,
      },
      attachmentSizeLimit: context.attachmentSizeLimit,
      delivery: { state: 'waiting', nonce: id, attempts: 0 },
    };
    await this.#admission.run(context.guildId, async () => {
      const verdict = await this.#checkLimits(context);
      if (!verdict.ok) throw new SubmissionRefusedError(verdict.message, undefined);
      await repository.create(task);
      await policy.recordSubmission(task);
    });

    const gateway = clients.get(plan.access.apiKey, plan.access.layer);
    let submitted: SubmittedTask;
    try {
      submitted =
        plan.operation === 'generate'
          ? await gateway.generate(plan.request)
          : plan.operation === 'edit'
            ? await gateway.edit(plan.request)
            : await gateway.extend(plan.request);
    } catch (error) {
      const refusal = refusalMessage(error, plan);
      if (refusal !== undefined) {
        // Refused, or never delivered: nothing exists at the gateway and nothing was charged.
        task = { ...task, state: 'failed', finishedAt: Date.now(), delivery: { ...task.delivery, state: 'closed' } };
        await repository.save(task);
        await policy.releaseSubmission(task);
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
    await repository.save(task);
    log.info('video task submitted', { task: id, gatewayTask: submitted.id, layer: task.layer, operation: task.operation, guild: task.guildId });
    task = await delivery.showAndSave(task);
    tracker.track(task);
    return task;
  }

  /** A task of this server by the bot's ref (`v…`) or by its gateway task id. */
  async findTask(guildId: string, ref: string): Promise<TaskRecord | undefined> {
    const trimmed = ref.trim();
    const task =
      (await this.#deps.repository.get(trimmed)) ??
      (await this.#deps.repository.getByGatewayId('compat', trimmed)) ??
      (await this.#deps.repository.getByGatewayId('native', trimmed));
    return task?.guildId === guildId ? task : undefined;
  }

  async recentTasks(guildId: string, userId: string, limit = 10): Promise<TaskRecord[]> {
    return this.#deps.repository.recentForUser(guildId, userId, limit);
  }

  /**
   * Every model the server's key may use (`/v1/models`), for autocomplete: asked once a minute per key,
   * not on every keystroke.
   */
  async models(guildId: string): Promise<string[]> {
    const access = await this.#deps.policy.resolveGatewayAccess(guildId);
    if (!access.ok) return [];
    const now = Date.now();
    const cached = this.#models.get(access.keyId);
    if (cached && now - cached.at < MODEL_LIST_TTL_MS) return cached.models;
    for (const [keyId, entry] of this.#models) if (now - entry.at >= MODEL_LIST_TTL_MS) this.#models.delete(keyId);
    const models = this.#deps.clients
      .get(access.apiKey, access.layer)
      .listModels()
      .then((list) => list.map((model) => model.id));
    const entry = { at: now, models };
    this.#models.set(access.keyId, entry);
    // A failed answer is not kept: the next keystroke asks again.
    models.catch(() => {
      if (this.#models.get(access.keyId) === entry) this.#models.delete(access.keyId);
    });
    return models;
  }

  async videoModels(guildId: string): Promise<string[]> {
    return (await this.models(guildId)).filter((id) => videoModelCapabilities(id, this.#deps.vendor) !== undefined);
  }

  /**
   * The models to suggest while a member types: what the gateway says within SUGGESTION_WAIT_MS, else
   * none this keystroke (the request goes on and fills the cache for the next one). Never throws.
   */
  async suggestedModels(guildId: string, kind: 'video' | 'any'): Promise<string[]> {
    const list = (kind === 'video' ? this.videoModels(guildId) : this.models(guildId)).catch((): string[] => []);
    let timer: NodeJS.Timeout | undefined;
    const tooSlow = new Promise<string[]>((resolve) => {
      timer = setTimeout(() => resolve([]), SUGGESTION_WAIT_MS);
    });
    try {
      return await Promise.race([list, tooSlow]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The request fields that carry a link the gateway fetches. */
const LINK_FIELDS = /^(image|last_frame|reference_images|reference_audios|video)\b/;

/** What to tell the user when a submission certainly created nothing, or undefined when it may have. */
function refusalMessage(error: unknown, plan: SubmissionPlan): string | undefined {
  const model = plan.model;
  if (plan.regenerated && error instanceof GatewayApiError && error.status === 400 && LINK_FIELDS.test(error.param ?? '')) {
    return describeExpiredAttachments(plan.operation);
  }
  if (error instanceof GatewayApiError || error instanceof ValidationError) {
    return describeSubmissionError({
      code: error.code,
      status: error.status,
      message: error instanceof GatewayApiError ? error.serverMessage : error.message,
      param: error.param !== undefined ? optionForField(error.param) : error instanceof GatewayApiError && error.status === 400 ? optionNamedIn(error.serverMessage) : undefined,
      requestId: error.requestId,
      model,
    });
  }
  if (error instanceof GatewayConnectionError && !error.requestSent) {
    return 'The video service cannot be reached right now, so nothing was sent or charged. Try again in a minute.';
  }
  return undefined;
}

/** The gateway refused a submission; `message` is what the user should read. */
export class SubmissionRefusedError extends Error {
  /** The stored task, when the refusal came from the gateway (a limit refuses before anything is stored). */
  readonly task: TaskRecord | undefined;
  constructor(message: string, task: TaskRecord | undefined) {
    super(message);
    this.name = 'SubmissionRefusedError';
    this.task = task;
  }
}
