import type { EmulatedTask, TaskEngine } from './tasks.ts';

// What a query answers, per layer (docs/gateway.md, "Task result" and "Query results").

export interface RenderedAnswer {
  status: number;
  /** undefined: an empty body (native pending, every other poll, as upstream does). */
  body: unknown;
}

function storage(task: EmulatedTask): Record<string, unknown> {
  const video: Record<string, unknown> = {};
  if (task.stored) {
    video.file_output = {
      file_id: task.stored.fileId,
      filename: task.request.storage?.filename,
      ...(task.stored.expiresAt === undefined ? {} : { expires_at: Math.floor(task.stored.expiresAt / 1000) }),
      ...(task.stored.publicUrl === undefined ? {} : { public_url: task.stored.publicUrl }),
    };
  }
  if (task.storageError) video.storage_error = task.storageError;
  return video;
}

export function renderNative(engine: TaskEngine, task: EmulatedTask, now: number): RenderedAnswer {
  const base = { request_id: task.id, model: task.request.model };
  if (task.state === 'running') {
    task.polls++;
    return task.polls % 2 === 0
      ? { status: 202, body: undefined }
      : { status: 202, body: { status: 'pending', progress: engine.progress(task, now) } };
  }
  const usage = engine.usage(task);
  if (task.state === 'failed') return { status: 200, body: { ...base, status: 'failed', error: task.error, ...usage } };
  if (task.plan.kind === 'succeed' && task.plan.moderated) {
    return {
      status: 200,
      body: {
        ...base,
        status: 'done',
        video: { url: '', duration: engine.resultSeconds(task), respect_moderation: false },
        progress: 100,
        ...usage,
      },
    };
  }
  if (engine.urlExpired(task, now)) return { status: 200, body: { ...base, status: 'expired', ...usage } };
  const video = { url: engine.temporaryUrl(task) ?? '', duration: engine.resultSeconds(task), respect_moderation: true, ...storage(task) };
  return { status: 200, body: { ...base, status: 'done', video, progress: 100, ...usage } };
}

export function renderCompat(engine: TaskEngine, task: EmulatedTask, now: number): RenderedAnswer {
  const base = { task_id: task.id, object: 'video', model: task.request.model, created_at: Math.floor(task.createdAt / 1000) };
  if (task.state === 'running') {
    const progress = engine.progress(task, now);
    return { status: 200, body: { ...base, status: progress < 10 ? 'queued' : 'processing', progress } };
  }
  const usage = engine.usage(task);
  if (task.state === 'failed') return { status: 200, body: { ...base, status: 'failed', error: task.error, ...usage } };
  // Moderation on this layer mirrors the native one: succeeded, no url, respect_moderation false.
  if (task.plan.kind === 'succeed' && task.plan.moderated) {
    return { status: 200, body: { ...base, status: 'succeeded', url: '', progress: 100, video: { respect_moderation: false }, ...usage } };
  }
  const video = { respect_moderation: true, duration: engine.resultSeconds(task), ...storage(task) };
  return { status: 200, body: { ...base, status: 'succeeded', url: engine.temporaryUrl(task) ?? '', progress: 100, video, ...usage } };
}
