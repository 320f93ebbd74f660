import { setTimeout as sleep } from 'node:timers/promises';

// Discord lets a bot identify at most `max_concurrency` shards every 5 seconds, one per rate-limit bucket
// (shard_id % max_concurrency). discord.js spaces the identifies of the shards one process holds; when
// shards are spread over processes and machines, they must agree on each bucket's window. They do it
// through the shared store: a shard identifies once it has claimed its bucket for the window (a claim
// expires by itself, so a worker that dies holding one blocks nobody for long).

/** Claims a bucket for `ttlMs` across every process sharing the store; false while another holds it. */
export type ClaimIdentifyBucket = (bucket: number, ttlMs: number) => Promise<boolean>;

/**
 * Discord's identify window per bucket (5 s), and a margin: the identify leaves a moment after the claim,
 * and network delays must not bring two identifies of one bucket within 5 s of each other at Discord.
 */
export const IDENTIFY_WINDOW_MS = 5_000 + 1_000;
/** How often a shard asks again while its bucket is taken (spread so that waiting shards do not ask together). */
const RETRY_MS = 250;

/** The throttler discord.js asks before each identify (its IIdentifyThrottler). */
export class SharedIdentifyThrottler {
  readonly #maxConcurrency: number;
  readonly #claim: ClaimIdentifyBucket;
  readonly #windowMs: number;

  constructor(maxConcurrency: number, claim: ClaimIdentifyBucket, windowMs = IDENTIFY_WINDOW_MS) {
    this.#maxConcurrency = Math.max(1, maxConcurrency);
    this.#claim = claim;
    this.#windowMs = windowMs;
  }

  async waitForIdentify(shardId: number, signal: AbortSignal): Promise<void> {
    const bucket = shardId % this.#maxConcurrency;
    for (;;) {
      signal.throwIfAborted();
      if (await this.#claim(bucket, this.#windowMs)) return;
      await sleep(RETRY_MS * (0.5 + Math.random()), undefined, { signal });
    }
  }
}
