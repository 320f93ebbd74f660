import { DEFAULT_ATTACHMENT_SIZE_LIMIT, type InteractionContext } from '../../src/ports/interaction-context.ts';
import type { VideoPreparation } from '../../src/video/prepare.ts';

// A member's /video generate as the interaction edge hands it to the video part, for tests and benchmarks
// that call the part directly.

/** What prepare.generation() takes: /video generate's options, the model left to the server when unset. */
export type GenerationAsked = Parameters<VideoPreparation['generation']>[1];

/** /video generate of `prompt` with no option set, but those in `overrides`. */
export function generationInput(prompt: string | undefined, overrides: Partial<GenerationAsked> = {}): GenerationAsked {
  return {
    prompt,
    model: undefined,
    duration: undefined,
    resolution: undefined,
    aspectRatio: undefined,
    image: undefined,
    lastFrame: undefined,
    referenceImages: [],
    voices: [],
    referenceAudio: undefined,
    ...overrides,
  };
}

/** Where a member asked, and the rest of their interaction: `overrides` or no real one (token ''), received now. */
export function memberContext(
  where: Pick<InteractionContext, 'guildId' | 'channelId' | 'userId'>,
  overrides: Partial<InteractionContext> = {},
): InteractionContext {
  return {
    ...where,
    applicationId: '',
    interactionToken: '',
    interactionReceivedAt: Date.now(),
    attachmentSizeLimit: DEFAULT_ATTACHMENT_SIZE_LIMIT,
    ...overrides,
  };
}
