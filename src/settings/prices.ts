import { EXTENSION_DURATION, GENERATION_DURATION, RESOLUTIONS, USD_TICKS, type Resolution, type VideoOperation } from '../gateway/spec.ts';
import { isRecord } from '../lib/json.ts';
import type { Result } from '../lib/result.ts';

// What the bot expects the gateway to charge, for estimates only: what the gateway reports is what is
// counted (docs/gateway.md, "Prices"). Video is priced per second by resolution, an edit as 8 s and an
// extension as the seconds it adds, both at 720p; voice per minute of realtime session, which the
// contract never reports. A model id prices that model; `*` every model the table does not name.

export const ANY_MODEL = '*';
/** Edits and extensions are priced at this resolution, whatever their source's. */
const EDIT_AND_EXTENSION_RESOLUTION: Resolution = '720p';
/** An edit is priced as this many seconds (its length follows the source's, capped near 8.7 s). */
const EDIT_PRICED_SECONDS = 8;

export interface VideoPrices {
  perSecondUsd: Record<Resolution, number>;
}

export interface VoicePrices {
  perMinuteUsd: number;
}

export interface PriceTable {
  /** Keyed by model id or ANY_MODEL; a Map, so no model id can name an object's built-in. */
  video: ReadonlyMap<string, VideoPrices>;
  voice: ReadonlyMap<string, VoicePrices>;
}

/** The emulator's documented video prices, and the provider's public price of a realtime voice minute. */
export const DEFAULT_PRICES: PriceTable = {
  video: new Map([[ANY_MODEL, { perSecondUsd: { '480p': 0.05, '720p': 0.08, '1080p': 0.14 } }]]),
  voice: new Map([[ANY_MODEL, { perMinuteUsd: 0.05 }]]),
};

function videoPrices(table: PriceTable, model: string): VideoPrices {
  return table.video.get(model) ?? table.video.get(ANY_MODEL) ?? DEFAULT_PRICES.video.get(ANY_MODEL)!;
}

function voicePrices(table: PriceTable, model: string): VoicePrices {
  return table.voice.get(model) ?? table.voice.get(ANY_MODEL) ?? DEFAULT_PRICES.voice.get(ANY_MODEL)!;
}

export interface VideoEstimateRequest {
  model: string;
  operation: VideoOperation;
  /** Generation only; unset: the gateway's default. */
  resolution?: string | undefined;
  /** Generation: the length; extension: the seconds added; unset: the gateway's default. Edits ignore it. */
  duration?: number | undefined;
}

/**
 * The estimate of one video, in ticks (1 USD = 10^10), rounded to a whole tick. From a table parsePrices
 * made (no price over MAX_PRICE_USD) and a length the spec allows, it is at most $1,500 (100 $/s for 15 s):
 * a safe integer, as are four variants of it, that records and sums keep exactly. The video part refuses a
 * job whose estimate is anything else before sending it.
 */
export function estimateVideoUsdTicks(table: PriceTable, request: VideoEstimateRequest): number {
  const perSecond = videoPrices(table, request.model).perSecondUsd;
  let seconds: number;
  let resolution: Resolution;
  if (request.operation === 'edit') {
    seconds = EDIT_PRICED_SECONDS;
    resolution = EDIT_AND_EXTENSION_RESOLUTION;
  } else if (request.operation === 'extend') {
    seconds = request.duration ?? EXTENSION_DURATION.default;
    resolution = EDIT_AND_EXTENSION_RESOLUTION;
  } else {
    seconds = request.duration ?? GENERATION_DURATION.default;
    resolution = RESOLUTIONS.find((known) => known === request.resolution) ?? '480p';
  }
  return Math.round(seconds * perSecond[resolution] * USD_TICKS);
}

/** What a realtime voice session of the model costs per second, in ticks (not rounded: seconds add up). */
export function voiceUsdTicksPerSecond(table: PriceTable, model: string): number {
  return (voicePrices(table, model).perMinuteUsd * USD_TICKS) / 60;
}

/**
 * The most a second of video or a minute of voice may be priced at: far above any provider's price, and
 * low enough that every estimate (a few minutes of video at most, voice budgets' hours) is a finite
 * number of cents that a record can hold. A larger figure is a typo (1e308, a price per hour), and an
 * estimate from it would be infinite or absurd.
 */
export const MAX_PRICE_USD = 100;

function price(value: unknown, field: string, unit: 'second' | 'minute', problems: string[]): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) {
    if (value <= MAX_PRICE_USD) return value;
    problems.push(`${field} must be at most ${MAX_PRICE_USD} dollars a ${unit} (got ${value})`);
    return undefined;
  }
  problems.push(`${field} must be a price in dollars, 0 or more (got ${JSON.stringify(value) ?? 'nothing'})`);
  return undefined;
}

function modelEntries(raw: unknown, field: string, problems: string[]): [string, Record<string, unknown>][] {
  if (raw === undefined) return [];
  if (!isRecord(raw)) {
    problems.push(`${field} must be an object keyed by model id (or "*" for any model)`);
    return [];
  }
  // `*` first: a model's prices start from the `*` in force, wherever the file writes it.
  const entries = Object.entries(raw).sort(([a], [b]) => Number(b === ANY_MODEL) - Number(a === ANY_MODEL));
  return entries.flatMap(([model, entry]): [string, Record<string, unknown>][] => {
    if (isRecord(entry)) return [[model, entry]];
    problems.push(`${field}.${model} must be an object`);
    return [];
  });
}

/**
 * A PRICES_FILE's content over the defaults: what it names replaces the default for it (a resolution
 * it leaves out keeps the price the model had), what it does not name keeps its default. Problems name
 * the field, as `video.*.per_second_usd.720p`.
 */
export function parsePrices(text: string, defaults: PriceTable = DEFAULT_PRICES): Result<{ prices: PriceTable }, { problems: string[] }> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const problems = [`it is not JSON (${error instanceof Error ? error.message : String(error)})`];
    return { ok: false, problems, message: problems.join('; ') };
  }
  const problems: string[] = [];
  if (!isRecord(raw)) problems.push('it must be a JSON object with "video" and/or "voice"');
  const root = isRecord(raw) ? raw : {};
  for (const key of Object.keys(root))
    if (key !== 'video' && key !== 'voice') problems.push(`${key} is not a price section (video, voice)`);

  const video = new Map(defaults.video);
  for (const [model, entry] of modelEntries(root.video, 'video', problems)) {
    const field = `video.${model}.per_second_usd`;
    if (!isRecord(entry.per_second_usd)) {
      problems.push(`${field} must be an object of prices per resolution (${RESOLUTIONS.join(', ')})`);
      continue;
    }
    const base = videoPrices({ ...defaults, video }, model).perSecondUsd;
    const perSecondUsd = { ...base };
    for (const [resolution, value] of Object.entries(entry.per_second_usd)) {
      const known = RESOLUTIONS.find((candidate) => candidate === resolution);
      if (!known) {
        problems.push(`${field}.${resolution} is not a resolution (${RESOLUTIONS.join(', ')})`);
        continue;
      }
      const amount = price(value, `${field}.${resolution}`, 'second', problems);
      if (amount !== undefined) perSecondUsd[known] = amount;
    }
    video.set(model, { perSecondUsd });
  }

  const voice = new Map(defaults.voice);
  for (const [model, entry] of modelEntries(root.voice, 'voice', problems)) {
    const amount = price(entry.per_minute_usd, `voice.${model}.per_minute_usd`, 'minute', problems);
    if (amount !== undefined) voice.set(model, { perMinuteUsd: amount });
  }

  if (problems.length > 0) return { ok: false, problems, message: problems.join('; ') };
  return { ok: true, prices: { video, voice } };
}
