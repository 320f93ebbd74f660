import {
  ASPECT_RATIOS,
  DEFAULT_RESOLUTION,
  EXTENSION_DURATION,
  GENERATION_DURATION,
  RESOLUTIONS,
  type VideoOperation,
} from '../gateway/spec.ts';
import { notice, type Notice } from '../wording/notice.ts';
import { imageFrom, type AttachmentInput } from './requests.ts';

// The Change and regenerate form: a task's request as the form shows it (its prompt, length, resolution
// and ratio, each with the current one chosen), and the request sent again with what the member changed.
// A setting left as it was shown stays as it was stored, set or not, so "the same" is the same request.

/** The value a select shows for a setting the request leaves to the gateway's default (an aspect ratio: 16:9, or the picture's). */
export const GATEWAY_DEFAULT = 'default';

/** A task's settings as the form shows them: the current one of each, by the values its selects offer. */
export interface ShownSettings {
  prompt: string;
  /** Seconds (a generation's length, an extension's added seconds); none for an edit, whose length is its source's. */
  duration?: string;
  /** A generation's resolution and aspect ratio. */
  resolution?: string;
  aspectRatio?: string;
}

/** What the member picked in the form: the prompt, the selects' values as shown, and a new first frame. */
export interface RequestChanges {
  prompt: string;
  duration?: string | undefined;
  resolution?: string | undefined;
  aspectRatio?: string | undefined;
  /** A new first frame (generations). */
  image?: AttachmentInput | undefined;
}

/** A select's option: its value, and its label, as it reads in every language or as a notice the form words. */
export interface SettingOption {
  value: string;
  label: string | Notice;
}

const seconds = (range: { min: number; max: number }): SettingOption[] =>
  Array.from({ length: range.max - range.min + 1 }, (_, index) => ({
    value: String(range.min + index),
    label: notice('video.card.length', { seconds: range.min + index }),
  }));

/** The options of each select, by operation (Discord's string select takes 25 at most: 15 lengths, 3 resolutions, 8 ratios). */
export function settingOptions(operation: VideoOperation): {
  duration?: SettingOption[];
  resolution?: SettingOption[];
  aspectRatio?: SettingOption[];
} {
  if (operation === 'edit') return {};
  if (operation === 'extend') return { duration: seconds(EXTENSION_DURATION) };
  return {
    duration: seconds(GENERATION_DURATION),
    resolution: RESOLUTIONS.map((value) => ({ value, label: value })),
    aspectRatio: [
      { value: GATEWAY_DEFAULT, label: notice('video.form.default-aspect-ratio') },
      ...ASPECT_RATIOS.map((value) => ({ value, label: value })),
    ],
  };
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const whole = (value: unknown): number | undefined => (typeof value === 'number' && Number.isInteger(value) ? value : undefined);

/** The settings of a stored request as the form shows them (an unset one as the gateway's default). */
export function shownSettings(operation: VideoOperation, prompt: string, request: Readonly<Record<string, unknown>>): ShownSettings {
  if (operation === 'edit') return { prompt };
  const range = operation === 'extend' ? EXTENSION_DURATION : GENERATION_DURATION;
  const duration = String(whole(request.duration) ?? range.default);
  if (operation === 'extend') return { prompt, duration };
  return {
    prompt,
    duration,
    resolution: text(request.resolution) ?? text(request.size) ?? DEFAULT_RESOLUTION,
    aspectRatio: text(request.aspect_ratio) ?? GATEWAY_DEFAULT,
  };
}

/**
 * The stored request with the member's changes: a setting picked as it was shown is left as stored; a
 * changed one replaces it (the gateway's default removes it). A picture that is not one is refused
 * naming the form's `image` field (InputError); the rest is validated as every request is.
 */
export function changedRequest(
  operation: VideoOperation,
  stored: Readonly<Record<string, unknown>>,
  changes: RequestChanges,
): Record<string, unknown> {
  const shown = shownSettings(operation, '', stored);
  const request: Record<string, unknown> = { ...stored, prompt: changes.prompt };
  if (operation === 'generate' && changes.prompt === '') delete request.prompt;
  if (changes.duration !== undefined && shown.duration !== undefined && changes.duration !== shown.duration)
    request.duration = Number(changes.duration);
  if (operation !== 'generate') return request;
  if (changes.resolution !== undefined && changes.resolution !== shown.resolution) {
    // `size` is the older name of `resolution`: one of the two is sent.
    delete request.size;
    request.resolution = changes.resolution;
  }
  if (changes.aspectRatio !== undefined && changes.aspectRatio !== shown.aspectRatio) {
    if (changes.aspectRatio === GATEWAY_DEFAULT) delete request.aspect_ratio;
    else request.aspect_ratio = changes.aspectRatio;
  }
  if (changes.image) request.image = imageFrom('image', changes.image);
  return request;
}
