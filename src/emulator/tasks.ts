import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'undici';
import { USD_TICKS, type Layer, type VideoOperation } from '../gateway/spec.ts';
import type { Logger } from '../lib/log.ts';
import type { EmulatorConfig } from './config.ts';
import type { KeyAccount, KeyRegistry } from './keys.ts';
import type { Triggers } from './triggers.ts';
import { BoundedJournal, type JournalLimits } from './journal.ts';
import type { AcceptedRequest } from './validation.ts';
import { truncatedVideoBytes, videoBytes, FIXTURE_DURATION_S } from './video-file.ts';

// Video tasks. A task's whole life follows from its creation time and its plan, so its state is worked
// out when someone looks (a query, a quota or concurrency check) instead of by a timer per task: ten
// thousand tasks cost ten thousand small records. Only `output.upload_url` needs a timer, because the
// emulator must PUT the video there by itself.
//
// Memory stays bounded in a long run: a finished task is forgotten (a query answers 404) once another url
// lifetime has passed after its url expired, a stored file once its own expiry has passed, and the list
// of uploads keeps the newest (UPLOAD_LIMITS). An upload that is not answered in timing.upload_timeout_ms
// is given up; closing the emulator gives up those under way.

type Plan =
  | { kind: 'succeed'; moderated: boolean; storageFails: boolean; truncated: boolean }
  | { kind: 'fail'; code: string; message: string; atMs: number }
  | { kind: 'hang' };

export interface EmulatedTask {
  id: string;
  layer: Layer;
  operation: VideoOperation;
  account: KeyAccount;
  request: AcceptedRequest;
  plan: Plan;
  createdAt: number;
  state: 'running' | 'succeeded' | 'failed';
  finishedAt: number | undefined;
  error: { code: string; message: string } | undefined;
  /** Token of the temporary video url, once done. */
  fileToken: string | undefined;
  stored: { fileId: string; expiresAt: number | undefined; publicUrl: string | undefined } | undefined;
  storageError: string | undefined;
  polls: number;
  /** `[[no-cost]]`: its answers leave `usage` out. */
  costUnreported: boolean;
}

export interface Upload {
  url: string;
  bytes: number;
  /** The answer's status, once there is one. */
  status: number | undefined;
  /** Why the PUT failed (no answer by the deadline, a refused connection), when it did. */
  error: string | undefined;
}

/** The uploads listed: the newest 1,000, within 4 MiB of urls (an url may be long). */
const UPLOAD_LIMITS: JournalLimits = { maxEntries: 1000, maxBytes: 4 * 1024 * 1024 };
const UPLOAD_ENTRY_BYTES = 64;

function newId(layer: Layer): string {
  // Ids carry their layer, so one layer never finds the other's tasks.
  return `${layer === 'native' ? 'req' : 'task'}_${randomBytes(12).toString('hex')}`;
}

/**
 * The provider's content moderation refusing a prompt (`[[moderate:prompt]]`): the provider's own code on
 * the native layer, which passes it on unchanged; on the compatibility layer, whose task codes are the
 * gateway's five (docs/gateway.md, "Asynchronous task error codes"), `invalid_argument`, its message the
 * only sign of moderation.
 */
function promptRefusal(layer: Layer): { code: string; message: string } {
  const message = 'The prompt was rejected by content moderation.';
  return { code: layer === 'native' ? 'imagine:content-moderated' : 'invalid_argument', message };
}

export class TaskEngine {
  readonly #config: EmulatorConfig;
  readonly #keys: KeyRegistry;
  readonly #log: Logger;
  readonly #tasks = new Map<string, EmulatedTask>();
  readonly #runningByKey = new Map<string, Set<EmulatedTask>>();
  readonly #files = new Map<string, EmulatedTask>();
  readonly #storedFiles = new Map<string, EmulatedTask>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #pendingUploads = new Set<Promise<void>>();
  /** Aborted by close(): uploads still under way are given up. */
  readonly #closing = new AbortController();
  readonly #uploads = new BoundedJournal<Upload>(UPLOAD_LIMITS);
  /** The newest uploads, oldest first. */
  readonly uploads: Upload[] = this.#uploads.entries;
  baseUrl = '';
  #lastSweepAt = 0;

  constructor(config: EmulatorConfig, keys: KeyRegistry, log: Logger) {
    this.#config = config;
    this.#keys = keys;
    this.#log = log;
  }

  #running(account: KeyAccount): Set<EmulatedTask> {
    let running = this.#runningByKey.get(account.keyId);
    if (!running) {
      running = new Set();
      this.#runningByKey.set(account.keyId, running);
    }
    return running;
  }

  /** Tasks of this key still running now (after settling those whose time has come). */
  runningCount(account: KeyAccount, now: number): number {
    const running = this.#running(account);
    for (const task of running) this.settle(task, now);
    return running.size;
  }

  create(
    operation: VideoOperation,
    layer: Layer,
    account: KeyAccount,
    request: AcceptedRequest,
    triggers: Triggers,
    now: number,
  ): EmulatedTask {
    const generation = this.#config.timing.generation_ms;
    let plan: Plan;
    if (request.asyncFailure) plan = { kind: 'fail', ...request.asyncFailure, atMs: Math.floor(generation / 2) };
    else if (triggers.hang) plan = { kind: 'hang' };
    else if (triggers.moderatePrompt) plan = { kind: 'fail', ...promptRefusal(layer), atMs: Math.floor(generation / 2) };
    else if (triggers.failCode)
      plan = {
        kind: 'fail',
        code: triggers.failCode,
        message: `The upstream provider failed the task (${triggers.failCode}).`,
        atMs: generation,
      };
    else plan = { kind: 'succeed', moderated: triggers.moderate, storageFails: triggers.storageFail, truncated: triggers.truncated };

    const task: EmulatedTask = {
      id: newId(layer),
      layer,
      operation,
      account,
      request,
      plan,
      createdAt: now,
      state: 'running',
      finishedAt: undefined,
      error: undefined,
      fileToken: undefined,
      stored: undefined,
      storageError: undefined,
      polls: 0,
      costUnreported: triggers.noCost,
    };
    this.#sweep(now);
    this.#tasks.set(task.id, task);
    this.#running(account).add(task);
    if (plan.kind === 'succeed' && request.uploadUrl) this.#scheduleUpload(task, generation);
    return task;
  }

  get(id: string, layer: Layer, now: number): EmulatedTask | undefined {
    this.#sweep(now);
    const task = this.#tasks.get(id);
    if (!task || task.layer !== layer) return undefined;
    this.settle(task, now);
    return task;
  }

  /**
   * Settles every task and forgets those long past their url's expiry, and expired stored files. Runs at
   * most once per url lifetime (or minute), so its cost is spread thin.
   */
  #sweep(now: number): void {
    const ttl = this.#config.timing.url_ttl_ms;
    if (now - this.#lastSweepAt < Math.min(ttl, 60_000)) return;
    this.#lastSweepAt = now;
    for (const task of this.#tasks.values()) {
      this.settle(task, now);
      if (task.finishedAt === undefined || now < task.finishedAt + 2 * ttl) continue;
      this.#tasks.delete(task.id);
      if (task.fileToken) this.#files.delete(task.fileToken);
    }
    for (const [fileId, task] of this.#storedFiles) {
      if (task.stored?.expiresAt !== undefined && now >= task.stored.expiresAt) this.#storedFiles.delete(fileId);
    }
  }

  /** Brings a task's state up to `now`. Failures and timeouts refund the quota charged at submission. */
  settle(task: EmulatedTask, now: number): void {
    if (task.state !== 'running') return;
    const { generation_ms: generation, task_timeout_ms: timeout } = this.#config.timing;
    const timeoutAt = task.createdAt + timeout;
    const planAt = task.plan.kind === 'hang' ? Infinity : task.createdAt + (task.plan.kind === 'fail' ? task.plan.atMs : generation);
    if (timeoutAt <= planAt && now >= timeoutAt) {
      this.#finishFailed(task, timeoutAt, {
        code: 'timeout',
        message: `The task did not finish within ${Math.round(timeout / 1000)} seconds and was stopped; its cost was refunded.`,
      });
      return;
    }
    if (now < planAt) return;
    if (task.plan.kind === 'fail') {
      this.#finishFailed(task, planAt, { code: task.plan.code, message: task.plan.message });
      return;
    }
    if (task.plan.kind !== 'succeed') return;
    task.state = 'succeeded';
    task.finishedAt = planAt;
    this.#running(task.account).delete(task);
    if (task.plan.moderated) return;
    if (!task.request.uploadUrl) {
      task.fileToken = randomBytes(16).toString('hex');
      this.#files.set(task.fileToken, task);
    }
    const storage = task.request.storage;
    if (storage) {
      if (task.plan.storageFails) {
        task.storageError = 'The storage service refused the file (quota exceeded).';
      } else {
        const fileId = `file_${randomBytes(10).toString('hex')}`;
        task.stored = {
          fileId,
          expiresAt: storage.expiresAfter === undefined ? undefined : planAt + storage.expiresAfter * 1000,
          publicUrl: storage.publicUrl ? `${this.baseUrl}/stored/${fileId}.mp4` : undefined,
        };
        this.#storedFiles.set(fileId, task);
      }
    }
  }

  #finishFailed(task: EmulatedTask, at: number, error: { code: string; message: string }): void {
    task.state = 'failed';
    task.finishedAt = at;
    task.error = error;
    this.#running(task.account).delete(task);
    this.#keys.refund(task.account, task.request.costUsd);
  }

  /** Whether a done task's temporary video is gone. */
  urlExpired(task: EmulatedTask, now: number): boolean {
    return task.finishedAt !== undefined && now >= task.finishedAt + this.#config.timing.url_ttl_ms;
  }

  temporaryUrl(task: EmulatedTask): string | undefined {
    return task.fileToken ? `${this.baseUrl}/files/${task.fileToken}.mp4` : undefined;
  }

  /** The bytes behind a temporary url, while it lives. */
  temporaryFile(token: string, now: number): Buffer | undefined {
    const task = this.#files.get(token);
    if (!task || this.urlExpired(task, now)) return undefined;
    return this.#bytesOf(task);
  }

  storedFile(fileId: string, now: number): Buffer | undefined {
    const task = this.#storedFiles.get(fileId);
    if (!task?.stored || (task.stored.expiresAt !== undefined && now >= task.stored.expiresAt)) return undefined;
    return this.#bytesOf(task);
  }

  /** A done task's video file: the fixture (padded to video.bytes), or cut short by `[[truncated]]`. */
  #bytesOf(task: EmulatedTask): Buffer {
    return task.plan.kind === 'succeed' && task.plan.truncated ? truncatedVideoBytes() : videoBytes(this.#config.video.bytes);
  }

  videoFor(task: EmulatedTask, now: number): Buffer | undefined {
    if (task.state !== 'succeeded' || !task.fileToken) return undefined;
    return this.temporaryFile(task.fileToken, now);
  }

  costTicks(task: EmulatedTask): number {
    return task.state === 'failed' ? 0 : Math.round(task.request.costUsd * USD_TICKS);
  }

  /** A finished task's `usage`, as its answers spread it in: none for a task told to report no cost. */
  usage(task: EmulatedTask): { usage?: { cost_in_usd_ticks: number } } {
    return task.costUnreported ? {} : { usage: { cost_in_usd_ticks: this.costTicks(task) } };
  }

  resultSeconds(task: EmulatedTask): number {
    return task.operation === 'extend'
      ? FIXTURE_DURATION_S + task.request.seconds
      : task.operation === 'edit'
        ? FIXTURE_DURATION_S
        : task.request.seconds;
  }

  progress(task: EmulatedTask, now: number): number {
    if (task.state !== 'running') return 100;
    const generation = this.#config.timing.generation_ms;
    return Math.min(99, Math.floor(((now - task.createdAt) / generation) * 100));
  }

  #scheduleUpload(task: EmulatedTask, delayMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.settle(task, Math.max(Date.now(), task.createdAt + delayMs));
      if (task.state !== 'succeeded' || !task.request.uploadUrl) return;
      const bytes = this.#bytesOf(task);
      const upload: Upload = { url: task.request.uploadUrl, bytes: bytes.length, status: undefined, error: undefined };
      this.#uploads.append(upload, UPLOAD_ENTRY_BYTES + upload.url.length);
      const timeoutMs = this.#config.timing.upload_timeout_ms;
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([deadline, this.#closing.signal]);
      const put = httpRequest(task.request.uploadUrl, { method: 'PUT', body: bytes, headers: { 'content-type': 'video/mp4' }, signal })
        .then(async (response) => {
          upload.status = response.statusCode;
          await response.body.dump();
        })
        .catch((error: unknown) => {
          upload.error = deadline.aborted
            ? `no answer within ${timeoutMs} ms`
            : signal.aborted
              ? 'the emulator closed'
              : error instanceof Error
                ? error.message
                : String(error);
          this.#log.warn('upload_url PUT failed', { task: task.id, error: upload.error });
        })
        .finally(() => this.#pendingUploads.delete(put));
      this.#pendingUploads.add(put);
    }, delayMs);
    this.#timers.add(timer);
  }

  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#closing.abort();
    await Promise.allSettled([...this.#pendingUploads]);
  }
}
