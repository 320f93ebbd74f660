import { ValidationError } from '../gateway/errors.ts';
import { isRecord } from '../lib/json.ts';
import type { VideoOperation } from '../gateway/spec.ts';
import type { EditRequest, ExtensionRequest, GenerationRequest, ImageInput, ReferenceAudio, StorageOptions } from '../gateway/types.ts';
import { validateEdit, validateExtension, validateGeneration, type ValidationOptions } from '../gateway/validation.ts';
import type { OperationRequest } from './plan.ts';

// A request kept with its task, read back for Regenerate: rebuilt field by field from the stored JSON,
// then held to the same validation as a new one.

function optional<T>(source: Readonly<Record<string, unknown>>, key: string, check: (value: unknown) => value is T): T | undefined {
  const value = source[key];
  if (value === undefined) return undefined;
  if (!check(value)) throw new ValidationError(key, { rule: 'stored-invalid' });
  return value;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean';

function image(value: unknown): ImageInput {
  if (!isRecord(value)) throw new ValidationError('image', { rule: 'stored-invalid' });
  const url = optional(value, 'url', isString);
  const fileId = optional(value, 'file_id', isString);
  return { ...(url === undefined ? {} : { url }), ...(fileId === undefined ? {} : { file_id: fileId }) };
}

function audio(value: unknown): ReferenceAudio {
  if (!isRecord(value)) throw new ValidationError('reference_audios', { rule: 'stored-invalid' });
  const url = optional(value, 'url', isString);
  const voice = optional(value, 'voice_id', isString);
  return { ...(url === undefined ? {} : { url }), ...(voice === undefined ? {} : { voice_id: voice }) };
}

function storage(value: unknown): StorageOptions | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) throw new ValidationError('storage_options', { rule: 'stored-invalid' });
  const filename = optional(value, 'filename', isString) ?? '';
  const expiresAfter = optional(value, 'expires_after', isNumber);
  const publicUrl = optional(value, 'public_url', isBoolean);
  return {
    filename,
    ...(expiresAfter === undefined ? {} : { expires_after: expiresAfter }),
    ...(publicUrl === undefined ? {} : { public_url: publicUrl }),
  };
}

function list<T>(source: Readonly<Record<string, unknown>>, key: string, item: (value: unknown) => T): T[] | undefined {
  const value = source[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new ValidationError(key, { rule: 'stored-not-list' });
  return value.map(item);
}

function withoutUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}

export function parseStoredRequest(
  operation: VideoOperation,
  raw: Readonly<Record<string, unknown>>,
  options: ValidationOptions,
): OperationRequest {
  const model = optional(raw, 'model', isString) ?? '';
  const user = optional(raw, 'user', isString);
  if (operation === 'generate') {
    const request: GenerationRequest = withoutUndefined({
      model,
      user,
      prompt: optional(raw, 'prompt', isString),
      duration: optional(raw, 'duration', isNumber),
      resolution: optional(raw, 'resolution', isString),
      aspect_ratio: optional(raw, 'aspect_ratio', isString),
      image: raw.image === undefined ? undefined : image(raw.image),
      last_frame: raw.last_frame === undefined ? undefined : image(raw.last_frame),
      reference_images: list(raw, 'reference_images', image),
      reference_audios: list(raw, 'reference_audios', audio),
      storage_options: storage(raw.storage_options),
    });
    validateGeneration(request, options);
    return { operation, request };
  }
  const video = image(raw.video);
  const prompt = optional(raw, 'prompt', isString) ?? '';
  if (operation === 'edit') {
    const request: EditRequest = withoutUndefined({ model, prompt, video, user });
    validateEdit(request, options);
    return { operation, request };
  }
  const request: ExtensionRequest = withoutUndefined({ model, prompt, video, user, duration: optional(raw, 'duration', isNumber) });
  validateExtension(request, options);
  return { operation, request };
}
