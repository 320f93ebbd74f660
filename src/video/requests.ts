import { createHmac } from 'node:crypto';
import type { EditRequest, ExtensionRequest, GenerationRequest, ImageInput, ReferenceAudio, StorageOptions } from '../gateway/types.ts';
import { MAX_REFERENCE_AUDIOS, MAX_REFERENCE_AUDIO_SECONDS } from '../gateway/spec.ts';
import { ENGLISH } from '../i18n/index.ts';
import { notice, word, type Notice } from '../wording/notice.ts';
import type { GenerationMode } from './record.ts';
import type { StorageDefaults } from '../ports/video-defaults.ts';

// From what a user typed in Discord to the gateway's request, and back from the gateway's field names to
// the option the user must fix.

export interface AttachmentInput {
  url: string;
  filename: string;
  contentType: string | undefined;
  /** Bytes, when Discord says (a picture embedded from a link has no size). */
  size?: number;
}

export interface GenerationInput {
  prompt: string | undefined;
  model: string;
  duration: number | undefined;
  resolution: string | undefined;
  aspectRatio: string | undefined;
  image: AttachmentInput | undefined;
  lastFrame: AttachmentInput | undefined;
  referenceImages: AttachmentInput[];
  voices: string[];
  referenceAudio: AttachmentInput | undefined;
}

/** What is wrong with what a member gave, for them to fix: told by inputNotice(). */
export type InputProblem =
  | { kind: 'not-an-image'; file: string; type: string }
  | { kind: 'too-many-voices'; max: number }
  | { kind: 'not-voice-audio'; file: string };

export class InputError extends Error {
  /** The Discord option the user must fix. */
  readonly option: string;
  readonly problem: InputProblem;
  constructor(option: string, problem: InputProblem) {
    super(word(ENGLISH, noticeOf(option, problem)));
    this.name = 'InputError';
    this.option = option;
    this.problem = problem;
  }
}

function noticeOf(option: string, problem: InputProblem): Notice {
  switch (problem.kind) {
    case 'not-an-image':
      return notice('video.input.not-an-image', { option, file: problem.file, type: problem.type });
    case 'too-many-voices':
      return notice('video.input.too-many-voices', { max: problem.max });
    case 'not-voice-audio':
      return notice('video.input.not-voice-audio', { file: problem.file, seconds: MAX_REFERENCE_AUDIO_SECONDS });
  }
}

/** What the member must fix. */
export function inputNotice(error: InputError): Notice {
  return noticeOf(error.option, error.problem);
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);
/** The names of those pictures, for a file Discord gave no content type. */
const IMAGE_NAME = /\.(png|jpe?g|webp|gif)$/i;

/** An attachment's media type without parameters, in lower case (`image/png`), when Discord gave one. */
function mediaType(attachment: AttachmentInput): string | undefined {
  return attachment.contentType?.split(';')[0]?.trim().toLowerCase();
}

/** A picture the gateway takes as a frame or a reference: PNG, JPEG, WebP or GIF, by its type, or by its name when it has no type. */
export function isImageAttachment(attachment: AttachmentInput): boolean {
  const type = mediaType(attachment);
  return type === undefined ? IMAGE_NAME.test(attachment.filename) : IMAGE_TYPES.has(type);
}

/** A video the gateway edits or extends: a link to an `.mp4` (the contract wants the suffix), `video/mp4` when it has a type. */
export function isMp4Attachment(attachment: AttachmentInput): boolean {
  const type = mediaType(attachment);
  const path = URL.parse(attachment.url)?.pathname.toLowerCase();
  return path !== undefined && path.endsWith('.mp4') && (type === undefined || type === 'video/mp4');
}

/** A picture as the gateway takes it, refused naming `option` when it is not one. */
export function imageFrom(option: string, attachment: AttachmentInput): ImageInput {
  const type = mediaType(attachment);
  if (type !== undefined && !IMAGE_TYPES.has(type)) {
    throw new InputError(option, { kind: 'not-an-image', file: attachment.filename, type });
  }
  return { url: attachment.url };
}

/** The mode follows from the fields sent (docs/gateway.md, "Generation modes"). */
export function generationMode(request: GenerationRequest): GenerationMode {
  if (request.last_frame) return 'first-last-frame';
  if (request.reference_images?.length || request.reference_audios?.length) return 'reference';
  if (request.image) return 'image-to-video';
  return 'text-to-video';
}

/** Up to three voice ids typed as one option: "eve, leo" or "eve leo". */
export function parseVoiceList(text: string | undefined): string[] {
  if (!text) return [];
  return text
    .split(/[\s,]+/)
    .map((voice) => voice.trim().toLowerCase())
    .filter((voice) => voice !== '');
}

export function buildGenerationRequest(input: GenerationInput, user: string, storage: StorageOptions | undefined): GenerationRequest {
  const request: GenerationRequest = { model: input.model, user };
  if (input.prompt) request.prompt = input.prompt;
  if (input.duration !== undefined) request.duration = input.duration;
  if (input.resolution !== undefined) request.resolution = input.resolution;
  if (input.aspectRatio !== undefined) request.aspect_ratio = input.aspectRatio;
  if (input.image) request.image = imageFrom('image', input.image);
  if (input.lastFrame) request.last_frame = imageFrom('last_frame', input.lastFrame);
  if (input.referenceImages.length > 0) {
    request.reference_images = input.referenceImages.map((attachment, index) =>
      imageFrom(index === 0 ? 'reference_image' : `reference_image_${index + 1}`, attachment),
    );
  }
  if (input.voices.length + (input.referenceAudio ? 1 : 0) > MAX_REFERENCE_AUDIOS) {
    throw new InputError('voice', { kind: 'too-many-voices', max: MAX_REFERENCE_AUDIOS });
  }
  const audios: ReferenceAudio[] = input.voices.map((voice) => ({ voice_id: voice }));
  if (input.referenceAudio) {
    const type = mediaType(input.referenceAudio);
    if (type !== undefined && !type.startsWith('audio/')) {
      throw new InputError('reference_audio', { kind: 'not-voice-audio', file: input.referenceAudio.filename });
    }
    audios.push({ url: input.referenceAudio.url });
  }
  if (audios.length > 0) request.reference_audios = audios;
  if (storage) request.storage_options = storage;
  return request;
}

export function buildEditRequest(model: string, prompt: string, videoUrl: string, user: string): EditRequest {
  return { model, prompt, video: { url: videoUrl }, user };
}

export function buildExtensionRequest(
  model: string,
  prompt: string,
  videoUrl: string,
  duration: number | undefined,
  user: string,
): ExtensionRequest {
  const request: ExtensionRequest = { model, prompt, video: { url: videoUrl }, user };
  if (duration !== undefined) request.duration = duration;
  return request;
}

/** The name a task's video is stored under in the gateway's storage: one per task. */
export function storageFilename(guildId: string, taskId: string): string {
  // A member's own install counts under a scope (`user-install:<id>`): its colon is no part of a file name.
  return `discord-${guildId.replaceAll(':', '-')}-${taskId}.mp4`;
}

/**
 * Whether a stored request points at a Discord attachment whose signed link has expired (`ex`, hex unix
 * seconds, next to `is` and `hm`): the gateway could no longer fetch it.
 */
export function hasExpiredAttachmentLink(value: unknown, now: number): boolean {
  if (typeof value === 'string') {
    const query = URL.parse(value)?.searchParams;
    const expires = query?.get('ex');
    if (!query || !expires || !/^[0-9a-f]+$/i.test(expires) || !query.has('is') || !query.has('hm')) return false;
    return Number.parseInt(expires, 16) * 1000 <= now;
  }
  if (Array.isArray(value)) return value.some((item) => hasExpiredAttachmentLink(item, now));
  if (typeof value === 'object' && value !== null) return Object.values(value).some((item) => hasExpiredAttachmentLink(item, now));
  return false;
}

export function storageOptionsFor(defaults: StorageDefaults, filename: string): StorageOptions | undefined {
  if (defaults.keepDays <= 0 && !defaults.publicLink) return undefined;
  const options: StorageOptions = { filename };
  if (defaults.keepDays > 0) options.expires_after = defaults.keepDays * 86_400;
  if (defaults.publicLink) options.public_url = true;
  return options;
}

/** Maps a gateway field path from a ValidationError to the /video option a user can change. */
export function optionForField(field: string): string {
  const indexed = /^reference_images\[(\d+)\]/.exec(field);
  if (indexed) return Number(indexed[1]) === 0 ? 'reference_image' : `reference_image_${Number(indexed[1]) + 1}`;
  // A voice_id can only come from the `voice` option (the recording is a url).
  if (/^reference_audios\[\d+\]\.voice_id$/.test(field)) return 'voice';
  if (field.startsWith('reference_audios')) return 'voice` / `reference_audio';
  if (field.startsWith('last_frame')) return 'last_frame';
  if (field.startsWith('image')) return 'image';
  if (field.startsWith('video')) return 'video` / `task';
  if (field === 'seconds') return 'duration';
  if (field === 'size') return 'resolution';
  if (field.startsWith('storage_options')) return 'storage (a server setting: `/config storage`)';
  return field;
}

// The native layer passes upstream errors through as text, without `param`: the request fields that such
// a text may name, most specific first, and the option a user changes for each.
const FIELDS_IN_TEXT: [RegExp, string][] = [
  [/\bvoice_id\b/, 'voice'],
  [/\breference_audios?\b/, 'voice` / `reference_audio'],
  [/\breference_images?\b/, 'reference_image'],
  [/\blast_frame\b/, 'last_frame'],
  [/\baspect_ratio\b/, 'aspect_ratio'],
  [/\bresolution\b/, 'resolution'],
  [/\bduration\b/, 'duration'],
];

/** The /video option an error text without `param` names by its request field, if any. */
export function optionNamedIn(text: string): string | undefined {
  return FIELDS_IN_TEXT.find(([field]) => field.test(text))?.[1];
}

/**
 * The spec's `user`: stable per Discord user so the gateway can attribute abuse, but keyed with this
 * installation's secret salt so nobody can recover the Discord id from it (ids are guessable).
 */
export function endUserId(salt: Buffer, discordUserId: string): string {
  return createHmac('sha256', salt).update(`discord-user:${discordUserId}`).digest('base64url').slice(0, 32);
}
