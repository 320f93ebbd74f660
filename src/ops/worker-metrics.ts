import { AggregatorRegistry, type Registry } from 'prom-client';
import { isRecord, readString } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { metricsOf, type MetricsText, type Readiness } from './server.ts';

// Sharded, the supervisor serves the ops port for every worker on its machine (one scrape target per
// machine): it asks each worker over the IPC channel it forked them with for its metrics (prom-client's
// JSON form) and readiness, sums the metrics with prom-client's AggregatorRegistry (the aggregation its
// `cluster` support uses) and is ready only when every worker is.

/** The question the supervisor asks its workers, and the name their answers carry. */
export const OPS_QUESTION = 'ops-scrape';

/** A worker's answer as the supervisor receives it, or why there is none. */
export interface WorkerOpsAnswer {
  shards: string;
  answer: Record<string, unknown> | undefined;
  missing?: string;
}

/** In a worker: answers the supervisor's questions with this process's metrics and readiness. Returns how to stop answering. */
export function answerOpsQuestions(registry: Registry, readiness: () => Promise<Readiness>, log: Logger): () => void {
  const send = process.send?.bind(process);
  if (!send) return () => {};
  const onMessage = (message: unknown) => {
    if (!isRecord(message) || message.question !== OPS_QUESTION) return;
    void Promise.all([registry.getMetricsAsJSON(), readiness()])
      .then(([metrics, ready]) => send({ answer: OPS_QUESTION, id: message.id, metrics, readiness: ready }))
      .catch((error: unknown) => log.warn("could not answer the supervisor's ops question", { error }));
  };
  process.on('message', onMessage);
  return () => process.off('message', onMessage);
}

const AGGREGATORS = new Set(['sum', 'first', 'min', 'max', 'average', 'omit']);

/** A worker's metrics as prom-client's getMetricsAsJSON() writes them: each a name, a type, values and how to aggregate it. */
function readMetrics(answer: Record<string, unknown>): object[] | undefined {
  const metrics = answer.metrics;
  if (!Array.isArray(metrics)) return undefined;
  const valid = metrics.every(
    (metric) =>
      isRecord(metric) &&
      readString(metric, 'name') !== undefined &&
      readString(metric, 'type') !== undefined &&
      Array.isArray(metric.values) &&
      AGGREGATORS.has(readString(metric, 'aggregator') ?? ''),
  );
  return valid ? metrics : undefined;
}

function readReadiness(answer: Record<string, unknown>): Readiness | undefined {
  const readiness = answer.readiness;
  if (!isRecord(readiness)) return undefined;
  if (readiness.ready === true) return { ready: true };
  return readiness.ready === false ? { ready: false, reason: readString(readiness, 'reason') ?? 'not ready' } : undefined;
}

/** Every worker's metrics summed (Prometheus text); a worker that did not answer is left out. */
export async function aggregateWorkerMetrics(answers: readonly WorkerOpsAnswer[]): Promise<MetricsText> {
  const perWorker = answers.flatMap(({ answer }) => {
    const metrics = answer && readMetrics(answer);
    return metrics ? [metrics] : [];
  });
  return metricsOf(AggregatorRegistry.aggregate(perWorker));
}

/** Ready when every worker answered that it is; otherwise each worker's reason, by its shards. */
export function aggregateWorkerReadiness(answers: readonly WorkerOpsAnswer[]): Readiness {
  const reasons = answers.flatMap(({ shards, answer, missing }) => {
    const readiness = answer ? readReadiness(answer) : undefined;
    if (readiness?.ready) return [];
    const why = readiness
      ? readiness.reason
      : answer
        ? 'an answer the supervisor could not read'
        : missing === 'not running'
          ? 'the worker is not running'
          : 'the worker did not answer in time';
    return [`shards ${shards}: ${why}`];
  });
  return reasons.length === 0 ? { ready: true } : { ready: false, reason: reasons.join('; ') };
}
