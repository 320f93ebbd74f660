import { describe, expect, it } from 'vitest';
import { MalformedResponseError } from '../../src/gateway/errors.ts';
import { parseSubmission, parseTaskResult } from '../../src/gateway/task-result.ts';
import type { Layer } from '../../src/gateway/spec.ts';

const result = (layer: Layer, body: unknown, httpStatus = 200) =>
  parseTaskResult({ id: 'task_1', layer, requestId: 'req_1', httpStatus, body });

describe('task results of both layers', () => {
  it('normalises a finished native task (the "Query results" example of docs/gateway.md)', () => {
    const task = result('native', {
      status: 'done',
      video: { url: 'https://cdn.example.com/v/video.mp4', duration: 8, respect_moderation: true },
      model: 'svc-imagine-video-1.5',
      progress: 100,
      usage: { cost_in_usd_ticks: 6_400_000_000 },
    });
    expect(task).toMatchObject({
      id: 'task_1',
      layer: 'native',
      status: 'succeeded',
      rawStatus: 'done',
      videoUrl: 'https://cdn.example.com/v/video.mp4',
      moderated: false,
      durationSeconds: 8,
      model: 'svc-imagine-video-1.5',
      progress: 100,
      costUsdTicks: 6_400_000_000,
      costUsd: 0.64,
      error: undefined,
      requestId: 'req_1',
    });
  });

  it('normalises a finished compatibility task with stored file info', () => {
    const task = result('compat', {
      task_id: 'task_1',
      status: 'succeeded',
      url: 'https://gw.example.com/files/a.mp4',
      progress: 100,
      video: {
        file_output: { file_id: 'file_9', filename: 'cat.mp4', expires_at: 1_800_000_000, public_url: 'https://files.example.com/cat.mp4' },
      },
    });
    expect(task.status).toBe('succeeded');
    expect(task.videoUrl).toBe('https://gw.example.com/files/a.mp4');
    expect(task.file).toEqual({
      fileId: 'file_9',
      filename: 'cat.mp4',
      expiresAt: new Date(1_800_000_000_000),
      publicUrl: 'https://files.example.com/cat.mp4',
    });
    expect(task.costUsd).toBeUndefined();
  });

  it('keeps the url usable when storage failed', () => {
    const task = result('native', { status: 'done', video: { url: 'https://x.example/v.mp4', storage_error: 'bucket full' } });
    expect(task).toMatchObject({ status: 'succeeded', videoUrl: 'https://x.example/v.mp4', storageError: 'bucket full', file: undefined });
  });

  it.each<[Layer, unknown]>([
    ['native', { status: 'done', video: { url: '', respect_moderation: false } }],
    ['compat', { task_id: 'task_1', status: 'succeeded', url: '', video: { respect_moderation: false } }],
    ['compat', { task_id: 'task_1', status: 'succeeded', url: '', respect_moderation: false }],
  ])('recognises a moderated %s result and offers no empty link', (layer, body) => {
    const task = result(layer, body);
    expect(task.moderated).toBe(true);
    expect(task.videoUrl).toBeUndefined();
  });

  it('treats a moderation error code as moderated', () => {
    const task = result('native', { status: 'failed', code: 'imagine:content-moderated', error: 'blocked' });
    expect(task).toMatchObject({ status: 'failed', moderated: true, error: { code: 'imagine:content-moderated', message: 'blocked' } });
  });

  it.each<[string, Layer, unknown, number, number | undefined]>([
    ['native 202 with a body', 'native', { status: 'pending', progress: 40 }, 202, 40],
    ['native 202 without a body', 'native', undefined, 202, undefined],
    ['native 200 pending', 'native', { status: 'pending' }, 200, undefined],
    ['native 200 without a body', 'native', undefined, 200, undefined],
    ['native 200 with progress and no status', 'native', { progress: 30 }, 200, 30],
    ['native 202 with progress and no status', 'native', { progress: 70 }, 202, 70],
    ['compat 202 without a body', 'compat', undefined, 202, undefined],
    ['compat queued', 'compat', { task_id: 'task_1', status: 'queued' }, 200, undefined],
    ['compat processing', 'compat', { task_id: 'task_1', status: 'processing', progress: 55 }, 200, 55],
    ['compat processing with progress as text', 'compat', { task_id: 'task_1', status: 'processing', progress: '55' }, 200, 55],
    ['native pending with progress as a percentage', 'native', { status: 'pending', progress: '40%' }, 202, 40],
    ['native pending with progress that is not a number', 'native', { status: 'pending', progress: 'soon' }, 202, undefined],
  ])('%s is still running', (_what, layer, body, httpStatus, progress) => {
    const task = result(layer, body, httpStatus);
    expect(task.status).toBe('running');
    expect(task.progress).toBe(progress);
    expect(task.videoUrl).toBeUndefined();
  });

  it('reads failures with an object or a string error', () => {
    expect(result('compat', { status: 'failed', error: { code: 'invalid_argument', message: 'bad' } }).error).toEqual({
      code: 'invalid_argument',
      message: 'bad',
    });
    expect(result('native', { status: 'failed', error: 'upstream broke' }).error).toEqual({ code: undefined, message: 'upstream broke' });
    expect(result('native', { status: 'failed' }).error?.message).toMatch(/without a reason/);
  });

  it('reads an expired native task', () => {
    expect(result('native', { status: 'expired' }).status).toBe('expired');
  });

  it.each<[string, Layer, unknown, number]>([
    ['an empty compat 200', 'compat', undefined, 200],
    ['a compat 200 without a status', 'compat', { task_id: 'task_1', video: {} }, 200],
    ['a JSON array', 'native', [], 200],
    ['an unknown status', 'native', { status: 'thinking' }, 200],
  ])('refuses %s with a clear error', (_what, layer, body, httpStatus) => {
    expect(() => result(layer, body, httpStatus)).toThrow(MalformedResponseError);
  });

  it('ignores a non-http url and wrongly typed fields instead of crashing', () => {
    const task = result('native', {
      status: 'done',
      progress: 'half',
      video: { url: 'javascript:alert(1)', duration: 'long' },
      usage: { cost_in_usd_ticks: 'many' },
    });
    expect(task).toMatchObject({
      status: 'succeeded',
      videoUrl: undefined,
      progress: undefined,
      durationSeconds: undefined,
      costUsdTicks: undefined,
    });
  });
});

describe('submission answers', () => {
  it('reads both layers', () => {
    expect(parseSubmission({ request_id: 'r1' }, { layer: 'native', requestId: 'x' })).toEqual({
      id: 'r1',
      layer: 'native',
      status: 'running',
      rawStatus: undefined,
      requestId: 'x',
    });
    expect(parseSubmission({ task_id: 't1', status: 'queued' }, { layer: 'compat', requestId: undefined })).toMatchObject({
      id: 't1',
      rawStatus: 'queued',
    });
  });

  it('says a task may exist when the id is missing', () => {
    expect(() => parseSubmission({ status: 'queued' }, { layer: 'compat', requestId: undefined })).toThrow(/no task_id; a task may exist/);
    expect(() => parseSubmission({ task_id: 't1' }, { layer: 'native', requestId: undefined })).toThrow(MalformedResponseError);
  });
});

describe('links in task results', () => {
  it('keeps a video address that is not an http(s) link apart, so it is never fetched or shared', () => {
    const task = result('native', { status: 'done', video: { url: 'javascript:alert(1)' } });
    expect(task).toMatchObject({ status: 'succeeded', videoUrl: undefined, refusedVideoUrl: 'javascript:alert(1)' });
    expect(result('native', { status: 'done', video: { url: 'https://x.example/v.mp4' } }).refusedVideoUrl).toBeUndefined();
    expect(result('native', { status: 'pending', video: { url: 'javascript:alert(1)' } }).refusedVideoUrl).toBeUndefined();
  });

  it("shares a stored file's public_url only when it is an http(s) link", () => {
    const task = result('native', {
      status: 'done',
      video: { url: 'https://x.example/v.mp4', file_output: { file_id: 'file_1', public_url: 'javascript:alert(1)' } },
    });
    expect(task.file).toMatchObject({ fileId: 'file_1', publicUrl: undefined, refusedPublicUrl: 'javascript:alert(1)' });
    const good = result('native', {
      status: 'done',
      video: { url: 'https://x.example/v.mp4', file_output: { file_id: 'file_1', public_url: 'https://files.example.com/v.mp4' } },
    });
    expect(good.file).toEqual({
      fileId: 'file_1',
      filename: undefined,
      expiresAt: undefined,
      publicUrl: 'https://files.example.com/v.mp4',
    });
  });
});
