import { isRecord } from '../lib/json.ts';
import { z } from 'zod';
import { ValidationError } from '../gateway/errors.ts';
import { LAYERS, VIDEO_OPERATIONS, type Layer } from '../gateway/spec.ts';
import type { DiscordOutbox, InteractionMessage } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import type { GuildVideoPolicy } from '../ports/guild-policy.ts';
import { tokenUsableUntil, type InteractionContext } from '../ports/interaction-context.ts';
import { versionedRecord, type Collection, type Store } from '../store/index.ts';
import type { Prepared, SubmissionPlan } from './plan.ts';
import { TASK_MODES, memberLanguage, memberLanguageShape, varyNoteSchema, withMemberLanguage, type MemberLanguage } from './record.ts';
import { parseStoredRequest } from './stored-request.ts';
import { heldQuestion, heldQuestionClosed, type ConfirmationQuestion } from './wording.ts';
import { refuse } from '../wording/notice.ts';
import { promptAllowed } from './prompt-rules.ts';

// A video estimated over the server's threshold (`/config budget confirm_over_usd`) waits for its member's
// confirm button: its prepared plan is kept in the store (without the server's key, which is looked up
// again when it is pressed) for as long as the question's interaction can still be answered, keyed by the
// plan's task id, which its buttons carry. Nothing is sent to the gateway and nothing is reserved before
// the press; the press submits it as any video is submitted (the server's blocked words, limits and
// budgets checked again then: a moderator may have changed them while the question waited).

/** A kept plan outlives its question by this much, so the question's own expiry still finds it to say so. */
const KEPT_BEYOND_EXPIRY_MS = 60_000;

/** The version of a held video's record this code writes (src/store/versioned.ts). */
const HELD_VIDEO_VERSION = 2;

/** A plan waiting for its member, as the store keeps it, with the member's language its question is worded in. */
export interface HeldVideo extends MemberLanguage {
  v: typeof HELD_VIDEO_VERSION;
  guildId: string;
  channelId: string;
  userId: string;
  /** The private question, addressed through the token of the interaction that asked it. */
  question: InteractionMessage;
  /** The question can no longer be edited after this (its interaction's token ends). */
  expiresAt: number;
  plan: HeldPlan;
}

/** A submission plan without the server's key: everything else it needs, to be sent when confirmed. */
export type HeldPlan = Omit<SubmissionPlan, 'access' | 'operation' | 'request'> & {
  operation: SubmissionPlan['operation'];
  request: Readonly<Record<string, unknown>>;
  layer: Layer;
  keyId: string;
};

/** What a press of a held video's button found. */
export type TakenVideo = { status: 'taken'; held: HeldVideo } | { status: 'gone' } | { status: 'others'; userId: string };

function heldPlanOf(plan: SubmissionPlan): HeldPlan {
  const { access, operation, request, ...rest } = plan;
  return { ...rest, operation, request: { ...request }, layer: access.layer, keyId: access.keyId };
}

const heldVideoSchema: z.ZodType<HeldVideo> = z.object({
  v: z.literal(HELD_VIDEO_VERSION),
  guildId: z.string(),
  channelId: z.string(),
  userId: z.string(),
  question: z.object({ applicationId: z.string(), interactionToken: z.string(), messageId: z.string() }),
  expiresAt: z.number(),
  plan: z.object({
    operation: z.enum(VIDEO_OPERATIONS),
    request: z.record(z.string(), z.unknown()),
    taskId: z.string(),
    mode: z.enum(TASK_MODES),
    model: z.string(),
    prompt: z.string(),
    layer: z.enum(LAYERS),
    keyId: z.string(),
    estimateUsdTicks: z.number(),
    confirmOverUsdTicks: z.number().optional(),
    sourceTaskId: z.string().optional(),
    regenerated: z.boolean().optional(),
    varyNote: varyNoteSchema.optional(),
    // A job of several variants is confirmed as one: all of them are sent on the press.
    variants: z.number().optional(),
    postedSource: z.object({ channelId: z.string(), messageId: z.string(), fileName: z.string().optional() }).optional(),
  }),
  ...memberLanguageShape,
});

/** Versions 0 and 1 named the plan's amounts `estimateTicks` and `confirmOverTicks`: USD ticks, now named so. */
function withUsdTickNames(held: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (!isRecord(held.plan)) return { ...held };
  const { estimateTicks, confirmOverTicks, ...plan } = held.plan;
  return {
    ...held,
    plan: {
      ...plan,
      estimateUsdTicks: estimateTicks,
      ...(confirmOverTicks === undefined ? {} : { confirmOverUsdTicks: confirmOverTicks }),
    },
  };
}

/**
 * Reads a held video of any version. Version 0 (no `v`, held before 2026-11-29): one held before the
 * member's language was kept (2026-11-28) is worded in English; Vary's note worded in it then (`plan.note`)
 * goes, as no reason can be read back from its words (the card is drawn without it). Versions 0 and 1
 * named the plan's amounts `…Ticks` (withUsdTickNames).
 */
export const parseHeldVideo = versionedRecord<HeldVideo>({
  name: 'held video',
  version: HELD_VIDEO_VERSION,
  schema: heldVideoSchema,
  upgrade: (stored, from) => withUsdTickNames(from >= 1 ? stored : withMemberLanguage(stored)),
});

export interface VideoConfirmationsDeps {
  store: Store;
  policy: Pick<GuildVideoPolicy, 'resolveGatewayAccess' | 'blockedWordIn'>;
  outbox: Pick<DiscordOutbox, 'editInteractionMessage'>;
  vendor: string;
  log: Logger;
}

export class VideoConfirmations {
  readonly #deps: VideoConfirmationsDeps;
  readonly #held: Collection<HeldVideo>;
  /** The expiries this process armed, by task id: a question left unanswered says so when it expires. */
  readonly #expiries = new Map<string, NodeJS.Timeout>();

  constructor(deps: VideoConfirmationsDeps) {
    this.#deps = deps;
    this.#held = deps.store.collection('video_held_plans', parseHeldVideo);
  }

  /**
   * Keeps a plan until its member answers, before the question is shown (a quick press must find it), and
   * returns the question. The question is the interaction's own reply unless shown() says otherwise.
   */
  async hold(plan: SubmissionPlan, context: InteractionContext, now = Date.now()): Promise<ConfirmationQuestion> {
    const expiresAt = tokenUsableUntil(context);
    const held: HeldVideo = {
      v: HELD_VIDEO_VERSION,
      guildId: context.guildId,
      channelId: context.channelId,
      userId: context.userId,
      question: { applicationId: context.applicationId, interactionToken: context.interactionToken, messageId: '@original' },
      expiresAt,
      plan: heldPlanOf(plan),
      ...memberLanguage(context),
    };
    await this.#held.set(plan.taskId, held, expiresAt - now + KEPT_BEYOND_EXPIRY_MS);
    return heldQuestion(held, plan);
  }

  /**
   * The question is shown (as `messageId`, when it is a follow-up rather than the reply): its address is
   * kept, and it is told when it expires unanswered (by this process: after a restart, its own words
   * still say when it expires, and a late press is told it is no longer open).
   */
  async shown(taskId: string, messageId: string, now = Date.now()): Promise<void> {
    const held =
      messageId === '@original'
        ? await this.#held.get(taskId)
        : await this.#held.update(taskId, (current) =>
            current ? { ...current, question: { ...current.question, messageId } } : undefined,
          );
    if (!held) return;
    const timer = setTimeout(
      () => {
        this.#expiries.delete(taskId);
        void this.#expire(taskId);
      },
      Math.max(0, held.expiresAt - now),
    );
    timer.unref();
    this.#expiries.set(taskId, timer);
  }

  /**
   * Takes a held video for its member's press: once, whichever worker or press comes first (the store's
   * delete decides), and never for another member, nor after it expired.
   */
  async take(taskId: string, member: { guildId: string; userId: string }, now = Date.now()): Promise<TakenVideo> {
    const held = await this.#held.get(taskId);
    if (!held || held.guildId !== member.guildId) return { status: 'gone' };
    if (held.userId !== member.userId) return { status: 'others', userId: held.userId };
    if (!(await this.#held.delete(taskId)) || now >= held.expiresAt) return { status: 'gone' };
    clearTimeout(this.#expiries.get(taskId));
    this.#expiries.delete(taskId);
    return { status: 'taken', held };
  }

  /** A confirmed video's plan, with the server's key looked up again (it is never kept in the store). */
  async planOf(held: HeldVideo): Promise<Prepared> {
    const { policy, vendor } = this.#deps;
    const allowed = await promptAllowed(policy, held.guildId, held.plan.prompt, held.plan.regenerated ? 'again' : 'typed');
    if (!allowed.ok) return allowed;
    const access = await policy.resolveGatewayAccess(held.guildId);
    if (!access.ok) return access;
    const { ok: _resolved, ...credentials } = access;
    const { request, layer, keyId: _keptKeyId, operation, ...rest } = held.plan;
    if (access.layer !== layer) return refuse('video.confirm.settings-changed');
    try {
      return { ok: true, plan: { ...rest, ...parseStoredRequest(operation, request, { layer, vendor }), access: credentials } };
    } catch (error) {
      if (error instanceof ValidationError) return refuse('video.confirm.cannot-send', { message: { phrase: 'validation-error', error } });
      throw error;
    }
  }

  /** Edits the question to say how it ended and removes its buttons; a question that cannot be edited any more is only logged. */
  async close(held: HeldVideo, how: 'confirmed' | 'refused' | 'expired'): Promise<void> {
    try {
      await this.#deps.outbox.editInteractionMessage(held.question, {
        content: heldQuestionClosed(held, how),
        components: [],
      });
    } catch (error) {
      this.#deps.log.warn('could not edit the question of a video that waited for confirmation', { task: held.plan.taskId, how, error });
    }
  }

  async #expire(taskId: string): Promise<void> {
    try {
      const held = await this.#held.get(taskId);
      if (!held || !(await this.#held.delete(taskId))) return;
      await this.close(held, 'expired');
    } catch (error) {
      this.#deps.log.warn('could not close a question that expired unanswered', { task: taskId, error });
    }
  }

  /** Stops the expiries this process armed (the bot is stopping; the questions' own words still say when they expire). */
  stop(): void {
    for (const timer of this.#expiries.values()) clearTimeout(timer);
    this.#expiries.clear();
  }
}
