import type { TaskResult } from '../../src/gateway/types.ts';

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
    costTicks: undefined,
    costUsd: undefined,
    error: undefined,
    requestId: undefined,
    ...overrides,
  };
}
