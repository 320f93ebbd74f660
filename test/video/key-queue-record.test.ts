import { describe, expect, it } from 'vitest';
import {
  claimJob,
  emptyKeyQueue,
  enqueueJob,
  markAccepted,
  markFinished,
  markRefusedForConcurrency,
  markRefusedForRate,
  MAX_RATE_PAUSE_MS,
  MAX_WAITING_PER_KEY,
  MIN_RATE_PAUSE_MS,
  parseKeyQueueRecord,
  sendOrder,
  slotsNow,
  type ClaimAnswer,
  type KeyQueueRecord,
  type QueueJob,
} from '../../src/video/key-queue-record.ts';

// The order of a key's line and its changes, as pure functions of the record: who goes next, and how a
// claim, a refusal and a newcomer move everyone else's place.

const KEY = 'key-a';
const GUILD = '100000000000000001';
const LEASE_MS = 60_000;

function job(memberId: string, index: number, guildId = GUILD): QueueJob {
  return { jobId: `${memberId}-${index}`, keyId: KEY, guildId, memberId, askedAt: index };
}

function enqueued(record: KeyQueueRecord, ...jobs: QueueJob[]): KeyQueueRecord {
  return jobs.reduce((current, each) => enqueueJob(current, each).next ?? current, record);
}

function claimed(record: KeyQueueRecord, now = 0, statedLimit?: number): { record: KeyQueueRecord; answer: ClaimAnswer } {
  const decision = claimJob(record, KEY, now, statedLimit, LEASE_MS);
  return { record: decision.next ?? record, answer: decision.answer };
}

function order(record: KeyQueueRecord): string[] {
  return sendOrder(record.line).map((waiting) => waiting.jobId);
}

describe('the send order of a key line', () => {
  it("takes members in turn: a member's 5 jobs and another's 1, the other's goes second", () => {
    const record = enqueued(emptyKeyQueue(), ...[1, 2, 3, 4, 5].map((index) => job('ana', index)), job('bo', 1));
    expect(order(record)).toEqual(['ana-1', 'bo-1', 'ana-2', 'ana-3', 'ana-4', 'ana-5']);
  });

  it('gives a newcomer the next turn after everyone waiting, not the end of the line', () => {
    const record = enqueued(emptyKeyQueue(), ...[1, 2, 3].map((index) => job('ana', index)), job('bo', 1), job('cy', 1));
    expect(order(record)).toEqual(['ana-1', 'bo-1', 'cy-1', 'ana-2', 'ana-3']);
  });

  it('keeps the order it announced as jobs are claimed', () => {
    let record = enqueued(emptyKeyQueue(), ...[1, 2, 3].map((index) => job('ana', index)), job('bo', 1), job('bo', 2), job('cy', 1));
    const announced = order(record);
    const taken: string[] = [];
    for (;;) {
      const next = claimed(record, 0, 100);
      if (next.answer.kind !== 'claimed') break;
      taken.push(next.answer.job.jobId);
      record = next.record;
      expect(order(record)).toEqual(announced.slice(taken.length));
    }
    expect(taken).toEqual(announced);
  });

  it('puts a member whose job was just sent, asking again, after the members who have not had a turn since', () => {
    // Ana's first job is sent at once (nothing waited); the rest of her burst, then Bo's one job.
    let record = claimed(enqueued(emptyKeyQueue(), job('ana', 1)), 1).record;
    record = enqueued(record, ...[2, 3, 4, 5].map((index) => job('ana', index)), job('bo', 1));
    expect(order(record)).toEqual(['bo-1', 'ana-2', 'ana-3', 'ana-4', 'ana-5']);
    // Cy, who never had a turn, goes before Ana's next too; Bo, once served, after her.
    record = claimed(record, 2).record;
    record = enqueued(record, job('cy', 1), job('bo', 2));
    expect(order(record)).toEqual(['cy-1', 'ana-2', 'bo-2', 'ana-3', 'ana-4', 'ana-5']);
  });

  it('forgets a served member with nothing waiting after an hour', () => {
    let record = claimed(enqueued(emptyKeyQueue(), job('ana', 1)), 0).record;
    record = markFinished(record, 'ana-1').next ?? record;
    record = claimed(enqueued(record, job('bo', 1)), 3_600_001).record;
    expect(record.line.map((member) => member.memberId)).toEqual(['bo']);
  });

  it('tells members of two servers on one key apart', () => {
    const record = enqueued(emptyKeyQueue(), job('ana', 1), job('ana', 2), {
      ...job('ana', 1, '100000000000000002'),
      jobId: 'ana-elsewhere',
    });
    expect(sendOrder(record.line).map(({ guildId, place }) => [guildId, place])).toEqual([
      [GUILD, 1],
      ['100000000000000002', 2],
      [GUILD, 3],
    ]);
  });

  it('puts a job refused for concurrency first, ahead of the member whose turn it was', () => {
    let record = enqueued(emptyKeyQueue(), job('ana', 1), job('ana', 2), job('bo', 1));
    const first = claimed(record);
    record = first.record;
    if (first.answer.kind !== 'claimed') throw new Error('expected a claim');
    expect(order(record)).toEqual(['bo-1', 'ana-2']);
    record = markRefusedForConcurrency(record, first.answer.ticket, 0).next ?? record;
    expect(order(record)).toEqual(['ana-1', 'bo-1', 'ana-2']);
  });

  it('lets one job past what the key took, and none past it once refused', () => {
    let record = enqueued(emptyKeyQueue(), job('ana', 1), job('ana', 2), job('ana', 3));
    const first = claimed(record);
    const second = claimed(first.record);
    expect([first.answer.kind, second.answer.kind]).toEqual(['claimed', 'claimed']);
    expect(claimed(second.record).answer.kind).toBe('full');
    if (first.answer.kind !== 'claimed' || second.answer.kind !== 'claimed') throw new Error('expected claims');
    record = markAccepted(second.record, first.answer.ticket, 0).next ?? second.record;
    record = markRefusedForConcurrency(record, second.answer.ticket, 0).next ?? record;
    expect(record.learnedLimit).toBe(1);
    expect(claimed(record).answer.kind).toBe('full');
  });

  it("counts a job still being sent among the key's, when the probe sent beside it is refused first", () => {
    const record = enqueued(emptyKeyQueue(), job('ana', 1), job('ana', 2), job('ana', 3));
    const first = claimed(record);
    const probe = claimed(first.record);
    if (probe.answer.kind !== 'claimed') throw new Error('expected a claim');
    const refused = markRefusedForConcurrency(probe.record, probe.answer.ticket, 0).next ?? probe.record;
    expect(refused).toMatchObject({ learnedLimit: 1, refusal: { limit: 1 } });
    expect(refused.pausedUntil).toBeUndefined();
  });

  it('refuses a job past the most a key may have waiting, naming that limit', () => {
    const members = MAX_WAITING_PER_KEY / 10;
    const full = enqueued(
      emptyKeyQueue(),
      ...Array.from({ length: MAX_WAITING_PER_KEY }, (_, index) => job(`m${index % members}`, Math.floor(index / members))),
    );
    expect(sendOrder(full.line)).toHaveLength(MAX_WAITING_PER_KEY);
    expect(enqueueJob(full, job('newcomer', 1))).toEqual({
      next: undefined,
      answer: { kind: 'refused', reason: 'line_full', limit: 1_000 },
    });
  });

  it("keeps a rate limit's pause within bounds when Retry-After is missing or absurd", () => {
    const pausedFor = (retryAfterMs: number): number | undefined => {
      const first = claimed(enqueued(emptyKeyQueue(), job('ana', 1)));
      if (first.answer.kind !== 'claimed') throw new Error('expected a claim');
      return markRefusedForRate(first.record, first.answer.ticket, retryAfterMs, 0).next?.pausedUntil;
    };
    expect([pausedFor(Number.NaN), pausedFor(-5), pausedFor(2_500), pausedFor(Number.POSITIVE_INFINITY)]).toEqual([
      MIN_RATE_PAUSE_MS,
      MIN_RATE_PAUSE_MS,
      2_500,
      MAX_RATE_PAUSE_MS,
    ]);
    expect(pausedFor(10 * MAX_RATE_PAUSE_MS)).toBe(MAX_RATE_PAUSE_MS);
  });

  it('takes a stated limit within what /config accepts', () => {
    expect([0, Number.NaN, 2.7, 500].map((stated) => slotsNow(emptyKeyQueue(), 0, stated))).toEqual([1, 1, 2, 100]);
  });

  it('reads back what it stores, and names what does not fit', () => {
    const record = enqueued(emptyKeyQueue(), job('ana', 1));
    expect(parseKeyQueueRecord(JSON.parse(JSON.stringify(record)))).toEqual(record);
    expect(() => parseKeyQueueRecord({ ...record, learnedLimit: 0 })).toThrow(/key queue\.learnedLimit/);
  });
});
