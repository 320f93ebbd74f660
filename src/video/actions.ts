import { customId, customIdParts } from '../discord/custom-id.ts';

// The buttons under a posted video and the forms they open: the delivery writes these ids, /video reads
// them back (commands/video.ts), so both take them from here.

const COMMAND = 'video';

/**
 * Buttons under a finished video, in the order they are shown (Vary under a job's variants only), the
 * forms three of them open, the two buttons of a video that waits for its member's confirmation
 * (`src/video/confirmations.ts`), the Cancel of a job waiting in its key's line (`unqueue`), and the
 * Delete of a finished job's card with the two buttons of its private question (`delete-confirm`,
 * `delete-keep`).
 */
const VIDEO_ACTIONS = [
  'extend',
  'edit',
  'regenerate',
  'change',
  'vary',
  'extend-modal',
  'edit-modal',
  'change-modal',
  'confirm',
  'cancel',
  'unqueue',
  'delete',
  'delete-confirm',
  'delete-keep',
] as const;
export type VideoAction = (typeof VIDEO_ACTIONS)[number];

export function videoActionId(action: VideoAction, taskId: string): string {
  return customId(COMMAND, action, taskId);
}

/** The action and task of a /video button or form, or undefined when the id is not one of ours. */
export function parseVideoActionId(id: string): { action: VideoAction; taskId: string } | undefined {
  const [command, action, taskId] = customIdParts(id);
  const known = VIDEO_ACTIONS.find((candidate) => candidate === action);
  if (command !== COMMAND || !known || !taskId) return undefined;
  return { action: known, taskId };
}

/** The forms `/video edit` and `/video extend` open when given no source: they take the `.mp4` as an upload. */
const UPLOAD_FORMS = { edit: 'edit-upload', extend: 'extend-upload' } as const;

/** The id of an upload form, carrying the `model` the command was given (ids hold the state, so a restart loses nothing). */
export function uploadFormId(operation: 'edit' | 'extend', model: string | undefined): string {
  return model === undefined ? customId(COMMAND, UPLOAD_FORMS[operation]) : customId(COMMAND, UPLOAD_FORMS[operation], model);
}

/** The operation and model of an upload form's id, or undefined when it is not one. */
export function parseUploadFormId(id: string): { operation: 'edit' | 'extend'; model: string | undefined } | undefined {
  const [command, form, model] = customIdParts(id);
  if (command !== COMMAND) return undefined;
  const operation = form === UPLOAD_FORMS.edit ? 'edit' : form === UPLOAD_FORMS.extend ? 'extend' : undefined;
  return operation && { operation, model: model || undefined };
}
