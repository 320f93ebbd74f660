// The gateway client's public surface. Realtime lives in ./realtime/ and is exported from there.

export { GatewayClient, type GatewayClientOptions, type DownloadOptions } from './client.ts';
export {
  GatewayError,
  GatewayApiError,
  BadRequestError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  RateLimitError,
  QuotaExceededError,
  ServerError,
  GatewayConnectionError,
  OutcomeUnknownError,
  MalformedResponseError,
  ResponseTooLargeError,
  VideoUnavailableError,
  ValidationError,
  isModerationCode,
  type TaskError,
  type VideoUnavailableReason,
} from './errors.ts';
export { validateGeneration, validateEdit, validateExtension, type ValidationOptions } from './validation.ts';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.ts';
export { DEFAULT_TIMEOUTS, MAX_JSON_BYTES, createGatewayDispatcher, sharedGatewayDispatcher, type GatewayTimeouts } from './http.ts';
export type {
  ClientSecret,
  DownloadedVideo,
  EditRequest,
  ExtensionRequest,
  GatewayModel,
  GenerationRequest,
  ImageInput,
  OutputOptions,
  ReferenceAudio,
  StorageOptions,
  StoredFile,
  SubmittedTask,
  TaskResult,
  TaskStatus,
  VideoSource,
} from './types.ts';
