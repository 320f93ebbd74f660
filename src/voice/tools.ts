import type { FunctionTool } from '../gateway/realtime/client.ts';
import { ASPECT_RATIOS, GENERATION_DURATION, RESOLUTIONS } from '../gateway/spec.ts';
import { isRecord } from '../lib/json.ts';
import { refuse, type Result } from '../lib/result.ts';
import type { VoiceCaller, VoiceToolOutcome, VoiceVideoRequest, VoiceVideoRequests } from '../ports/voice-video.ts';
import { MAX_VARIANTS } from '../ports/video-defaults.ts';
import { graphemePrefix } from '../lib/text.ts';

// The function tools a voice conversation declares, the checks of the arguments the model sends, and
// the outputs it is given: JSON with a `status` and a `message` it can say as is.

/** As long as /video generate's `prompt` option allows. */
export const VOICE_PROMPT_MAX_CHARS = 4000;
/** A task ref or gateway id named by voice: longer is certainly not one. */
const TASK_REF_MAX_CHARS = 100;

export const VOICE_TOOLS: readonly FunctionTool[] = [
  {
    type: 'function',
    name: 'generate_video',
    description:
      'Make a video for the person who asked, under the same rules and limits as /video generate. The card and the finished video are posted in the text channel. A video the key cannot start yet is queued: tell them its place in line. Tell them what the output says.',
    parameters: {
      type: 'object',
      properties: {
        prompt: { type: 'string', description: 'What the video shows, in the words of the request.' },
        duration: {
          type: 'integer',
          minimum: GENERATION_DURATION.min,
          maximum: GENERATION_DURATION.max,
          description: 'Length in seconds; leave out for the server default.',
        },
        aspect_ratio: { type: 'string', enum: [...ASPECT_RATIOS] },
        resolution: { type: 'string', enum: [...RESOLUTIONS] },
        variants: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_VARIANTS,
          description: 'How many takes to make side by side, each counted as one video; leave out for the server default.',
        },
      },
      required: ['prompt'],
      additionalProperties: false,
    },
  },
  {
    type: 'function',
    name: 'video_status',
    description: 'Where a video task stands: the latest of the person who asked, or the task they name by its ref.',
    parameters: {
      type: 'object',
      properties: { task: { type: 'string', description: 'The task ref, e.g. from its card; leave out for their latest.' } },
      additionalProperties: false,
    },
  },
];

export type ToolCall = { name: 'generate_video'; request: VoiceVideoRequest } | { name: 'video_status'; taskRef: string | undefined };

/** The call as one of the tools with checked arguments, or what is wrong with it (for the model, naming the argument). */
export function parseToolCall(name: string, argumentsText: string): Result<{ call: ToolCall }> {
  if (name !== 'generate_video' && name !== 'video_status') {
    return refuse(`There is no function "${graphemePrefix(name, 64)}". The functions are generate_video and video_status.`);
  }
  let parsed: unknown;
  try {
    parsed = argumentsText.trim() === '' ? {} : JSON.parse(argumentsText);
  } catch {
    return refuse(`The arguments of ${name} are not valid JSON; nothing was done.`);
  }
  if (!isRecord(parsed)) return refuse(`The arguments of ${name} must be a JSON object; nothing was done.`);
  if (name === 'video_status') {
    const unknown = Object.keys(parsed).find((key) => key !== 'task');
    if (unknown !== undefined) return refuse(`video_status has no argument "${graphemePrefix(unknown, 64)}"; it takes only task.`);
    const task = parsed.task;
    if (task !== undefined && (typeof task !== 'string' || task.trim() === '' || task.length > TASK_REF_MAX_CHARS)) {
      return refuse('task must be a task ref (text), or left out for the latest task.');
    }
    return { ok: true, call: { name, taskRef: typeof task === 'string' ? task.trim() : undefined } };
  }
  const known = ['prompt', 'duration', 'aspect_ratio', 'resolution', 'variants'];
  const unknown = Object.keys(parsed).find((key) => !known.includes(key));
  if (unknown !== undefined)
    return refuse(`generate_video has no argument "${graphemePrefix(unknown, 64)}"; it takes ${known.join(', ')}.`);
  const { prompt, duration, aspect_ratio: aspectRatio, resolution, variants } = parsed;
  if (typeof prompt !== 'string' || prompt.trim() === '')
    return refuse('prompt is required: say what the video should show. Nothing was done.');
  if (prompt.length > VOICE_PROMPT_MAX_CHARS)
    return refuse(`prompt can be at most ${VOICE_PROMPT_MAX_CHARS} characters. Nothing was done.`);
  if (
    duration !== undefined &&
    (typeof duration !== 'number' ||
      !Number.isInteger(duration) ||
      duration < GENERATION_DURATION.min ||
      duration > GENERATION_DURATION.max)
  ) {
    return refuse(
      `duration must be a whole number of seconds from ${GENERATION_DURATION.min} to ${GENERATION_DURATION.max}. Nothing was done.`,
    );
  }
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((ratio) => ratio === aspectRatio)) {
    return refuse(`aspect_ratio must be one of ${ASPECT_RATIOS.join(', ')}. Nothing was done.`);
  }
  if (variants !== undefined && (typeof variants !== 'number' || !Number.isInteger(variants) || variants < 1 || variants > MAX_VARIANTS)) {
    return refuse(`variants must be a whole number from 1 to ${MAX_VARIANTS}. Nothing was done.`);
  }
  if (resolution !== undefined && !RESOLUTIONS.some((value) => value === resolution)) {
    return refuse(`resolution must be one of ${RESOLUTIONS.join(', ')}. Nothing was done.`);
  }
  return {
    ok: true,
    call: {
      name,
      request: {
        prompt: prompt.trim(),
        duration: typeof duration === 'number' ? duration : undefined,
        aspectRatio: typeof aspectRatio === 'string' ? aspectRatio : undefined,
        resolution: typeof resolution === 'string' ? resolution : undefined,
        ...(typeof variants === 'number' ? { variants } : {}),
      },
    },
  };
}

/** The output the model is given. */
export function toolOutput(outcome: VoiceToolOutcome | { status: 'invalid_arguments' | 'not_done'; message: string }): string {
  return JSON.stringify(outcome);
}

/** Runs a call as `caller` (undefined: nobody was heard, so nobody to run it as). */
export async function runToolCall(
  requests: VoiceVideoRequests,
  caller: VoiceCaller | undefined,
  name: string,
  argumentsText: string,
): Promise<string> {
  const parsed = parseToolCall(name, argumentsText);
  if (!parsed.ok) return toolOutput({ status: 'invalid_arguments', message: parsed.message });
  if (!caller) return toolOutput({ status: 'not_done', message: 'I could not tell who asked, so nothing was done. Ask again.' });
  const { call } = parsed;
  return toolOutput(
    call.name === 'generate_video' ? await requests.generate(caller, call.request) : await requests.status(caller, call.taskRef),
  );
}
