import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { KeyQueue, MAX_WAITING_PER_MEMBER, type ClaimAnswer, type ClaimTicket, type QueueJob } from '../../src/video/key-queue.ts';
import { BUSY_ELSEWHERE_PAUSE_MS, CLAIM_LEASE_MS } from '../../src/video/key-queue-record.ts';

// A gateway key's line of jobs on the real stores, as the processes sharing a store use it: the order
// members are served in, the cap per member, the key's slots learned or stated, the gateway's refusals,
// cancelling, many claims at once from two processes, and a restart. On the shared Redis every test uses
// keys of its own and deletes their lines after; nothing is flushed.

const SHARED_REDIS = 'redis://127.0.0.1:6379';
const GUILD = '100000000000000001';
const OTHER_GUILD = '100000000000000002';
const NOW = Date.UTC(2026, 10, 29, 12);
const QUEUE_COLLECTION = 'video_key_queues';

const opened: Store[] = [];
const directories: string[] = [];
/** The keys whose lines a test wrote, with the store's url: deleted after it, passed or not. */
const writtenKeys: { url: string; keyId: string }[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const { url, keyId } of writtenKeys.splice(0)) {
    const janitor = await openStore(url, silentLogger);
    await janitor.collection(QUEUE_COLLECTION, (raw) => raw).delete(keyId);
    await janitor.close();
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function sqliteUrl(): string {
  const directory = mkdtempSync(join(tmpdir(), 'key-queue-'));
  directories.push(directory);
  return `sqlite://${join(directory, 'bot.sqlite')}`;
}

/** A process's queue: its own store opened on `url`. */
async function processQueue(url: string): Promise<KeyQueue> {
  const store = await openStore(url, silentLogger);
  opened.push(store);
  return new KeyQueue(store);
}

/** A gateway key no other test (or earlier run) uses, its line deleted after the test. */
function newKey(url: string): string {
  const keyId = `test-key-${randomUUID()}`;
  writtenKeys.push({ url, keyId });
  return keyId;
}

function job(keyId: string, memberId: string, index: number, guildId = GUILD): QueueJob {
  return { jobId: `${guildId}-${memberId}-${index}`, keyId, guildId, memberId, askedAt: NOW + index };
}

function ticketOf(answer: ClaimAnswer): ClaimTicket {
  if (answer.kind !== 'claimed') throw new Error(`expected a claim, got ${answer.kind}`);
  return answer.ticket;
}

async function claimedJobId(queue: KeyQueue, keyId: string, now = NOW, statedLimit?: number): Promise<string> {
  const answer = await queue.claimNext(keyId, now, statedLimit === undefined ? {} : { statedLimit });
  return ticketOf(answer).jobId;
}

describe.each([
  ['sqlite', sqliteUrl],
  ['redis', () => SHARED_REDIS],
])('a key line on the %s store', (_kind, location) => {
  it("serves members in turn: one member's 5 jobs and another's 1, the other's starts second", async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    const places: number[] = [];
    for (const each of [1, 2, 3, 4, 5].map((index) => job(keyId, 'ana', index)).concat(job(keyId, 'bo', 1))) {
      const answer = await queue.enqueue(each);
      if (answer.kind === 'waiting') places.push(answer.place);
    }
    expect(places).toEqual([1, 2, 3, 4, 5, 2]);
    expect(await queue.placeOf(keyId, job(keyId, 'ana', 2).jobId)).toBe(3);
    expect((await queue.waiting(keyId)).map(({ memberId, place }) => `${place}:${memberId}`)).toEqual([
      '1:ana',
      '2:bo',
      '3:ana',
      '4:ana',
      '5:ana',
      '6:ana',
    ]);
    const sent: string[] = [];
    for (let claim = 0; claim < 6; claim++) sent.push(await claimedJobId(queue, keyId, NOW, 10));
    expect(sent).toEqual([1, 2, 3, 4, 5].map((index) => job(keyId, 'ana', index).jobId).toSpliced(1, 0, job(keyId, 'bo', 1).jobId));
    expect(await queue.claimNext(keyId, NOW, { statedLimit: 10 })).toEqual({ kind: 'empty' });
  });

  it('refuses the 11th waiting job of a member on one server, naming the limit, and takes it on another server', async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    for (let index = 1; index <= MAX_WAITING_PER_MEMBER; index++)
      expect(await queue.enqueue(job(keyId, 'ana', index))).toEqual({ kind: 'waiting', place: index });
    expect(await queue.enqueue(job(keyId, 'ana', 11))).toEqual({ kind: 'refused', reason: 'member_limit', limit: 10 });
    expect(await queue.enqueue(job(keyId, 'ana', 11, OTHER_GUILD))).toEqual({ kind: 'waiting', place: 2 });
    // The same job asked again (a retry whose first write landed) keeps its place and is not counted twice.
    expect(await queue.enqueue(job(keyId, 'ana', 3))).toEqual({ kind: 'waiting', place: 4 });
    // Once one of hers is sent, she may have one more waiting.
    await claimedJobId(queue, keyId);
    expect(await queue.enqueue(job(keyId, 'ana', 12))).toEqual({ kind: 'waiting', place: 11 });
  });

  it('learns the slots of a key it was not told: one more than it has seen taken, none past a refusal', async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    for (const index of [1, 2, 3, 4]) await queue.enqueue(job(keyId, 'ana', index));
    const first = ticketOf(await queue.claimNext(keyId, NOW));
    // The second is the probe: nothing has been seen taken yet but the first.
    const second = ticketOf(await queue.claimNext(keyId, NOW));
    expect(await queue.claimNext(keyId, NOW)).toMatchObject({ kind: 'full' });
    expect(await queue.accepted(first, NOW)).toBe(true);
    expect(await queue.accepted(second, NOW)).toBe(true);
    // Two taken at once: a third is tried.
    const third = ticketOf(await queue.claimNext(keyId, NOW));
    expect(third.jobId).toBe(job(keyId, 'ana', 3).jobId);
    // The gateway refuses it: it goes back first, and the key runs no more than the two it took.
    expect(await queue.refusedForConcurrency(third, NOW)).toBe(true);
    expect(await queue.placeOf(keyId, third.jobId)).toBe(1);
    expect(await queue.claimNext(keyId, NOW + 1)).toMatchObject({ kind: 'full' });
    expect(await queue.finished(keyId, first.jobId)).toBe(true);
    const again = ticketOf(await queue.claimNext(keyId, NOW + 2));
    expect(again).toEqual({ keyId, jobId: third.jobId, attempt: 2 });
    expect(await queue.claimNext(keyId, NOW + 2)).toMatchObject({ kind: 'full' });
    // The refused claim's ticket is stale now: reporting with it changes nothing.
    expect(await queue.accepted(third, NOW + 2)).toBe(false);
  });

  it("sends no more than an admin's stated slots at once, and never probes past them", async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    for (const index of [1, 2, 3, 4, 5]) await queue.enqueue(job(keyId, 'ana', index));
    const tickets: ClaimTicket[] = [];
    for (let claim = 0; claim < 3; claim++) tickets.push(ticketOf(await queue.claimNext(keyId, NOW, { statedLimit: 3 })));
    for (const ticket of tickets) expect(await queue.accepted(ticket, NOW)).toBe(true);
    expect(await queue.claimNext(keyId, NOW, { statedLimit: 3 })).toMatchObject({ kind: 'full' });
    await queue.finished(keyId, tickets[0]!.jobId);
    expect(await claimedJobId(queue, keyId, NOW, 3)).toBe(job(keyId, 'ana', 4).jobId);
    expect(await queue.claimNext(keyId, NOW, { statedLimit: 3 })).toMatchObject({ kind: 'full' });
  });

  it("pauses the key for a rate limit's Retry-After, then sends the refused job first", async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    await queue.enqueue(job(keyId, 'ana', 1));
    await queue.enqueue(job(keyId, 'bo', 1));
    const refused = ticketOf(await queue.claimNext(keyId, NOW, { statedLimit: 4 }));
    expect(await queue.refusedForRate(refused, 20_000, NOW)).toBe(true);
    expect(await queue.claimNext(keyId, NOW + 19_999, { statedLimit: 4 })).toEqual({ kind: 'paused', until: NOW + 20_000 });
    expect(await queue.placeOf(keyId, refused.jobId)).toBe(1);
    expect(await queue.claimNext(keyId, NOW + 20_000, { statedLimit: 4 })).toMatchObject({
      kind: 'claimed',
      ticket: { jobId: refused.jobId, attempt: 2 },
    });
  });

  it("waits a while after a concurrency refusal when none of the bot's jobs run on the key", async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    await queue.enqueue(job(keyId, 'ana', 1));
    const refused = ticketOf(await queue.claimNext(keyId, NOW));
    await queue.refusedForConcurrency(refused, NOW);
    expect(await queue.claimNext(keyId, NOW + 1)).toEqual({ kind: 'paused', until: NOW + BUSY_ELSEWHERE_PAUSE_MS });
    expect(await claimedJobId(queue, keyId, NOW + BUSY_ELSEWHERE_PAUSE_MS)).toBe(refused.jobId);
  });

  it('cancels a waiting job, which is never sent, and moves the ones behind it up', async () => {
    const url = location();
    const queue = await processQueue(url);
    const keyId = newKey(url);
    for (const index of [1, 2, 3]) await queue.enqueue(job(keyId, 'ana', index));
    await queue.enqueue(job(keyId, 'bo', 1));
    const running = await claimedJobId(queue, keyId, NOW, 1);
    expect(await queue.cancel(keyId, job(keyId, 'bo', 1).jobId)).toBe(true);
    expect(await queue.cancel(keyId, job(keyId, 'bo', 1).jobId)).toBe(false);
    expect(await queue.placeOf(keyId, job(keyId, 'bo', 1).jobId)).toBeUndefined();
    expect(await queue.placeOf(keyId, job(keyId, 'ana', 2).jobId)).toBe(1);
    // A job already handed to a sender is not the line's to cancel.
    expect(await queue.cancel(keyId, running)).toBe(false);
    await queue.finished(keyId, running);
    const sent: string[] = [];
    for (;;) {
      const answer = await queue.claimNext(keyId, NOW, { statedLimit: 10 });
      if (answer.kind !== 'claimed') break;
      sent.push(answer.job.jobId);
    }
    expect(sent).toEqual([job(keyId, 'ana', 2).jobId, job(keyId, 'ana', 3).jobId]);
  });

  it.each([
    ['stated', 3, 3],
    ['learned', undefined, 2],
  ])('never lets two processes claiming at once hold more than the %s slots', async (_how, statedLimit, slots) => {
    const url = location();
    const processes = [await processQueue(url), await processQueue(url)];
    const keyId = newKey(url);
    const jobs = Array.from({ length: 24 }, (_, index) => job(keyId, `member${index % 5}`, index));
    for (const [position, each] of jobs.entries()) await processes[position % 2]!.enqueue(each);
    const expectedOrder = (await processes[0]!.waiting(keyId)).map((waiting) => waiting.jobId);
    const options = statedLimit === undefined ? {} : { statedLimit };
    const sent: string[] = [];
    while (sent.length < jobs.length) {
      const answers = await Promise.all(Array.from({ length: 16 }, (_, racer) => processes[racer % 2]!.claimNext(keyId, NOW, options)));
      const claims = answers.flatMap((answer) => (answer.kind === 'claimed' ? [answer.job.jobId] : []));
      expect(claims.length).toBe(Math.min(slots, jobs.length - sent.length));
      // Each round takes the next jobs in line, whichever process wrote first.
      expect(claims.toSorted()).toEqual(expectedOrder.slice(sent.length, sent.length + claims.length).toSorted());
      sent.push(...claims);
      await Promise.all(claims.map((jobId, racer) => processes[racer % 2]!.finished(keyId, jobId)));
    }
    expect(sent.toSorted()).toEqual(jobs.map((each) => each.jobId).toSorted());
  });

  it('serves a burst through senders on two processes: each job sent once, the gateway never over its limit', async () => {
    const url = location();
    const processes = [await processQueue(url), await processQueue(url)];
    const keyId = newKey(url);
    const gateway = new KeyWithSlots(2);
    const jobs = Array.from({ length: 30 }, (_, index) => job(keyId, `member${index % 6}`, index));
    await Promise.all(jobs.map((each, position) => processes[position % 2]!.enqueue(each)));
    // Three senders in each process, each claiming until the line is empty.
    await Promise.all(Array.from({ length: 6 }, (_, sender) => sendUntilEmpty(processes[sender % 2]!, keyId, gateway)));
    expect(gateway.accepted.toSorted()).toEqual(jobs.map((each) => each.jobId).toSorted());
    expect(gateway.mostAtOnce).toBe(2);
    // Learning the key's limit costs a refusal or so, within the 1.1 submissions per job.
    expect((gateway.accepted.length + gateway.refusals) / jobs.length).toBeLessThanOrEqual(SUBMISSIONS_PER_JOB);
  });

  it('keeps its line and its claims across a restart, and hands out a claim whose sender died', async () => {
    const url = location();
    const before = await processQueue(url);
    const keyId = newKey(url);
    for (const index of [1, 2, 3]) await before.enqueue(job(keyId, 'ana', index));
    const abandoned = ticketOf(await before.claimNext(keyId, NOW, { statedLimit: 1 }));
    await Promise.all(opened.splice(0).map((store) => store.close()));

    const after = await processQueue(url);
    expect((await after.waiting(keyId)).map((waiting) => waiting.jobId)).toEqual([job(keyId, 'ana', 2).jobId, job(keyId, 'ana', 3).jobId]);
    expect(await after.claimNext(keyId, NOW + 1, { statedLimit: 1 })).toEqual({ kind: 'full', retryAt: NOW + CLAIM_LEASE_MS });
    const resumed = await after.claimNext(keyId, NOW + CLAIM_LEASE_MS, { statedLimit: 1 });
    expect(resumed).toEqual({
      kind: 'claimed',
      ticket: { keyId, jobId: abandoned.jobId, attempt: 2 },
      job: job(keyId, 'ana', 1),
      resumed: true,
    });
    // The dead sender's ticket no longer holds the job; the new one does.
    expect(await after.accepted(abandoned, NOW + CLAIM_LEASE_MS)).toBe(false);
    expect(await after.accepted(ticketOf(resumed), NOW + CLAIM_LEASE_MS)).toBe(true);
    expect(await after.finished(keyId, abandoned.jobId)).toBe(true);
    expect(await claimedJobId(after, keyId, NOW + CLAIM_LEASE_MS, 1)).toBe(job(keyId, 'ana', 2).jobId);
  });

  it("releases at once an earlier run's claims of the same worker, never another worker's", async () => {
    const url = location();
    // Two workers at once, each on a key of its own with 1 slot, and each claiming on the other's key too.
    const worker = `worker-${randomUUID()}`;
    const otherWorker = `worker-${randomUUID()}`;
    const before = await processQueue(url);
    const other = await processQueue(url);
    const keyId = newKey(url);
    const otherKeyId = newKey(url);
    for (const index of [1, 2]) await before.enqueue(job(keyId, 'ana', index));
    for (const index of [1, 2]) await other.enqueue(job(otherKeyId, 'bo', index));
    const lost = ticketOf(await before.claimNext(keyId, NOW, { statedLimit: 1, claimant: { worker, run: 'run-1' } }));
    const live = ticketOf(await other.claimNext(otherKeyId, NOW, { statedLimit: 1, claimant: { worker: otherWorker, run: 'run-1' } }));
    // The first worker's process is killed between its claim and its report (`before` is not used again), and starts again.

    const after = await processQueue(url);
    const released = await after.releaseEarlierRuns({ worker, run: 'run-2' }, NOW + 1);
    expect(released.filter((line) => line.keyId === keyId || line.keyId === otherKeyId)).toEqual([{ keyId, guildId: GUILD }]);
    // Its lost claim is handed out at once, not at its lease's end, through the rules of an abandoned claim.
    expect(await after.claimNext(keyId, NOW + 1, { statedLimit: 1, claimant: { worker, run: 'run-2' } })).toEqual({
      kind: 'claimed',
      ticket: { keyId, jobId: lost.jobId, attempt: 2 },
      job: job(keyId, 'ana', 1),
      resumed: true,
    });
    expect(await after.accepted(lost, NOW + 1)).toBe(false);
    // The other worker's claim stays its own: its line is full until its lease, and its report still counts.
    expect(await after.claimNext(otherKeyId, NOW + 1, { statedLimit: 1 })).toEqual({ kind: 'full', retryAt: NOW + CLAIM_LEASE_MS });
    expect(await other.accepted(live, NOW + 2)).toBe(true);
    // A claim of the run itself is not an earlier run's: a second release in the same run releases nothing.
    const again = await after.releaseEarlierRuns({ worker, run: 'run-2' }, NOW + 3);
    expect(again.filter((line) => line.keyId === keyId)).toEqual([]);
  });
});

/** Submissions a burst may cost per job, refusals included, while the queue learns the key's limit (issue 35). */
const SUBMISSIONS_PER_JOB = 1.1;

/** A gateway key as the gateway keeps it: at most `limit` tasks at once, a refusal past it. */
class KeyWithSlots {
  readonly accepted: string[] = [];
  readonly #running = new Set<string>();
  readonly #ended: (() => void)[] = [];
  mostAtOnce = 0;
  refusals = 0;
  /** Tasks ended so far, whose slots the queue has been told of. */
  ends = 0;

  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  submit(jobId: string): boolean {
    if (this.#running.size >= this.limit) {
      this.refusals += 1;
      return false;
    }
    this.#running.add(jobId);
    this.accepted.push(jobId);
    this.mostAtOnce = Math.max(this.mostAtOnce, this.#running.size);
    return true;
  }

  /** The task ends at the gateway; `report` tells the queue, and then waiting senders hear of it. */
  async end(jobId: string, report: () => Promise<unknown>): Promise<void> {
    this.#running.delete(jobId);
    await report();
    this.ends += 1;
    for (const wake of this.#ended.splice(0)) wake();
  }

  /** Resolves once more than `seen` tasks have ended. */
  endAfter(seen: number): Promise<void> {
    return this.ends > seen ? Promise.resolve() : new Promise((resolve) => this.#ended.push(resolve));
  }
}

/** A sender as the video part runs one: claim, send, report, and wait for a slot while the key is full. */
async function sendUntilEmpty(queue: KeyQueue, keyId: string, gateway: KeyWithSlots): Promise<void> {
  for (;;) {
    const endsSeen = gateway.ends;
    const answer = await queue.claimNext(keyId, NOW);
    if (answer.kind === 'empty') return;
    if (answer.kind !== 'claimed') {
      await gateway.endAfter(endsSeen);
      continue;
    }
    const { ticket } = answer;
    if (!gateway.submit(ticket.jobId)) {
      await queue.refusedForConcurrency(ticket, NOW);
      continue;
    }
    await queue.accepted(ticket, NOW);
    // Another sender's turn before this task ends.
    await new Promise((resolve) => setImmediate(resolve));
    await gateway.end(ticket.jobId, () => queue.finished(keyId, ticket.jobId));
  }
}
