import {
  DownloadRefusedError,
  GatewayApiError,
  GatewayConnectionError,
  NotAVideoError,
  ValidationError,
  VideoUnavailableError,
  isModerationCode,
  type GatewayError,
} from '../gateway/errors.ts';
import { translator, type Locale } from '../i18n/index.ts';
import { describeValidationError } from './validation.ts';

// Every gateway error a member reads (a refused submission, a video that cannot be fetched, a key that
// does not work, a voice conversation that cannot start) is worded here, by its code and status, never
// by its message text (docs/gateway.md, "Errors"): one wording per problem, wherever it shows up, in the
// language of whoever reads it. What the gateway itself said (its message) is quoted as it came.

/** What the key was used for, finishing "is not allowed to …". */
export type GatewayPurpose = 'use-model' | 'fetch-video' | 'list-models' | 'voice-model';

export interface GatewayErrorContext {
  /**
   * Whose key the gateway judged: the server's key in use, a key an admin offered in `/config key`, or the
   * operator's key that a member's own install of the app uses (only the operator can do anything about it).
   */
  key: 'in-use' | 'offered' | 'operator';
  /** What the key was used for: use the request's `model`, fetch the finished video, list the models, use the voice model. */
  purpose: GatewayPurpose;
  /** The model the request named, for a refusal of that model. */
  model?: string | undefined;
  /** The option the member must fix when the gateway names a field (the Discord option, not the wire field). */
  option?: string | undefined;
}

/** `text`, with the request id support can look up when there is one. */
export function withRequestId(locale: Locale, text: string, requestId: string | undefined): string {
  return requestId ? translator(locale)('gateway-error.with-request-id', { text, requestId }) : text;
}

/** A host or address the gateway named, when it is plain enough to show as code; else undefined. */
function plainHost(text: string): string | undefined {
  return /^[a-z0-9.:-]{1,100}$/i.test(text) ? text : undefined;
}

/** A video address the bot would not use, in words: what was wrong with it and what the bot did. */
function explainRefusedDownload(locale: Locale, error: GatewayError): string | undefined {
  const tr = translator(locale);
  if (error instanceof DownloadRefusedError) {
    const host = plainHost(error.host);
    const address = plainHost(error.address);
    const where = [host, address]
      .filter((part, index, parts) => part !== undefined && parts.indexOf(part) === index)
      .map((part) => `\`${part}\``);
    return tr('gateway-error.not-public', { where: where.join(', '), named: where.length > 0 ? 'yes' : 'no' });
  }
  if (error instanceof NotAVideoError) {
    const type = /^[\w.+-]+\/[\w.+-]+/.exec(error.contentType ?? '')?.[0];
    return tr('gateway-error.not-a-video', { type: type ? `\`${type}\`` : '', named: type ? 'yes' : 'no' });
  }
  if (error instanceof VideoUnavailableError && error.reason === 'not-http') return tr('gateway-error.not-http');
  return undefined;
}

/** What the status and code say went wrong, in words for a member; the request id is added by the caller. */
function explain(locale: Locale, error: GatewayError, context: GatewayErrorContext): string {
  const tr = translator(locale);
  const refused = explainRefusedDownload(locale, error);
  if (refused !== undefined) return refused;
  const code = error.code;
  const said = `${error.status ?? ''}${code ? ` ${code}` : ''}`.trim();
  const model = context.model ? `\`${context.model}\`` : '';
  const option = context.option ? `\`${context.option}\`` : '';
  // A rule the client found broken before sending: nothing reached the gateway, so it is the request that is
  // not valid (its code is invalid_request_error too), worded for the reader.
  if (error instanceof ValidationError)
    return tr('gateway-error.invalid', { option, named: option ? 'yes' : 'no', message: describeValidationError(locale, error) });
  // Whatever its status: the provider's moderation refused the request, so nothing was made or charged.
  if (isModerationCode(code)) return tr('gateway-error.moderated');
  if (code === 'invalid_api_key' || error.status === 401) return tr('gateway-error.key-refused', { key: context.key, said });
  const operators = context.key === 'operator';
  if (code === 'permission_denied' || error.status === 403)
    return tr(operators ? 'gateway-error.not-allowed.operator' : 'gateway-error.not-allowed', {
      purpose: context.purpose.replaceAll('-', '_'),
      model: model || tr('gateway-error.this-model'),
      said,
    });
  switch (code) {
    case 'insufficient_quota':
      return tr(operators ? 'gateway-error.quota.operator' : 'gateway-error.quota');
    case 'rate_limit':
      return tr('gateway-error.rate-limit');
    case 'too_many_requests':
      return tr(operators ? 'gateway-error.too-many.operator' : 'gateway-error.too-many');
    case 'model_not_found':
      return tr('gateway-error.unknown-model', { model: model || tr('gateway-error.this-model') });
    case 'invalid_request_error': {
      // What the gateway said is quoted as it came.
      const message = error instanceof GatewayApiError ? error.serverMessage : error.message;
      return tr('gateway-error.rejected', { option, named: option ? 'yes' : 'no', message });
    }
    case 'overloaded':
    case 'upstream_error':
    case 'upstream_timeout_no_response':
      return tr('gateway-error.trouble', { code });
    default:
      break;
  }
  if (error instanceof GatewayConnectionError) return tr('gateway-error.unreachable');
  if (error instanceof GatewayApiError) {
    if (error.status >= 500) return tr('gateway-error.trouble-http', { said });
    return tr('gateway-error.refused-http', { said, message: error.serverMessage });
  }
  return tr('gateway-error.unreadable');
}

/** A gateway error in words for a member (in `locale`), with the request id support can look up. */
export function describeGatewayError(locale: Locale, error: GatewayError, context: GatewayErrorContext): string {
  return withRequestId(locale, explain(locale, error, context), error.requestId);
}
