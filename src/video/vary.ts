import { ValidationError } from '../gateway/errors.ts';
import type { GenerationRequest } from '../gateway/types.ts';
import { validateGeneration } from '../gateway/validation.ts';
import { storedIssue } from '../wording/validation.ts';
import type { Logger } from '../lib/log.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';
import type { DownloadFiles } from './download-files.ts';
import { frameDataUri, type FirstFrame, type FirstFrames } from './first-frame.ts';
import type { GatewayResolver } from './gateway-resolver.ts';
import type { Prepared, SubmissionPlan } from './plan.ts';
import type { VideoPreparation } from './prepare.ts';
import type { TaskRecord } from './record.ts';
import type { TaskRepository } from './repository.ts';
import { generationMode } from './requests.ts';

// Vary: a variant's prompt and settings again, as a new job of one, with that variant's first frame as
// `image` when the gateway takes one for the request (docs/gateway.md, "Generation modes"). The frame comes
// from the variant's video, fetched again from the gateway (the delivered file is removed once posted)
// and decoded by a program of its own (first-frame.ts). When there is no frame to send (the decoder, an
// optional dependency, not installed included), the request goes as it was, and its card says why in one
// line, worded when it is stored in the language the card is drawn in (the server's), as the card's other
// stored texts are.

export interface VariationDeps {
  prepare: VideoPreparation;
  repository: TaskRepository;
  /** The client a task is followed with: its server's current key, on its layer. */
  resolver: GatewayResolver;
  files: DownloadFiles;
  frames: FirstFrames;
  vendor: string;
  log: Logger;
}

/** Why a variant's first frame was not sent: a message of the catalogs (`video.card.vary-note.<reason>`). */
type NoFrame =
  | { reason: 'unknown-variant' | 'not-generation' | 'no-video' | 'no-decoder' | 'not-decoded' }
  | { reason: 'no-image'; broken: ValidationError };

/** Within this, a frame's width to height is the ratio named (video sizes are rounded to even pixels). */
const RATIO_TOLERANCE = 0.02;

function ratioOf(aspectRatio: string): number | undefined {
  const match = /^(\d+):(\d+)$/.exec(aspectRatio);
  return match ? Number(match[1]) / Number(match[2]) : undefined;
}

/**
 * The request with the frame as its first frame. An `aspect_ratio` the frame does not have is left out:
 * named, it would stretch the picture; left out, the video follows the picture's own ratio.
 */
function withFrame(request: GenerationRequest, frame: FirstFrame): GenerationRequest {
  const { aspect_ratio: aspectRatio, ...rest } = request;
  const named = aspectRatio === undefined ? undefined : ratioOf(aspectRatio);
  const fits = named !== undefined && Math.abs(frame.width / frame.height / named - 1) <= RATIO_TOLERANCE;
  return { ...rest, ...(fits ? { aspect_ratio: aspectRatio } : {}), image: { url: frameDataUri(frame) } };
}

export class Variation {
  readonly #deps: VariationDeps;

  constructor(deps: VariationDeps) {
    this.#deps = deps;
  }

  /** Vary on task `taskRef`: held to every rule Regenerate is, then given the variant's first frame when it can be. */
  async prepare(context: InteractionContext, taskRef: string): Promise<Prepared> {
    const prepared = await this.#deps.prepare.regeneration(context, taskRef);
    if (!prepared.ok) return prepared;
    const { plan } = prepared;
    const variant = await this.#deps.repository.findInGuild(context.guildId, taskRef);
    const framed = variant ? await this.#withFirstFrame(plan, variant) : { reason: 'unknown-variant' as const };
    if ('plan' in framed) return { ok: true, plan: framed.plan };
    // Stored with the task as a reason (and the rule broken), worded when a card is drawn, in its reader's language.
    const varyNote =
      framed.reason === 'no-image' ? { reason: framed.reason, broken: storedIssue(framed.broken) } : { reason: framed.reason };
    return { ok: true, plan: { ...plan, varyNote } };
  }

  async #withFirstFrame(plan: SubmissionPlan, variant: TaskRecord): Promise<{ plan: SubmissionPlan } | NoFrame> {
    if (plan.operation !== 'generate') return { reason: 'not-generation' };
    if (variant.state !== 'succeeded' || variant.outcome.moderated || variant.gatewayId === undefined) return { reason: 'no-video' };
    // Checked before anything is fetched: the same request with a picture as its first frame.
    const validation = { layer: plan.access.layer, vendor: this.#deps.vendor };
    const probe = withFrame(plan.request, { mediaType: 'image/png', bytes: Buffer.alloc(1), width: 16, height: 9 });
    try {
      validateGeneration(probe, validation);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return { reason: 'no-image', broken: error };
    }
    // Before the video is fetched: without the decoder, there is nothing to fetch it for.
    if (!this.#deps.frames.installed) return { reason: 'no-decoder' };
    const frame = await this.#firstFrame(variant);
    if (!frame) return { reason: 'not-decoded' };
    const request = withFrame(plan.request, frame);
    try {
      validateGeneration(request, validation);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return { reason: 'no-image', broken: error };
    }
    return { plan: { ...plan, request, mode: generationMode(request) } };
  }

  /** The variant's video, fetched from the gateway as delivery fetches it, decoded; undefined (logged) when it cannot be. */
  async #firstFrame(variant: TaskRecord): Promise<FirstFrame | undefined> {
    const { resolver, files, frames, log } = this.#deps;
    const path = await files.pathFor(variant.id);
    try {
      const gateway = await resolver.clientFor(variant);
      const result = await gateway.getTask(variant.gatewayId ?? '');
      await gateway.saveVideo(result, { maxBytes: frames.maxInputBytes, path });
      const decoded = await frames.extract(path);
      if (decoded.ok) return decoded.frame;
      log.warn("could not decode a variant's first frame; Vary sends its request as it was", { task: variant.id, reason: decoded.message });
    } catch (error) {
      log.warn("could not fetch a variant's video for its first frame; Vary sends its request as it was", { task: variant.id, error });
    } finally {
      await files.remove(path);
    }
    return undefined;
  }
}
