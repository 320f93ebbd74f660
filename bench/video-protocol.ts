import { readArray, readNumber, readString } from '../src/lib/json.ts';

// What the video benchmark (bench/video.ts), its servers (bench/servers.ts) and its bot workers
// (bench/video-worker.ts) tell one another, and the readers that check it on arrival.

export interface ServerInfo {
  controlUrl: string;
  gatewayUrl: string;
  apiUrl: string;
  botToken: string;
  applicationId: string;
}

/** A member's /video generate, as Discord delivers it to the bot. */
export interface Interaction {
  id: string;
  token: string;
  guildId: string;
  channelId: string;
  userId: string;
}

/** What the benchmark asks a worker; each request gets one answer (or `{ error }`). */
export type WorkerRequest =
  /**
   * Start a bot, submit these tasks (which never finish), measure what holding them costs, also once the
   * first `checkpoint` of them are submitted, and stop the bot.
   */
  | { op: 'hold'; storeUrl: string; interactions: Interaction[]; checkpoint: number }
  /** Start a bot and submit these tasks; the answer comes once all are submitted, the bot keeps following them. */
  | { op: 'run'; storeUrl: string; interactions: Interaction[] }
  /** Every task of the run is posted: stop measuring and stop the bot. */
  | { op: 'finish' };

/** A worker's growth while it held its tasks, each measured after a full garbage collection. */
export interface HeldMemory {
  heapBytes: number;
  /** Of heapBytes, what discord.js's REST client keeps per interaction token. */
  restCacheBytes: number;
  rssBytes: number;
  /** Heap growth once `checkpointTasks` were submitted, measured the same way. */
  checkpointHeapBytes: number;
  checkpointTasks: number;
}

export interface FinishedRun {
  /** The worker's CPU time (user + system) from its first submission to `finish`. */
  cpuMs: number;
  loopDelayP99Ms: number;
  /** Each task's id (its post's nonce) and when the gateway took it. */
  submitted: [taskId: string, at: number][];
}

export function requireString(source: unknown, key: string): string {
  const value = readString(source, key);
  if (value === undefined) throw new Error(`the video benchmark got a message without ${key}`);
  return value;
}

function requireNumber(source: unknown, key: string): number {
  const value = readNumber(source, key);
  if (value === undefined) throw new Error(`the video benchmark got a message without ${key}`);
  return value;
}

function requireArray(source: unknown, key: string): readonly unknown[] {
  const value = readArray(source, key);
  if (value === undefined) throw new Error(`the video benchmark got a message without ${key}`);
  return value;
}

export function parseServerInfo(raw: unknown): ServerInfo {
  return {
    controlUrl: requireString(raw, 'controlUrl'),
    gatewayUrl: requireString(raw, 'gatewayUrl'),
    apiUrl: requireString(raw, 'apiUrl'),
    botToken: requireString(raw, 'botToken'),
    applicationId: requireString(raw, 'applicationId'),
  };
}

export function parseInteraction(raw: unknown): Interaction {
  return {
    id: requireString(raw, 'id'),
    token: requireString(raw, 'token'),
    guildId: requireString(raw, 'guildId'),
    channelId: requireString(raw, 'channelId'),
    userId: requireString(raw, 'userId'),
  };
}

export function parseWorkerRequest(raw: unknown): WorkerRequest {
  const op = readString(raw, 'op');
  if (op === 'finish') return { op };
  const storeUrl = requireString(raw, 'storeUrl');
  const interactions = requireArray(raw, 'interactions').map(parseInteraction);
  if (op === 'hold') return { op, storeUrl, interactions, checkpoint: requireNumber(raw, 'checkpoint') };
  if (op === 'run') return { op, storeUrl, interactions };
  throw new Error(`a video worker was asked for ${String(op)}`);
}

/** A worker's answer, or the error it failed with, thrown here. */
function answerOf(raw: unknown): unknown {
  const error = readString(raw, 'error');
  if (error !== undefined) throw new Error(`a video worker failed: ${error}`);
  return raw;
}

export function parseHeldMemory(raw: unknown): HeldMemory {
  const answer = answerOf(raw);
  return {
    heapBytes: requireNumber(answer, 'heapBytes'),
    restCacheBytes: requireNumber(answer, 'restCacheBytes'),
    rssBytes: requireNumber(answer, 'rssBytes'),
    checkpointHeapBytes: requireNumber(answer, 'checkpointHeapBytes'),
    checkpointTasks: requireNumber(answer, 'checkpointTasks'),
  };
}

export function parseSubmitted(raw: unknown): number {
  return requireNumber(answerOf(raw), 'submittedCount');
}

export function parseFinishedRun(raw: unknown): FinishedRun {
  const answer = answerOf(raw);
  return {
    cpuMs: requireNumber(answer, 'cpuMs'),
    loopDelayP99Ms: requireNumber(answer, 'loopDelayP99Ms'),
    submitted: requireArray(answer, 'submitted').map((entry): [string, number] => {
      const id: unknown = Array.isArray(entry) ? entry[0] : undefined;
      const at: unknown = Array.isArray(entry) ? entry[1] : undefined;
      if (typeof id !== 'string' || typeof at !== 'number')
        throw new Error('a video worker answered a submission that is not [task id, time]');
      return [id, at];
    }),
  };
}
