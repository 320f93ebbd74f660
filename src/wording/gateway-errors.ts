import {
  DownloadRefusedError,
  GatewayApiError,
  GatewayConnectionError,
  NotAVideoError,
  ValidationError,
  VideoUnavailableError,
  type GatewayError,
} from '../gateway/errors.ts';

// Every gateway error a member reads (a refused submission, a video that cannot be fetched, a key that
// does not work, a voice conversation that cannot start) is worded here, by its code and status, never
// by its message text (docs/gateway.md, "Errors"): one wording per problem, wherever it shows up.

export interface GatewayErrorContext {
  /** Whose key the gateway judged: the server's key in use, or a key an admin offered in `/config key`. */
  key: 'in-use' | 'offered';
  /** What the key was used for, to finish "is not allowed to …": "use `svc-imagine-video`", "fetch the finished video". */
  purpose: string;
  /** The model the request named, for a refusal of that model. */
  model?: string | undefined;
  /** The option the member must fix when the gateway names a field (the Discord option, not the wire field). */
  option?: string | undefined;
}

/** `text`, with the request id support can look up when there is one. */
export function withRequestId(text: string, requestId: string | undefined): string {
  return requestId ? `${text} (request id \`${requestId}\`)` : text;
}

/** A host or address the gateway named, when it is plain enough to show as code; else undefined. */
function plainHost(text: string): string | undefined {
  return /^[a-z0-9.:-]{1,100}$/i.test(text) ? text : undefined;
}

/** A video address the bot would not use, in words: what was wrong with it and what the bot did. */
function explainRefusedDownload(error: GatewayError): string | undefined {
  if (error instanceof DownloadRefusedError) {
    const host = plainHost(error.host);
    const address = plainHost(error.address);
    const where = [host, address]
      .filter((part, index, parts) => part !== undefined && parts.indexOf(part) === index)
      .map((part) => `\`${part}\``);
    return `The gateway gave an address for the video ${where.length > 0 ? `(${where.join(', ')}) ` : ''}that is not on the public internet, so the bot did not fetch it. The bot's operator can allow a host with DOWNLOAD_ALLOWED_HOSTS.`;
  }
  if (error instanceof NotAVideoError) {
    const type = /^[\w.+-]+\/[\w.+-]+/.exec(error.contentType ?? '')?.[0];
    return `The gateway's video address answered with something that is not a video${type ? ` (\`${type}\`)` : ''}, so the bot did not post it.`;
  }
  if (error instanceof VideoUnavailableError && error.reason === 'not-http') {
    return 'The gateway gave an address for the video that is not an http(s) link, so the bot did not fetch it.';
  }
  return undefined;
}

/** What the status and code say went wrong, in words for a member; the request id is added by the caller. */
function explain(error: GatewayError, context: GatewayErrorContext): string {
  const refused = explainRefusedDownload(error);
  if (refused !== undefined) return refused;
  const code = error.code;
  const said = `${error.status ?? ''}${code ? ` ${code}` : ''}`.trim();
  const model = context.model ? `\`${context.model}\`` : 'this model';
  if (code === 'invalid_api_key' || error.status === 401) {
    return context.key === 'offered'
      ? `The gateway refused this key (${said}): check that it was copied whole and is still active.`
      : `The gateway refused the server's key (${said}): a server admin can set a working one with \`/config key\`.`;
  }
  if (code === 'permission_denied' || error.status === 403) {
    return `This server's key is not allowed to ${context.purpose} (${said}): a server admin can check the key's access, or set another with \`/config key\`.`;
  }
  switch (code) {
    case 'insufficient_quota':
      return "This server's gateway quota is used up, or this would cost more than what is left. A server admin can top it up.";
    case 'rate_limit':
      return 'The gateway is rate-limiting this key right now. Try again in a minute.';
    case 'too_many_requests':
      return "Too many videos are being made at once with this server's key. Try again when one finishes.";
    case 'model_not_found':
      return `The gateway does not know the model ${model}. Pick one from the list.`;
    case 'invalid_request_error': {
      const message = error instanceof GatewayApiError ? error.serverMessage : error.message;
      return `The gateway rejected the request${context.option ? ` (\`${context.option}\`)` : ''}: ${message}`;
    }
    case 'overloaded':
    case 'upstream_error':
    case 'upstream_timeout_no_response':
      return `The gateway is having trouble (\`${code}\`). Try again in a few minutes.`;
    default:
      break;
  }
  if (error instanceof ValidationError)
    return `The request is not valid${context.option ? ` (\`${context.option}\`)` : ''}: ${error.message}`;
  if (error instanceof GatewayConnectionError) return 'The gateway cannot be reached right now. Try again in a minute.';
  if (error instanceof GatewayApiError) {
    if (error.status >= 500) return `The gateway is having trouble (HTTP ${said}). Try again in a few minutes.`;
    return `The gateway refused the request (HTTP ${said}): ${error.serverMessage}`;
  }
  return "The gateway's answer could not be read.";
}

/** A gateway error in words for a member, with the request id support can look up. */
export function describeGatewayError(error: GatewayError, context: GatewayErrorContext): string {
  return withRequestId(explain(error, context), error.requestId);
}
