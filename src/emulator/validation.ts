import { isRecord, ownValue } from '../lib/json.ts';
import { isHttpUrl } from '../lib/url.ts';
import {
  ASPECT_RATIOS,
  DEFAULT_RESOLUTION,
  EXTENSION_DURATION,
  GENERATION_DURATION,
  MAX_REFERENCE_AUDIOS,
  MAX_STORAGE_EXPIRES_AFTER_S,
  RESOLUTIONS,
  videoModelCapabilities,
  type Layer,
  type VideoOperation,
} from '../gateway/spec.ts';
import { HttpError } from './http.ts';
import { knownVoice, unknownVoiceMessage } from './voices.ts';

// The emulator's own checks, as a real gateway makes them (not the bot's client validation, so that
// each keeps the other honest). Schema problems are refused at once with HTTP 400 and `param`;
// problems the spec lists as asynchronous codes (duration out of range, conflicting mode, a setting the
// model does not support) are accepted and then fail the task.
//
// Choices where the spec is silent: the classic model cannot edit or extend (failed_precondition);
// edits and extensions are priced at 720p; a prompt over 4096 characters is "too long".

const MAX_PROMPT_LENGTH = 4096;
/**
 * A task keeps its upload address and stored file name for hours, so their length is bounded (the spec
 * gives none): room for any signed URL and any file name, not for a megabyte of either.
 */
const MAX_UPLOAD_URL_LENGTH = 8192;
const MAX_FILENAME_LENGTH = 1024;
const PRICE_PER_SECOND_USD: Record<string, number> = { '480p': 0.05, '720p': 0.08, '1080p': 0.14 };

/** What a task keeps of its request: not the prompt, which may be a megabyte and is never read again. */
export interface AcceptedRequest {
  model: string;
  /** Seconds of video the task produces (for pricing and the result's duration). */
  seconds: number;
  resolution: string;
  costUsd: number;
  storage: { filename: string; expiresAfter: number | undefined; publicUrl: boolean } | undefined;
  uploadUrl: string | undefined;
  /** Set when the task must fail once generation runs. */
  asyncFailure: { code: string; message: string } | undefined;
}

function bad(param: string, message: string): HttpError {
  return new HttpError(400, 'invalid_request_error', message, param);
}

function optionalString(body: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw bad(key, `${key} must be a string.`);
  return value;
}

function optionalInteger(body: Readonly<Record<string, unknown>>, key: string): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw bad(key, `${key} must be an integer.`);
  return value;
}

function oneOf(value: string | undefined, allowed: readonly string[], param: string): string | undefined {
  if (value !== undefined && !allowed.includes(value)) throw bad(param, `${param} must be one of ${allowed.join(', ')}.`);
  return value;
}

/** An image or video source: exactly one of url and file_id. */
function referenceObject(value: unknown, param: string): Readonly<Record<string, unknown>> {
  if (!isRecord(value)) throw bad(param, `${param} must be an object with url or file_id.`);
  const hasUrl = typeof value.url === 'string' && value.url !== '';
  const hasFile = typeof value.file_id === 'string' && value.file_id !== '';
  if (hasUrl === hasFile) throw bad(param, `${param} must have exactly one of url and file_id.`);
  return value;
}

/** An image's url is a public http(s) address or a data: URI. */
function imageObject(value: unknown, param: string): void {
  const image = referenceObject(value, param);
  if (typeof image.url === 'string' && !isHttpUrl(image.url) && !image.url.startsWith('data:')) {
    throw bad(`${param}.url`, `${param}.url must be a public http(s) URL or a base64 data URI.`);
  }
}

/** An edit or extension source's url is an http(s) link whose path ends in .mp4. */
function videoSource(value: unknown): void {
  const video = referenceObject(value, 'video');
  if (typeof video.url !== 'string') return;
  if (!isHttpUrl(video.url)) throw bad('video.url', 'video.url must be an http(s) link to an .mp4 file.');
  if (!new URL(video.url).pathname.toLowerCase().endsWith('.mp4'))
    throw bad('video.url', 'video.url must be an .mp4 link that carries the .mp4 suffix.');
}

function storageOptions(body: Readonly<Record<string, unknown>>): AcceptedRequest['storage'] {
  const value = body.storage_options;
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw bad('storage_options', 'storage_options must be an object.');
  if (typeof value.filename !== 'string' || value.filename === '')
    throw bad('storage_options.filename', 'storage_options.filename is required.');
  if (value.filename.length > MAX_FILENAME_LENGTH)
    throw bad('storage_options.filename', `storage_options.filename may be at most ${MAX_FILENAME_LENGTH} characters.`);
  let expiresAfter: number | undefined;
  if (value.expires_after !== undefined) {
    if (typeof value.expires_after !== 'number' || !Number.isInteger(value.expires_after) || value.expires_after < 1) {
      throw bad('storage_options.expires_after', 'storage_options.expires_after must be a positive integer number of seconds.');
    }
    if (value.expires_after > MAX_STORAGE_EXPIRES_AFTER_S) {
      throw bad('storage_options.expires_after', `storage_options.expires_after must be at most ${MAX_STORAGE_EXPIRES_AFTER_S} seconds.`);
    }
    expiresAfter = value.expires_after;
  }
  if (value.public_url !== undefined && typeof value.public_url !== 'boolean')
    throw bad('storage_options.public_url', 'storage_options.public_url must be a boolean.');
  return { filename: value.filename, expiresAfter, publicUrl: value.public_url === true };
}

function uploadUrl(body: Readonly<Record<string, unknown>>): string | undefined {
  const output = body.output;
  if (output === undefined || output === null) return undefined;
  if (!isRecord(output) || typeof output.upload_url !== 'string') throw bad('output.upload_url', 'output.upload_url must be a string.');
  if (output.upload_url.length > MAX_UPLOAD_URL_LENGTH)
    throw bad('output.upload_url', `output.upload_url may be at most ${MAX_UPLOAD_URL_LENGTH} characters.`);
  if (!isHttpUrl(output.upload_url)) throw bad('output.upload_url', 'output.upload_url must be an http(s) address.');
  return output.upload_url;
}

function referenceAudios(body: Readonly<Record<string, unknown>>): number {
  const value = body.reference_audios;
  if (value === undefined || value === null) return 0;
  if (!Array.isArray(value)) throw bad('reference_audios', 'reference_audios must be an array.');
  if (value.length > MAX_REFERENCE_AUDIOS) throw bad('reference_audios', `At most ${MAX_REFERENCE_AUDIOS} reference audios are allowed.`);
  value.forEach((item: unknown, index) => {
    const param = `reference_audios[${index}]`;
    if (!isRecord(item)) throw bad(param, `${param} must be an object with voice_id or url.`);
    const hasVoice = typeof item.voice_id === 'string';
    const hasUrl = typeof item.url === 'string';
    if (hasVoice === hasUrl) throw bad(param, `${param} must have exactly one of voice_id and url.`);
    if (hasVoice && knownVoice(String(item.voice_id)) === undefined)
      throw bad(`${param}.voice_id`, unknownVoiceMessage('voice_id', String(item.voice_id)));
  });
  return value.length;
}

function referenceImages(body: Readonly<Record<string, unknown>>): number {
  const value = body.reference_images;
  if (value === undefined || value === null) return 0;
  if (!Array.isArray(value)) throw bad('reference_images', 'reference_images must be an array.');
  value.forEach((item: unknown, index) => imageObject(item, `reference_images[${index}]`));
  return value.length;
}

/**
 * What an accepted request is charged at submission. Only a valid request has a price: one that will fail
 * (duration out of range, a conflicting mode) is charged nothing, so a negative or absurd duration can
 * neither raise the quota nor be refused for a quota it would never spend.
 */
function price(resolution: string, seconds: number, asyncFailure: AcceptedRequest['asyncFailure']): number {
  if (asyncFailure || !(seconds > 0)) return 0;
  return (ownValue(PRICE_PER_SECOND_USD, resolution) ?? PRICE_PER_SECOND_USD['720p']!) * seconds;
}

export function acceptRequest(
  operation: VideoOperation,
  layer: Layer,
  body: Readonly<Record<string, unknown>>,
  vendor: string,
): AcceptedRequest {
  const model = optionalString(body, 'model');
  if (!model) throw bad('model', 'model is required.');
  const capabilities = videoModelCapabilities(model, vendor);
  if (!capabilities) throw bad('model', `${model} is not a video model.`);
  const prompt = optionalString(body, 'prompt');
  optionalString(body, 'user');
  const storage = storageOptions(body);
  const upload = uploadUrl(body);
  // The compatibility layer reads its aliases; the native layer forwards them untouched.
  const compat = layer === 'compat';
  let duration = optionalInteger(body, 'duration');
  if (compat && duration === undefined) duration = optionalInteger(body, 'seconds');

  let asyncFailure: AcceptedRequest['asyncFailure'];
  const failWith = (code: string, message: string) => {
    asyncFailure ??= { code, message };
  };
  if (prompt !== undefined && prompt.length > MAX_PROMPT_LENGTH)
    failWith('invalid_argument', `The prompt is too long (at most ${MAX_PROMPT_LENGTH} characters).`);

  if (operation !== 'generate') {
    if (!prompt) throw bad('prompt', 'prompt is required.');
    videoSource(body.video);
    if (capabilities.family === 'classic')
      failWith('failed_precondition', `${model} cannot ${operation === 'edit' ? 'edit' : 'extend'} videos.`);
    let seconds = 8;
    if (operation === 'extend') {
      const added = duration ?? EXTENSION_DURATION.default;
      if (added < EXTENSION_DURATION.min || added > EXTENSION_DURATION.max) {
        failWith('invalid_argument', `Extension duration must be between ${EXTENSION_DURATION.min} and ${EXTENSION_DURATION.max} seconds.`);
      }
      seconds = added;
    }
    return { model, seconds, resolution: '720p', costUsd: price('720p', seconds, asyncFailure), storage, uploadUrl: upload, asyncFailure };
  }

  let resolution = oneOf(optionalString(body, 'resolution'), RESOLUTIONS, 'resolution');
  if (compat && resolution === undefined) resolution = oneOf(optionalString(body, 'size'), RESOLUTIONS, 'size');
  oneOf(optionalString(body, 'aspect_ratio'), ASPECT_RATIOS, 'aspect_ratio');
  if (body.image !== undefined) imageObject(body.image, 'image');
  if (body.last_frame !== undefined) imageObject(body.last_frame, 'last_frame');
  const images = referenceImages(body);
  const audios = referenceAudios(body);
  const hasImage = body.image !== undefined;
  const hasLastFrame = body.last_frame !== undefined;

  const seconds = duration ?? GENERATION_DURATION.default;
  const finalResolution = resolution ?? DEFAULT_RESOLUTION;
  if (seconds < GENERATION_DURATION.min || seconds > GENERATION_DURATION.max) {
    failWith('invalid_argument', `Duration must be between ${GENERATION_DURATION.min} and ${GENERATION_DURATION.max} seconds.`);
  }
  if (!prompt && !hasImage && !hasLastFrame && images === 0 && audios === 0)
    failWith('invalid_argument', 'Prompt cannot be empty. Please provide a prompt.');
  if (capabilities.family === 'classic') {
    if (hasLastFrame) failWith('invalid_argument', `${model} does not support last_frame.`);
    if (hasImage && (images > 0 || audios > 0)) failWith('invalid_argument', `${model} cannot mix image with reference material.`);
  }
  if (audios > 0 && !capabilities.referenceAudio)
    failWith('failed_precondition', `Reference audio requires a 1.5 model; ${model} does not support it.`);
  if (finalResolution === '1080p') {
    const referenceOrFrames = images > 0 || audios > 0 || hasLastFrame;
    if (!capabilities.fullHd || referenceOrFrames)
      failWith('failed_precondition', '1080p is available only on the 1.5 model for text-to-video and image-to-video.');
  }
  if (images > 0 && finalResolution === '1080p') failWith('failed_precondition', 'Reference-image mode allows at most 720p.');

  return {
    model,
    seconds,
    resolution: finalResolution,
    costUsd: price(finalResolution, seconds, asyncFailure),
    storage,
    uploadUrl: upload,
    asyncFailure,
  };
}
