import { createHash } from 'node:crypto';
import type { Logger } from '../lib/log.ts';
import { GatewayClient, type GatewayClientOptions } from './client.ts';
import type { Layer } from './spec.ts';

// One GatewayClient per (key, layer), made on first use and shared after: servers bring their own keys,
// and every client shares the process's one undici pool.

/** A stable, non-reversible name for a key: safe to store, log and compare. */
export function keyFingerprint(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex').slice(0, 16);
}

export type ClientDefaults = Omit<GatewayClientOptions, 'apiKey' | 'layer'>;

export class GatewayClientPool {
  readonly #defaults: ClientDefaults;
  readonly #clients = new Map<string, GatewayClient>();

  constructor(defaults: ClientDefaults & { log?: Logger }) {
    this.#defaults = defaults;
  }

  get(apiKey: string, layer: Layer): GatewayClient {
    const id = `${keyFingerprint(apiKey)}:${layer}`;
    let client = this.#clients.get(id);
    if (!client) {
      client = new GatewayClient({ ...this.#defaults, apiKey, layer });
      this.#clients.set(id, client);
    }
    return client;
  }

  /** Drops the clients of a key that is no longer in use (cleared or replaced). */
  forget(apiKey: string): void {
    const prefix = `${keyFingerprint(apiKey)}:`;
    for (const id of this.#clients.keys()) if (id.startsWith(prefix)) this.#clients.delete(id);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((client) => client.close()));
    this.#clients.clear();
  }
}
