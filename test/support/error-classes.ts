import {
  AuthenticationError,
  BadRequestError,
  NotFoundError,
  PermissionDeniedError,
  QuotaExceededError,
  RateLimitError,
  ServerError,
  type GatewayApiError,
} from '../../src/gateway/errors.ts';

/** The error class a caller should meet for each HTTP error code of the spec, written out by hand from its table. */
export const ERROR_CLASS_OF_CODE: Record<string, abstract new (...args: never[]) => GatewayApiError> = {
  invalid_request_error: BadRequestError,
  invalid_api_key: AuthenticationError,
  permission_denied: PermissionDeniedError,
  model_not_found: NotFoundError,
  insufficient_quota: QuotaExceededError,
  rate_limit: RateLimitError,
  too_many_requests: RateLimitError,
  upstream_error: ServerError,
  upstream_timeout_no_response: ServerError,
  overloaded: ServerError,
};
