// Checks a request against every rule and limit of docs/gateway.md before anything is sent, so a user
// hears what is wrong at once instead of after a round trip (or a failed, refunded task). Each failure
// is a ValidationError whose `field` is the path of the offending value (`reference_audios[0].voice_id`,
// `storage_options.filename`) and whose `issue` names the rule (src/gateway/validation-issues.ts, which
// states it in English as the error's message).
//
// Capabilities follow the model family (videoModelCapabilities), and model names in messages use the
// configured vendor word. On the native layer `seconds` and `size` are forwarded unchanged and not
// interpreted; on the compatibility layer they are aliases of `duration` and `resolution`.

import {
  ASPECT_RATIOS,
  DEFAULT_VENDOR,
  EXTENSION_DURATION,
  GENERATION_DURATION,
  isVoiceId,
  MAX_REFERENCE_AUDIOS,
  MAX_STORAGE_EXPIRES_AFTER_S,
  REFERENCE_MAX_RESOLUTION,
  RESOLUTIONS,
  videoModelCapabilities,
  videoModelNames,
  type DurationRange,
  type Layer,
  type VideoModelCapabilities,
} from './spec.ts';
import { ValidationError } from './errors.ts';
import type { DurationMeaning, PromptPurpose, ValidationIssue } from './validation-issues.ts';
import { httpUrl, isHttpUrl } from '../lib/url.ts';
import type { EditRequest, ExtensionRequest, GenerationRequest, ImageInput, ReferenceAudio, VideoSource } from './types.ts';

export interface ValidationOptions {
  layer: Layer;
  /** The vendor word in model and voice names (GATEWAY_VENDOR), default `svc`. */
  vendor?: string;
}

interface Context {
  layer: Layer;
  vendor: string;
  names: { latest: string; classic: string };
}

function contextOf(options: ValidationOptions): Context {
  const vendor = options.vendor ?? DEFAULT_VENDOR;
  return { layer: options.layer, vendor, names: videoModelNames(vendor) };
}

function fail(field: string, issue: ValidationIssue): never {
  throw new ValidationError(field, issue);
}

const IMAGE_DATA_URI = /^data:image\/[a-z0-9.+-]+;base64,./i;

function checkModel(model: unknown, context: Context): VideoModelCapabilities {
  const capabilities = typeof model === 'string' ? videoModelCapabilities(model, context.vendor) : undefined;
  if (capabilities === undefined) {
    fail('model', { rule: 'video-model', ...context.names });
  }
  return capabilities;
}

function checkOptionalText(value: unknown, field: string): void {
  if (value !== undefined && typeof value !== 'string') fail(field, { rule: 'text' });
}

function checkRequiredPrompt(prompt: unknown, purpose: PromptPurpose): void {
  if (typeof prompt !== 'string' || prompt.trim() === '') fail('prompt', { rule: 'prompt-required', purpose });
}

/** Exactly one of `url`/`file_id`; a url is a public http(s) address or a base64 image data URI. */
function checkImage(image: ImageInput | undefined, field: string): void {
  if (image === undefined) return;
  if (typeof image !== 'object' || image === null) fail(field, { rule: 'image-object' });
  const hasUrl = image.url !== undefined;
  const hasFileId = image.file_id !== undefined;
  if (hasUrl === hasFileId) fail(field, { rule: 'url-or-file-id' });
  if (hasUrl && (typeof image.url !== 'string' || !(isHttpUrl(image.url) || IMAGE_DATA_URI.test(image.url)))) {
    fail(`${field}.url`, { rule: 'image-url' });
  }
  if (hasFileId && (typeof image.file_id !== 'string' || image.file_id.trim() === '')) {
    fail(`${field}.file_id`, { rule: 'file-id' });
  }
}

function checkList(value: unknown, field: string): asserts value is unknown[] | undefined {
  if (value === undefined) return;
  if (!Array.isArray(value)) fail(field, { rule: 'list' });
  if (value.length === 0) fail(field, { rule: 'list-empty' });
}

function checkReferenceAudio(audio: ReferenceAudio, field: string): void {
  if (typeof audio !== 'object' || audio === null) fail(field, { rule: 'audio-object' });
  const hasVoice = audio.voice_id !== undefined;
  const hasUrl = audio.url !== undefined;
  if (hasVoice === hasUrl) fail(field, { rule: 'voice-or-url' });
  if (hasVoice && (typeof audio.voice_id !== 'string' || !isVoiceId(audio.voice_id))) {
    fail(`${field}.voice_id`, { rule: 'voice-id' });
  }
  if (hasUrl && (typeof audio.url !== 'string' || !isHttpUrl(audio.url))) {
    fail(`${field}.url`, { rule: 'audio-url' });
  }
}

function checkWholeNumber(value: unknown, field: string, range: DurationRange, meaning: DurationMeaning): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max) {
    fail(field, { rule: 'seconds-range', min: range.min, max: range.max, meaning });
  }
}

/**
 * On the compatibility layer an alias and its field must agree. Answers the effective value and the
 * name the caller used for it, so an error names what the caller wrote.
 */
function resolveAlias(
  canonical: unknown,
  aliased: unknown,
  names: { field: string; alias: string },
  context: Context,
): { value: unknown; field: string } {
  if (context.layer !== 'compat' || aliased === undefined) return { value: canonical, field: names.field };
  if (canonical === undefined) return { value: aliased, field: names.alias };
  if (canonical !== aliased) {
    fail(names.alias, { rule: 'alias', canonical: names.field });
  }
  return { value: canonical, field: names.field };
}

function checkStorage(request: GenerationRequest): void {
  const storage = request.storage_options;
  if (storage === undefined) return;
  if (typeof storage !== 'object' || storage === null) fail('storage_options', { rule: 'object' });
  if (typeof storage.filename !== 'string' || storage.filename.trim() === '') {
    fail('storage_options.filename', { rule: 'filename-required' });
  }
  const expiresAfter = storage.expires_after;
  if (
    expiresAfter !== undefined &&
    (typeof expiresAfter !== 'number' || !Number.isInteger(expiresAfter) || expiresAfter < 1 || expiresAfter > MAX_STORAGE_EXPIRES_AFTER_S)
  ) {
    fail('storage_options.expires_after', { rule: 'storage-expiry', max: MAX_STORAGE_EXPIRES_AFTER_S });
  }
  if (storage.public_url !== undefined && typeof storage.public_url !== 'boolean') {
    fail('storage_options.public_url', { rule: 'boolean' });
  }
}

function checkCommon(request: { output?: { upload_url: string }; user?: string }): void {
  if (request.output !== undefined) {
    const uploadUrl: unknown = typeof request.output === 'object' && request.output !== null ? request.output.upload_url : undefined;
    if (typeof uploadUrl !== 'string' || !isHttpUrl(uploadUrl)) {
      fail('output.upload_url', { rule: 'upload-url' });
    }
  }
  checkOptionalText(request.user, 'user');
}

/** Throws a ValidationError naming the first field that breaks a rule of the spec. */
export function validateGeneration(request: GenerationRequest, options: ValidationOptions): void {
  const context = contextOf(options);
  const { latest, classic } = context.names;
  const capabilities = checkModel(request.model, context);

  checkImage(request.image, 'image');
  checkImage(request.last_frame, 'last_frame');
  checkList(request.reference_images, 'reference_images');
  request.reference_images?.forEach((image, index) => checkImage(image, `reference_images[${index}]`));
  checkList(request.reference_audios, 'reference_audios');

  const hasImage = request.image !== undefined;
  const hasLastFrame = request.last_frame !== undefined;
  const hasReferenceImages = request.reference_images !== undefined;
  const hasReferenceAudios = request.reference_audios !== undefined;
  const hasReferences = hasReferenceImages || hasReferenceAudios;

  checkOptionalText(request.prompt, 'prompt');
  if (!hasImage && !hasLastFrame && !hasReferences) {
    checkRequiredPrompt(request.prompt, 'text_to_video');
  }

  if (hasLastFrame && !capabilities.lastFrame) {
    fail('last_frame', { rule: 'last-frame-model', latest, model: request.model });
  }
  if (hasImage && hasReferences && !capabilities.imageWithReferences) {
    fail('image', { rule: 'image-with-references', latest, model: request.model });
  }
  if (hasReferenceAudios) {
    const audios = request.reference_audios ?? [];
    if (!capabilities.referenceAudio) fail('reference_audios', { rule: 'reference-audio-model', latest, classic });
    if (audios.length > MAX_REFERENCE_AUDIOS) {
      fail('reference_audios', { rule: 'too-many-audios', max: MAX_REFERENCE_AUDIOS, count: audios.length });
    }
    audios.forEach((audio, index) => checkReferenceAudio(audio, `reference_audios[${index}]`));
  }

  const duration = resolveAlias(request.duration, request.seconds, { field: 'duration', alias: 'seconds' }, context);
  checkWholeNumber(duration.value, duration.field, GENERATION_DURATION, 'video_length');

  const resolution = resolveAlias(request.resolution, request.size, { field: 'resolution', alias: 'size' }, context);
  if (resolution.value !== undefined) {
    const value = resolution.value;
    if (!RESOLUTIONS.some((allowed) => allowed === value)) {
      fail(resolution.field, { rule: 'one-of', allowed: RESOLUTIONS });
    }
    if (value === '1080p' && hasReferenceImages) {
      fail(resolution.field, { rule: 'reference-image-resolution', max: REFERENCE_MAX_RESOLUTION });
    }
    if (value === '1080p' && (!capabilities.fullHd || hasLastFrame || hasReferences)) {
      fail(resolution.field, { rule: 'full-hd', latest });
    }
  }

  const aspectRatio = request.aspect_ratio;
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((allowed) => allowed === aspectRatio)) {
    fail('aspect_ratio', { rule: 'one-of', allowed: ASPECT_RATIOS });
  }

  checkStorage(request);
  checkCommon(request);
}

/** The source of an edit or extension: exactly one of a `.mp4` link (query string allowed) or a file id. */
function checkVideoSource(video: VideoSource | undefined): void {
  if (typeof video !== 'object' || video === null) fail('video', { rule: 'video-required' });
  const hasUrl = video.url !== undefined;
  const hasFileId = video.file_id !== undefined;
  if (hasUrl === hasFileId) fail('video', { rule: 'url-or-file-id' });
  if (hasUrl) {
    const path = typeof video.url === 'string' ? httpUrl(video.url)?.pathname : undefined;
    if (path === undefined || !path.toLowerCase().endsWith('.mp4')) {
      fail('video.url', { rule: 'video-url' });
    }
  }
  if (hasFileId && (typeof video.file_id !== 'string' || video.file_id.trim() === '')) {
    fail('video.file_id', { rule: 'file-id' });
  }
}

/** Edits inherit length, resolution and ratio from the source, so only the source and prompt are checked. */
export function validateEdit(request: EditRequest, options: ValidationOptions): void {
  const context = contextOf(options);
  checkModel(request.model, context);
  checkRequiredPrompt(request.prompt, 'edit');
  checkVideoSource(request.video);
  checkCommon(request);
}

export function validateExtension(request: ExtensionRequest, options: ValidationOptions): void {
  const context = contextOf(options);
  checkModel(request.model, context);
  checkRequiredPrompt(request.prompt, 'extend');
  checkVideoSource(request.video);
  const duration = resolveAlias(request.duration, request.seconds, { field: 'duration', alias: 'seconds' }, context);
  checkWholeNumber(duration.value, duration.field, EXTENSION_DURATION, 'added_length');
  checkCommon(request);
}
