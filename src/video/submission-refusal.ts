import { GatewayApiError, GatewayConnectionError, GatewayError, ValidationError, isModerationCode } from '../gateway/errors.ts';
import { notice, type Notice } from '../wording/notice.ts';
import type { SubmissionPlan } from './plan.ts';
import { optionForField, optionNamedIn } from './requests.ts';

// What a member is told when the gateway refused to make their video: only when nothing can exist there.

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
  // Its own words, which say already that nothing was charged; the moderators' log records it.
  if (error instanceof GatewayApiError && isModerationCode(error.code)) return notice('gateway-error.moderated');
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
