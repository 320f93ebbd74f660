import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { aggregateWorkerMetrics, aggregateWorkerReadiness } from '../../src/ops/worker-metrics.ts';

// What the supervisor serves for its workers: their metrics summed, and ready only when all are.

async function workerMetrics(polls: number): Promise<Record<string, unknown>> {
  const registry = new Registry();
  new Counter({ name: 'bot_video_polls_total', help: 'Polls.', labelNames: ['layer'], registers: [registry] }).inc(
    { layer: 'compat' },
    polls,
  );
  return { metrics: await registry.getMetricsAsJSON(), readiness: { ready: true } };
}

describe("the supervisor's view of its workers", () => {
  it("sums the workers' counters, leaving out a worker that did not answer or answered nonsense", async () => {
    const { body, contentType } = await aggregateWorkerMetrics([
      { shards: '0', answer: await workerMetrics(3) },
      { shards: '1', answer: await workerMetrics(4) },
      { shards: '2', answer: undefined, missing: 'not running' },
      { shards: '3', answer: { metrics: [{ name: 'bot_video_polls_total', values: 'lots' }] } },
    ]);
    expect(contentType).toContain('text/plain');
    expect(body).toContain('bot_video_polls_total{layer="compat"} 7');
  });

  it('is ready when every worker is, and otherwise says why for each worker that is not', async () => {
    expect(
      aggregateWorkerReadiness([
        { shards: '0', answer: await workerMetrics(1) },
        { shards: '1', answer: await workerMetrics(1) },
      ]),
    ).toEqual({ ready: true });
    expect(
      aggregateWorkerReadiness([
        { shards: '0', answer: { readiness: { ready: false, reason: 'not connected to Discord on shard 0' } } },
        { shards: '1', answer: await workerMetrics(1) },
        { shards: '2-3', answer: undefined, missing: 'no answer in time' },
        { shards: '4', answer: { readiness: 'yes' } },
      ]),
    ).toEqual({
      ready: false,
      reason:
        'shards 0: not connected to Discord on shard 0; shards 2-3: the worker did not answer in time; shards 4: an answer the supervisor could not read',
    });
  });
});
