import type { TaskResult } from '../../src/gateway/types.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { TASK_RECORD_VERSION, type PostedDelivery, type ShownVideo, type TaskRecord } from '../../src/video/record.ts';

/** A gateway task result as the client hands it over: a running native task that says nothing more, with `overrides`. */
export function taskResult(overrides: Partial<TaskResult> = {}): TaskResult {
  return {
    id: 'task_1',
    layer: 'native',
    status: 'running',
    rawStatus: 'pending',
    progress: undefined,
    videoUrl: undefined,
    moderated: false,
    durationSeconds: undefined,
    model: undefined,
    file: undefined,
    storageError: undefined,
    costUsdTicks: undefined,
    costUsd: undefined,
    error: undefined,
    requestId: undefined,
    ...overrides,
  };
}

/**
 * A video task as the bot stores it: a native text-to-video generation submitted and running in an
 * English server, its card not yet posted, with `overrides`. Its request is the model and prompt it was given.
 */
export function taskRecord(overrides: Partial<TaskRecord> = {}): TaskRecord {
  const id = overrides.id ?? 'vabc123';
  const model = overrides.model ?? 'svc-imagine-video-1.5';
  const prompt = overrides.prompt ?? 'a test video';
  return {
    v: TASK_RECORD_VERSION,
    id,
    gatewayId: 'task_1',
    layer: 'native',
    keyId: 'fake-key',
    guildId: '100000000000000001',
    channelId: '100000000000000002',
    userId: '100000000000000003',
    operation: 'generate',
    mode: 'text-to-video',
    model,
    prompt,
    request: { model, prompt },
    createdAt: 1_700_000_000_000,
    submittedAt: 1_700_000_001_000,
    state: 'running',
    polls: 0,
    pollErrors: 0,
    outcome: {},
    card: { applicationId: 'app', interactionToken: 'token', tokenExpiresAt: 1_700_000_900_000 },
    attachmentSizeLimit: 10 * 1024 * 1024,
    delivery: { state: 'waiting', attempts: 0 },
    locale: ENGLISH,
    ...overrides,
  };
}

/** A delivery done: the video shown in the card's message, by its file or by a link, after one try. */
export function shownInCard(video: ShownVideo, overrides: Partial<PostedDelivery> = {}): PostedDelivery {
  return { state: 'posted', attempts: 1, postingSince: 1_700_000_050_000, messageId: '100000000000000009', video, ...overrides };
}
