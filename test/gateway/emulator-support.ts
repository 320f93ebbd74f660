// Shared by the gateway client's tests against the emulator: a client per layer, polling to a terminal
// state, and reading the emulator's journal.

import type { Emulator } from '../../src/emulator/server.ts';
import { GatewayClient, type GatewayClientOptions } from '../../src/gateway/client.ts';
import type { TaskResult } from '../../src/gateway/types.ts';
import { isRecord, parseJsonText, readString } from '../../src/lib/json.ts';
import type { Layer } from '../../src/gateway/spec.ts';
import { pollUntil } from '../support/poll.ts';

export const EMULATOR_KEY = 'emulator-key';
export const LATEST = 'svc-imagine-video-1.5';
export const CLASSIC = 'svc-imagine-video';
export const LAYER_CASES: readonly Layer[] = ['compat', 'native'];

/** Quick timings and limits high enough that parallel tests never meet the rate or concurrency caps. */
export const FAST_CONFIG = {
  timing: { generation_ms: 100, task_timeout_ms: 800 },
  limits: { rate_per_minute: 100_000, concurrent_tasks: 1000 },
};

export function clientFor(emulator: Emulator, layer: Layer, options: Partial<GatewayClientOptions> = {}): GatewayClient {
  return new GatewayClient({
    baseUrl: emulator.baseUrl,
    apiKey: EMULATOR_KEY,
    layer,
    retry: { maxRetries: 2, baseDelayMs: 20, maxDelayMs: 100 },
    ...options,
  });
}

/** Polls like the bot's poller would, only faster, until the task leaves `running`. */
export async function pollUntilSettled(
  client: GatewayClient,
  id: string,
  timeoutMs = 5000,
): Promise<{ final: TaskResult; polls: TaskResult[] }> {
  const polls: TaskResult[] = [];
  const final = await pollUntil({
    ask: async () => {
      const result = await client.getTask(id);
      polls.push(result);
      return result;
    },
    found: (result) => (result.status !== 'running' ? result : undefined),
    intervalMs: 20,
    timeoutMs,
    timeoutError: () => new Error(`task ${id} still running after ${timeoutMs} ms`),
  });
  return { final, polls };
}

type JournalEntry = Emulator['requests'][number];

/** The prompt of a journaled request body, whether the journal keeps it parsed or as text. */
export function promptOf(entry: JournalEntry): string | undefined {
  let body: unknown = entry.body;
  if (typeof body === 'string') {
    const parsed = parseJsonText(body);
    body = parsed.ok ? parsed.value : undefined;
  }
  return isRecord(body) ? readString(body, 'prompt') : undefined;
}

/** The submissions the emulator received for one prompt on one path. */
export function submissionsOf(emulator: Emulator, path: string, prompt: string): JournalEntry[] {
  return emulator.requests.filter((entry) => entry.method === 'POST' && entry.path === path && promptOf(entry) === prompt);
}

export function generationsPath(layer: Layer): string {
  return layer === 'compat' ? '/v1/videos/generations' : '/native/v1/videos/generations';
}

/** A prompt no other test uses, so journal counts belong to one test. */
export function uniquePrompt(trigger: string, label: string): string {
  return `${trigger} ${label} ${Math.random().toString(36).slice(2, 8)}`;
}
