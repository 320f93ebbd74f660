// The vocabulary of docs/gateway.md (and of its "Where the contract is silent" section where the spec says
// "not shown"), in one place, shared by the gateway client, the emulator and the commands.

export const LAYERS = ['compat', 'native'] as const;
export type Layer = (typeof LAYERS)[number];

export const LAYER_PREFIX: Record<Layer, string> = { compat: '/v1', native: '/native/v1' };

export const DEFAULT_VENDOR = 'svc';

// docs/gateway.md, "Edit and extension paths": the edit and extension paths are "not shown"; these are the likely ones, under the
// layer prefix, and configurable.
export const DEFAULT_EDIT_PATH = '/videos/edits';
export const DEFAULT_EXTENSION_PATH = '/videos/extensions';

export const RESOLUTIONS = ['480p', '720p', '1080p'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
export const DEFAULT_RESOLUTION: Resolution = '480p';
/** Reference-image mode and edits are capped here. */
export const REFERENCE_MAX_RESOLUTION: Resolution = '720p';

export const ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];

export const VIDEO_OPERATIONS = ['generate', 'edit', 'extend'] as const;
export type VideoOperation = (typeof VIDEO_OPERATIONS)[number];

export interface DurationRange {
  min: number;
  max: number;
  default: number;
}
export const GENERATION_DURATION: DurationRange = { min: 1, max: 15, default: 8 };
/** The added length only: the output is the source length plus this. */
export const EXTENSION_DURATION: DurationRange = { min: 2, max: 10, default: 6 };
/** Edits inherit the source's length, capped at this many seconds. */
export const EDIT_MAX_SECONDS = 8.7;

export const MAX_REFERENCE_AUDIOS = 3;
export const MAX_REFERENCE_AUDIO_SECONDS = 15;
export const MAX_STORAGE_EXPIRES_AFTER_S = 2_592_000;
export const TASK_TIMEOUT_MS = 600_000;
export const REALTIME_SESSION_MAX_MS = 120 * 60_000;
export const CLIENT_SECRET_MAX_S = 3600;
export const CLIENT_SECRET_DEFAULT_S = 600;

/** 1 USD = 10^10 ticks (native `usage.cost_in_usd_ticks`). */
export const USD_TICKS = 10_000_000_000;

// docs/gateway.md, "Voices": built-in voices, case-insensitive, as suggestions (autocomplete). The gateway's own
// list may differ and its 400 for an unknown voice lists the real one, so a video request's voice_id is
// checked only for its shape.
export const BUILT_IN_VOICES = [
  'altair',
  'ara',
  'atlas',
  'aurora',
  'carina',
  'castor',
  'celeste',
  'cosmo',
  'eve',
  'helios',
  'helix',
  'iris',
  'kepler',
  'leo',
  'liora',
  'lumen',
  'luna',
  'lux',
  'naksh',
  'orion',
  'perseus',
  'rex',
  'rigel',
  'sal',
  'sirius',
  'ursa',
  'zagan',
  'zenith',
] as const;

/**
 * A plausible voice id. Which voices exist is the gateway's to say (its 400 for an unknown voice lists
 * them; docs/gateway.md, "Voices": the list may differ from the built-in one), so only the shape is checked.
 */
export function isVoiceId(value: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}$/.test(value);
}

export const HTTP_ERROR_CODES = {
  invalid_request_error: 400,
  invalid_api_key: 401,
  permission_denied: 403,
  model_not_found: 404,
  insufficient_quota: 429,
  rate_limit: 429,
  too_many_requests: 429,
  upstream_error: 500,
  upstream_timeout_no_response: 500,
  overloaded: 503,
} as const;

export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  'rate_limit',
  'too_many_requests',
  'overloaded',
  'upstream_error',
  'upstream_timeout_no_response',
]);

export const ASYNC_ERROR_CODES = [
  'invalid_argument',
  'permission_denied',
  'failed_precondition',
  'service_unavailable',
  'internal_error',
] as const;

// ---- Model families ------------------------------------------------------------------------------
// Capabilities follow the family (`<vendor>-imagine-video-<version>` versus the classic
// `<vendor>-imagine-video`), never exact strings, so a renamed vendor, a newer version (`-2`) or a
// tagged release (`-1.5-preview`) just works: 1.5 or newer has the modern capabilities.

export interface VideoModelCapabilities {
  /** `classic` is the unversioned model; `versioned` is 1.5 and later. */
  family: 'classic' | 'versioned';
  version: string | undefined;
  lastFrame: boolean;
  referenceAudio: boolean;
  /** 1080p for text-to-video and image-to-video. */
  fullHd: boolean;
  /** `image` together with reference material (pinned first frame plus guidance). */
  imageWithReferences: boolean;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const difference = (left[i] ?? 0) - (right[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** The capabilities of a video model, or undefined when the name is not a video model of this vendor. */
export function videoModelCapabilities(model: string, vendor = DEFAULT_VENDOR): VideoModelCapabilities | undefined {
  // <vendor>-imagine-video, then an optional version, then optional tags such as -preview or -20250601.
  const match = new RegExp(
    `^${escapeRegExp(vendor.toLowerCase())}-imagine-video(?:-(\\d+(?:\\.\\d+)*))?(?:-(?:[a-z][a-z0-9.]*|\\d+))*$`,
  ).exec(model.toLowerCase());
  if (!match) return undefined;
  const version = match[1];
  const modern = version !== undefined && compareVersions(version, '1.5') >= 0;
  return {
    family: version === undefined ? 'classic' : 'versioned',
    version,
    lastFrame: modern,
    referenceAudio: modern,
    fullHd: modern,
    imageWithReferences: modern,
  };
}

export function isRealtimeModel(model: string, vendor = DEFAULT_VENDOR): boolean {
  return model.toLowerCase().startsWith(`${vendor.toLowerCase()}-voice-`);
}

export function videoModelNames(vendor = DEFAULT_VENDOR): { latest: string; classic: string } {
  return { latest: `${vendor}-imagine-video-1.5`, classic: `${vendor}-imagine-video` };
}

export function realtimeModelNames(vendor = DEFAULT_VENDOR): string[] {
  return [`${vendor}-voice-latest`, `${vendor}-voice-think-fast-2.0`, `${vendor}-voice-think-fast-1.0`];
}

export function realtimeSubprotocolPrefixes(vendor = DEFAULT_VENDOR): { clientSecret: string; apiKey: string } {
  return { clientSecret: `${vendor}-client-secret.`, apiKey: 'compat-insecure-api-key.' };
}
