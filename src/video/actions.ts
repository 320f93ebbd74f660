import { customId, customIdParts } from '../discord/custom-id.ts';

// The buttons under a posted video and the forms they open: the delivery writes these ids, /video reads
// them back (commands/video.ts), so both take them from here.

const COMMAND = 'video';

/**
 * Buttons under a finished video, in the order they are shown, the forms two of them open, and the two
 * buttons of a video that waits for its member's confirmation (`src/video/confirmations.ts`).
 */
const VIDEO_ACTIONS = ['extend', 'edit', 'regenerate', 'extend-modal', 'edit-modal', 'confirm', 'cancel'] as const;
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
