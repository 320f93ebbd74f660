// What rule of docs/gateway.md a request breaks, as data: the rule's code and what it needs to be said
// (a model name, a range, the values allowed). The gateway client states each in English (a
// ValidationError's message, for logs and for callers of the client alone); the bot words the same issue
// in its reader's language from the codes (src/wording/validation.ts), so the two stay one list.

/** How a request without images or references, an edit and an extension say why they need a prompt. */
export type PromptPurpose = 'text_to_video' | 'edit' | 'extend';

/** Which length a duration gives: the whole video's (a generation) or the part added (an extension). */
export type DurationMeaning = 'video_length' | 'added_length';

export type ValidationIssue =
  | { rule: 'video-model'; latest: string; classic: string }
  | { rule: 'text' }
  | { rule: 'prompt-required'; purpose: PromptPurpose }
  | { rule: 'image-object' }
  | { rule: 'url-or-file-id' }
  | { rule: 'image-url' }
  | { rule: 'file-id' }
  | { rule: 'list' }
  | { rule: 'list-empty' }
  | { rule: 'audio-object' }
  | { rule: 'voice-or-url' }
  | { rule: 'voice-id' }
  | { rule: 'audio-url' }
  | { rule: 'seconds-range'; min: number; max: number; meaning: DurationMeaning }
  | { rule: 'alias'; canonical: string }
  | { rule: 'object' }
  | { rule: 'filename-required' }
  | { rule: 'storage-expiry'; max: number }
  | { rule: 'boolean' }
  | { rule: 'upload-url' }
  | { rule: 'last-frame-model'; latest: string; model: string }
  | { rule: 'image-with-references'; latest: string; model: string }
  | { rule: 'reference-audio-model'; latest: string; classic: string }
  | { rule: 'too-many-audios'; max: number; count: number }
  | { rule: 'one-of'; allowed: readonly string[] }
  | { rule: 'reference-image-resolution'; max: string }
  | { rule: 'full-hd'; latest: string }
  | { rule: 'video-required' }
  | { rule: 'video-url' }
  | { rule: 'task-id' }
  | { rule: 'secret-expiry'; max: number }
  | { rule: 'stored-invalid' }
  | { rule: 'stored-not-list' };

export type ValidationRule = ValidationIssue['rule'];

const PROMPT_PURPOSES: Readonly<Record<PromptPurpose, string>> = {
  text_to_video: 'for text-to-video (no image, last_frame or reference material)',
  edit: 'to describe the edit',
  extend: 'to describe how the video continues',
};

const DURATION_MEANINGS: Readonly<Record<DurationMeaning, string>> = { video_length: 'the video length', added_length: 'the added length' };

/** What a stored value of `field` is called when it cannot be read back. */
function storedName(field: string): string {
  if (field === 'reference_audios') return 'reference audio is';
  if (field === 'storage_options') return 'storage options are';
  return `${field} is`;
}

/** `issue` of the request's `field`, in English. */
export function describeIssueInEnglish(field: string, issue: ValidationIssue): string {
  switch (issue.rule) {
    case 'video-model':
      return `${field} must be a video model: ${issue.latest} or ${issue.classic}.`;
    case 'text':
      return `${field} must be text.`;
    case 'prompt-required':
      return `${field} is required ${PROMPT_PURPOSES[issue.purpose]}.`;
    case 'image-object':
      return `${field} must be an object with url or file_id.`;
    case 'url-or-file-id':
      return `${field} needs exactly one of url or file_id.`;
    case 'image-url':
      return `${field} must be a public http(s) URL or a base64 image data URI.`;
    case 'file-id':
      return `${field} must be a non-empty file id.`;
    case 'list':
      return `${field} must be a list.`;
    case 'list-empty':
      return `${field} must not be empty; leave it out instead.`;
    case 'audio-object':
      return `${field} must be an object with voice_id or url.`;
    case 'voice-or-url':
      return `${field} needs exactly one of voice_id (a built-in voice) or url (live voice audio).`;
    case 'voice-id':
      return `${field} must be a voice id such as eve: letters, digits, - and _.`;
    case 'audio-url':
      return `${field} must be a public http(s) URL of at most 15 s of live voice audio.`;
    case 'seconds-range':
      return `${field} must be a whole number of seconds from ${issue.min} to ${issue.max} (${DURATION_MEANINGS[issue.meaning]}).`;
    case 'alias':
      return `${field} is another name for ${issue.canonical}; give only one of them, or the same value.`;
    case 'object':
      return `${field} must be an object.`;
    case 'filename-required':
      return `${field} is required when storing the result.`;
    case 'storage-expiry':
      return `${field} must be a whole number of seconds from 1 to ${issue.max} (30 days).`;
    case 'boolean':
      return `${field} must be true or false.`;
    case 'upload-url':
      return `${field} must be a signed http(s) PUT address.`;
    case 'last-frame-model':
      return `${field} needs ${issue.latest}; ${issue.model} does not support it.`;
    case 'image-with-references':
      return `${issue.model} cannot combine image with reference_images or reference_audios; use ${issue.latest}.`;
    case 'reference-audio-model':
      return `${field} need ${issue.latest}; ${issue.classic} has no reference audio.`;
    case 'too-many-audios':
      return `At most ${issue.max} ${field} are allowed (got ${issue.count}).`;
    case 'one-of':
      return `${field} must be one of ${issue.allowed.join(', ')}.`;
    case 'reference-image-resolution':
      return `Reference-image mode allows at most ${issue.max}.`;
    case 'full-hd':
      return `1080p needs ${issue.latest} and text-to-video or image-to-video.`;
    case 'video-required':
      return `${field} is required: the source as {url} or {file_id}.`;
    case 'video-url':
      return `${field} must be an http(s) link to an .mp4 file that carries the .mp4 suffix.`;
    case 'task-id':
      return 'A task id is required.';
    case 'secret-expiry':
      return `${field} must be a whole number from 1 to ${issue.max}.`;
    case 'stored-invalid':
      return `the stored ${storedName(field)} not valid`;
    case 'stored-not-list':
      return `the stored ${field} is not a list`;
  }
}
