import { DEFAULT_VENDOR, realtimeModelNames, videoModelNames } from '../gateway/spec.ts';
import { isRecord, ownValue } from '../lib/json.ts';

// The emulator's configuration (`npm run emulator -- --config FILE`):
// {"vendor":"svc", "keys":{"<key>":{"group":"<name>","quota_usd":50,"limits":{"concurrent_tasks":2}}}, "groups":{"<name>":{"models":[...]}},
//  "timing":{"generation_ms":2000,"task_timeout_ms":600000,"realtime_session_max_ms":7200000,"url_ttl_ms":3600000,"upload_timeout_ms":30000},
//  "limits":{"rate_per_minute":600,"concurrent_tasks":8}, "video":{"bytes":null}}
// Every part is optional. Without keys there is one key, `emulator-key`, whose group has every model.
// A key's own `limits` replace the global ones field by field, so one key can be busier than the rest.

export interface EmulatorLimits {
  rate_per_minute: number;
  concurrent_tasks: number;
}

export interface EmulatorKey {
  group: string;
  quota_usd: number;
  limits?: Partial<EmulatorLimits>;
}

export interface EmulatorConfig {
  vendor: string;
  keys: Record<string, EmulatorKey>;
  groups: Record<string, { models: string[] }>;
  timing: {
    generation_ms: number;
    task_timeout_ms: number;
    realtime_session_max_ms: number;
    url_ttl_ms: number;
    /** The window rate_per_minute counts requests in: a minute, shorter only to test the limit quickly. */
    rate_window_ms: number;
    /** The deadline of a PUT to `output.upload_url`, from connecting to the answer's end. */
    upload_timeout_ms: number;
  };
  /** Every key's limits, unless the key sets its own. */
  limits: EmulatorLimits;
  /** Pad the served mp4 to this many bytes (to test upload limits); null serves the fixture as is. */
  video: { bytes: number | null };
}

export interface EmulatorConfigInput {
  vendor?: string;
  keys?: Record<string, EmulatorKey>;
  groups?: Record<string, { models: string[] }>;
  timing?: Partial<EmulatorConfig['timing']>;
  limits?: Partial<EmulatorLimits>;
  video?: Partial<EmulatorConfig['video']>;
}

export const DEFAULT_KEY = 'emulator-key';
const DEFAULT_GROUP = 'default';

export function allModels(vendor: string): string[] {
  const video = videoModelNames(vendor);
  return [video.latest, video.classic, ...realtimeModelNames(vendor)];
}

function defaultConfig(vendor = DEFAULT_VENDOR): EmulatorConfig {
  return {
    vendor,
    keys: { [DEFAULT_KEY]: { group: DEFAULT_GROUP, quota_usd: 50 } },
    groups: { [DEFAULT_GROUP]: { models: allModels(vendor) } },
    timing: {
      generation_ms: 2000,
      task_timeout_ms: 600_000,
      realtime_session_max_ms: 7_200_000,
      url_ttl_ms: 3_600_000,
      rate_window_ms: 60_000,
      upload_timeout_ms: 30_000,
    },
    limits: { rate_per_minute: 600, concurrent_tasks: 8 },
    video: { bytes: null },
  };
}

/** The limits a key works under: its own where it sets them, the global ones elsewhere. */
export function limitsOfKey(config: EmulatorConfig, entry: EmulatorKey): EmulatorLimits {
  return { ...config.limits, ...entry.limits };
}

export class EmulatorConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmulatorConfigError';
  }
}

/**
 * The effective configuration: the input deep-merged over the defaults (so a test adding a key keeps
 * `emulator-key`). A configuration file is stricter: its keys are the only keys (parseEmulatorConfig).
 */
export function resolveConfig(input: EmulatorConfigInput = {}, { onlyGivenKeys = false } = {}): EmulatorConfig {
  const vendor = input.vendor ?? DEFAULT_VENDOR;
  const defaults = defaultConfig(vendor);
  const config: EmulatorConfig = {
    vendor,
    keys: onlyGivenKeys && input.keys ? input.keys : { ...defaults.keys, ...input.keys },
    groups: { ...defaults.groups, ...input.groups },
    timing: { ...defaults.timing, ...input.timing },
    limits: { ...defaults.limits, ...input.limits },
    video: { ...defaults.video, ...input.video },
  };
  for (const [key, entry] of Object.entries(config.keys)) {
    if (!ownValue(config.groups, entry.group))
      throw new EmulatorConfigError(`keys.${maskKey(key)}.group names "${entry.group}", which is not in groups`);
  }
  return config;
}

/** Keys appear in error messages only masked. */
function maskKey(key: string): string {
  return key.length <= 8 ? '****' : `${key.slice(0, 4)}…${key.slice(-2)}`;
}

function expectPositiveInteger(value: unknown, path: string, allowZero = false): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new EmulatorConfigError(`${path} must be a ${allowZero ? 'non-negative' : 'positive'} whole number`);
  }
  return value;
}

function expectObject(value: unknown, path: string): Readonly<Record<string, unknown>> {
  if (!isRecord(value)) throw new EmulatorConfigError(`${path} must be an object`);
  return value;
}

const KNOWN = {
  top: ['vendor', 'keys', 'groups', 'timing', 'limits', 'video'],
  key: ['group', 'quota_usd', 'limits'],
  timing: ['generation_ms', 'task_timeout_ms', 'realtime_session_max_ms', 'url_ttl_ms', 'rate_window_ms', 'upload_timeout_ms'],
  limits: ['rate_per_minute', 'concurrent_tasks'],
  video: ['bytes'],
} as const;

function rejectUnknown(source: Readonly<Record<string, unknown>>, known: readonly string[], path: string): void {
  for (const key of Object.keys(source)) {
    if (!known.includes(key)) throw new EmulatorConfigError(`${path}${key} is not a setting (known: ${known.join(', ')})`);
  }
}

function parseLimits(value: unknown, path: string): Partial<EmulatorLimits> {
  const limits = expectObject(value, path);
  rejectUnknown(limits, KNOWN.limits, `${path}.`);
  return Object.fromEntries(Object.entries(limits).map(([key, setting]) => [key, expectPositiveInteger(setting, `${path}.${key}`)]));
}

/** Parses a configuration file's JSON; every mistake is an EmulatorConfigError naming the setting. */
export function parseEmulatorConfig(raw: unknown): EmulatorConfig {
  const source = expectObject(raw, 'the configuration');
  rejectUnknown(source, KNOWN.top, '');
  const input: EmulatorConfigInput = {};
  if (source.vendor !== undefined) {
    if (typeof source.vendor !== 'string' || !/^[a-z0-9][a-z0-9_-]*$/i.test(source.vendor))
      throw new EmulatorConfigError('vendor must be a single word');
    input.vendor = source.vendor;
  }
  if (source.keys !== undefined) {
    const keys: Record<string, EmulatorKey> = {};
    for (const [key, value] of Object.entries(expectObject(source.keys, 'keys'))) {
      const path = `keys.${maskKey(key)}`;
      const entry = expectObject(value, path);
      rejectUnknown(entry, KNOWN.key, `${path}.`);
      if (typeof entry.group !== 'string') throw new EmulatorConfigError(`${path}.group must be a group name`);
      if (typeof entry.quota_usd !== 'number' || !(entry.quota_usd >= 0))
        throw new EmulatorConfigError(`${path}.quota_usd must be a number of dollars, 0 or more`);
      keys[key] = {
        group: entry.group,
        quota_usd: entry.quota_usd,
        ...(entry.limits === undefined ? {} : { limits: parseLimits(entry.limits, `${path}.limits`) }),
      };
    }
    input.keys = keys;
  }
  if (source.groups !== undefined) {
    const groups: Record<string, { models: string[] }> = {};
    for (const [name, value] of Object.entries(expectObject(source.groups, 'groups'))) {
      const models = expectObject(value, `groups.${name}`).models;
      if (!Array.isArray(models) || !models.every((model) => typeof model === 'string')) {
        throw new EmulatorConfigError(`groups.${name}.models must be a list of model names`);
      }
      groups[name] = { models };
    }
    input.groups = groups;
  }
  if (source.timing !== undefined) {
    const timing = expectObject(source.timing, 'timing');
    rejectUnknown(timing, KNOWN.timing, 'timing.');
    input.timing = Object.fromEntries(Object.entries(timing).map(([key, value]) => [key, expectPositiveInteger(value, `timing.${key}`)]));
  }
  if (source.limits !== undefined) input.limits = parseLimits(source.limits, 'limits');
  if (source.video !== undefined) {
    const video = expectObject(source.video, 'video');
    rejectUnknown(video, KNOWN.video, 'video.');
    if (video.bytes !== undefined) input.video = { bytes: video.bytes === null ? null : expectPositiveInteger(video.bytes, 'video.bytes') };
  }
  return resolveConfig(input, { onlyGivenKeys: true });
}
