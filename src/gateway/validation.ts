// Checks a request against every rule and limit of docs/gateway.md before anything is sent, so a user
// hears what is wrong at once instead of after a round trip (or a failed, refunded task). Each failure
// is a ValidationError whose `field` is the path of the offending value (`reference_audios[0].voice_id`,
// `storage_options.filename`) and whose message states the rule.
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

function fail(field: string, message: string): never {
  throw new ValidationError(field, message);
}

const IMAGE_DATA_URI = /^data:image\/[a-z0-9.+-]+;base64,./i;

function checkModel(model: unknown, context: Context): VideoModelCapabilities {
  const capabilities = typeof model === 'string' ? videoModelCapabilities(model, context.vendor) : undefined;
  if (capabilities === undefined) {
    fail('model', `model must be a video model: ${context.names.latest} or ${context.names.classic}.`);
  }
  return capabilities;
}

function checkOptionalText(value: unknown, field: string): void {
  if (value !== undefined && typeof value !== 'string') fail(field, `${field} must be text.`);
}

function checkRequiredPrompt(prompt: unknown, why: string): void {
  if (typeof prompt !== 'string' || prompt.trim() === '') fail('prompt', `prompt is required ${why}.`);
}

/** Exactly one of `url`/`file_id`; a url is a public http(s) address or a base64 image data URI. */
function checkImage(image: ImageInput | undefined, field: string): void {
  if (image === undefined) return;
  if (typeof image !== 'object' || image === null) fail(field, `${field} must be an object with url or file_id.`);
  const hasUrl = image.url !== undefined;
  const hasFileId = image.file_id !== undefined;
  if (hasUrl === hasFileId) fail(field, `${field} needs exactly one of url or file_id.`);
  if (hasUrl && (typeof image.url !== 'string' || !(isHttpUrl(image.url) || IMAGE_DATA_URI.test(image.url)))) {
    fail(`${field}.url`, `${field}.url must be a public http(s) URL or a base64 image data URI.`);
  }
  if (hasFileId && (typeof image.file_id !== 'string' || image.file_id.trim() === '')) {
    fail(`${field}.file_id`, `${field}.file_id must be a non-empty file id.`);
  }
}

function checkList(value: unknown, field: string): asserts value is unknown[] | undefined {
  if (value === undefined) return;
  if (!Array.isArray(value)) fail(field, `${field} must be a list.`);
  if (value.length === 0) fail(field, `${field} must not be empty; leave it out instead.`);
}

function checkReferenceAudio(audio: ReferenceAudio, field: string): void {
  if (typeof audio !== 'object' || audio === null) fail(field, `${field} must be an object with voice_id or url.`);
  const hasVoice = audio.voice_id !== undefined;
  const hasUrl = audio.url !== undefined;
  if (hasVoice === hasUrl) fail(field, `${field} needs exactly one of voice_id (a built-in voice) or url (live voice audio).`);
  if (hasVoice && (typeof audio.voice_id !== 'string' || !isVoiceId(audio.voice_id))) {
    fail(`${field}.voice_id`, `${field}.voice_id must be a voice id such as eve: letters, digits, - and _.`);
  }
  if (hasUrl && (typeof audio.url !== 'string' || !isHttpUrl(audio.url))) {
    fail(`${field}.url`, `${field}.url must be a public http(s) URL of at most 15 s of live voice audio.`);
  }
}

function checkWholeNumber(value: unknown, field: string, range: DurationRange, what: string): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max) {
    fail(field, `${field} must be a whole number of seconds from ${range.min} to ${range.max} (${what}).`);
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
    fail(names.alias, `${names.alias} is another name for ${names.field}; give only one of them, or the same value.`);
  }
  return { value: canonical, field: names.field };
}

function checkStorage(request: GenerationRequest): void {
  const storage = request.storage_options;
  if (storage === undefined) return;
  if (typeof storage !== 'object' || storage === null) fail('storage_options', 'storage_options must be an object.');
  if (typeof storage.filename !== 'string' || storage.filename.trim() === '') {
    fail('storage_options.filename', 'storage_options.filename is required when storing the result.');
  }
  const expiresAfter = storage.expires_after;
  if (
    expiresAfter !== undefined &&
    (typeof expiresAfter !== 'number' || !Number.isInteger(expiresAfter) || expiresAfter < 1 || expiresAfter > MAX_STORAGE_EXPIRES_AFTER_S)
  ) {
    fail(
      'storage_options.expires_after',
      `storage_options.expires_after must be a whole number of seconds from 1 to ${MAX_STORAGE_EXPIRES_AFTER_S} (30 days).`,
    );
  }
  if (storage.public_url !== undefined && typeof storage.public_url !== 'boolean') {
    fail('storage_options.public_url', 'storage_options.public_url must be true or false.');
  }
}

function checkCommon(request: { output?: { upload_url: string }; user?: string }): void {
  if (request.output !== undefined) {
    const uploadUrl: unknown = typeof request.output === 'object' && request.output !== null ? request.output.upload_url : undefined;
    if (typeof uploadUrl !== 'string' || !isHttpUrl(uploadUrl)) {
      fail('output.upload_url', 'output.upload_url must be a signed http(s) PUT address.');
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
    checkRequiredPrompt(request.prompt, 'for text-to-video (no image, last_frame or reference material)');
  }

  if (hasLastFrame && !capabilities.lastFrame) {
    fail('last_frame', `last_frame needs ${latest}; ${request.model} does not support it.`);
  }
  if (hasImage && hasReferences && !capabilities.imageWithReferences) {
    fail('image', `${request.model} cannot combine image with reference_images or reference_audios; use ${latest}.`);
  }
  if (hasReferenceAudios) {
    const audios = request.reference_audios ?? [];
    if (!capabilities.referenceAudio) fail('reference_audios', `reference_audios need ${latest}; ${classic} has no reference audio.`);
    if (audios.length > MAX_REFERENCE_AUDIOS) {
      fail('reference_audios', `At most ${MAX_REFERENCE_AUDIOS} reference_audios are allowed (got ${audios.length}).`);
    }
    audios.forEach((audio, index) => checkReferenceAudio(audio, `reference_audios[${index}]`));
  }

  const duration = resolveAlias(request.duration, request.seconds, { field: 'duration', alias: 'seconds' }, context);
  checkWholeNumber(duration.value, duration.field, GENERATION_DURATION, 'the video length');

  const resolution = resolveAlias(request.resolution, request.size, { field: 'resolution', alias: 'size' }, context);
  if (resolution.value !== undefined) {
    const value = resolution.value;
    if (!RESOLUTIONS.some((allowed) => allowed === value)) {
      fail(resolution.field, `${resolution.field} must be one of ${RESOLUTIONS.join(', ')}.`);
    }
    if (value === '1080p' && hasReferenceImages) {
      fail(resolution.field, `Reference-image mode allows at most ${REFERENCE_MAX_RESOLUTION}.`);
    }
    if (value === '1080p' && (!capabilities.fullHd || hasLastFrame || hasReferences)) {
      fail(resolution.field, `1080p needs ${latest} and text-to-video or image-to-video.`);
    }
  }

  const aspectRatio = request.aspect_ratio;
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((allowed) => allowed === aspectRatio)) {
    fail('aspect_ratio', `aspect_ratio must be one of ${ASPECT_RATIOS.join(', ')}.`);
  }

  checkStorage(request);
  checkCommon(request);
}

/** The source of an edit or extension: exactly one of a `.mp4` link (query string allowed) or a file id. */
function checkVideoSource(video: VideoSource | undefined): void {
  if (typeof video !== 'object' || video === null) fail('video', 'video is required: the source as {url} or {file_id}.');
  const hasUrl = video.url !== undefined;
  const hasFileId = video.file_id !== undefined;
  if (hasUrl === hasFileId) fail('video', 'video needs exactly one of url or file_id.');
  if (hasUrl) {
    const path = typeof video.url === 'string' ? httpUrl(video.url)?.pathname : undefined;
    if (path === undefined || !path.toLowerCase().endsWith('.mp4')) {
      fail('video.url', 'video.url must be an http(s) link to an .mp4 file that carries the .mp4 suffix.');
    }
  }
  if (hasFileId && (typeof video.file_id !== 'string' || video.file_id.trim() === '')) {
    fail('video.file_id', 'video.file_id must be a non-empty file id.');
  }
}

/** Edits inherit length, resolution and ratio from the source, so only the source and prompt are checked. */
export function validateEdit(request: EditRequest, options: ValidationOptions): void {
  const context = contextOf(options);
  checkModel(request.model, context);
  checkRequiredPrompt(request.prompt, 'to describe the edit');
  checkVideoSource(request.video);
  checkCommon(request);
}

export function validateExtension(request: ExtensionRequest, options: ValidationOptions): void {
  const context = contextOf(options);
  checkModel(request.model, context);
  checkRequiredPrompt(request.prompt, 'to describe how the video continues');
  checkVideoSource(request.video);
  const duration = resolveAlias(request.duration, request.seconds, { field: 'duration', alias: 'seconds' }, context);
  checkWholeNumber(duration.value, duration.field, EXTENSION_DURATION, 'the added length');
  checkCommon(request);
}
