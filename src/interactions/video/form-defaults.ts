import type { VideoOperation } from '../../gateway/spec.ts';
import { settledWithin } from '../../lib/wait-until.ts';
import type { Services } from '../../services.ts';
import type { FormEstimate } from '../../video/plan.ts';

// What a form shows before the member types, read from the store: a form must be the press's first
// answer, within Discord's 3 s, so each read is bounded and the form goes without it when the store is slow.

/** How long a form waits for its estimate (the server's defaults, from the store) before it is shown without one: Discord's 3 s run from the press. */
const FORM_ESTIMATE_WITHIN_MS = 1_000;

/** What a form's video is expected to cost with the server's defaults, when the store says in time for the form. */
export async function formEstimate(services: Services, guildId: string, operation: VideoOperation): Promise<FormEstimate | undefined> {
  const estimating = services.video.prepare.formEstimate(guildId, operation).catch((error: unknown) => {
    services.log.warn('could not estimate the video of a form; it is shown without its estimate', { error });
    return undefined;
  });
  return settledWithin(estimating, FORM_ESTIMATE_WITHIN_MS);
}

/**
 * How many variants a form's select starts at: the server's default (`/config defaults variants`), or one
 * when the store does not say in time for the form.
 */
export async function formVariants(services: Services, guildId: string): Promise<number> {
  const reading = services.video.prepare.defaultVariants(guildId).catch((error: unknown) => {
    services.log.warn("could not read the server's default variants for a form; it starts at one", { error });
    return undefined;
  });
  return (await settledWithin(reading, FORM_ESTIMATE_WITHIN_MS)) ?? 1;
}
