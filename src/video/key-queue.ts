import type { Collection, Store } from '../store/index.ts';
import {
  CLAIM_LEASE_MS,
  cancelJob,
  claimJob,
  emptyKeyQueue,
  enqueueJob,
  markAccepted,
  markFinished,
  markRefusedForConcurrency,
  markRefusedForRate,
  parseKeyQueueRecord,
  releaseEarlierRuns,
  sendOrder,
  type ClaimAnswer,
  type Claimant,
  type ClaimTicket,
  type Decision,
  type EnqueueAnswer,
  type KeyQueueRecord,
  type QueueJob,
  type WaitingPlace,
} from './key-queue-record.ts';

// Every gateway key has one line of jobs, shared by every server that uses the key and every process on the
// store: the key's concurrency limit is the key's, not a process's, so only a line in the store can keep
// it when several processes (or machines on Redis) send on one key, and only a line in the store survives a
// restart or a SIGKILL. One record per key, changed only by the store's atomic update, is that line: each
// change below is one step for every process, decided by a pure function (key-queue-record.ts).
//
// The contract for the caller, which sends the jobs:
// - `enqueue` a job the key may have to wait for; then `claimNext` until it answers anything but `claimed`.
//   A claim is one atomic step that takes the next job (round-robin over the members who have one waiting,
//   then oldest first) and records it as holding a slot, so no two processes ever take the same job or
//   more slots than the key has.
// - Each claim hands a ticket. The sender reports what the gateway said with it, exactly once: `accepted`
//   (the task runs; it keeps its slot until `finished`), `refusedForConcurrency` or `refusedForRate` (the
//   job goes back first in line), or `finished` (the send failed for another reason). A report with a
//   ticket since taken over changes nothing and answers false: the job is no longer this sender's.
// - A claim not reported within its lease (the process died between the claim and the report, or its
//   report never reached the store) is handed out again by `claimNext` with `resumed: true`. A claim names
//   its claimant (the worker, and its run): a worker that starts again releases its earlier runs' claims at
//   once (`releaseEarlierRuns`), which are then handed out the same way, without waiting for their lease.
// - The queue makes every waiting job claimed, in order, until a sender reports it; the job's own record
//   makes it sent at most once. Before it sends, the sender reads that record (the video part's): it sends
//   only a job the record says still waits, writing "submitting" first, and reports any other with what
//   the record says (`accepted` for one sent, `finished` for one ended or cancelled). That covers a resumed
//   claim that had been sent, an `enqueue` tried again after its job ran, and a cancel that lost the race
//   to a claim. Together: every waiting job is sent once, in order, across restarts.
// - The key's limit is learned: the queue lets one job more than the most the gateway has accepted at once
//   be sent (a probe); a concurrency refusal brings the limit down to the bot's other running jobs on the
//   key and stops probing for a while. An admin's stated limit replaces the probing: nothing past it is sent.
// - The sender stores the gateway's answer in the job's own record before it reports it here: a report
//   lost to a crash is then read back by whoever resumes the claim.
// - Any process may claim any job of the line (the job's request is in the store under its id): whoever
//   frees a slot (`finished`, a refusal) claims next, so no process waits for another to wake it. `full`
//   and `paused` answers say when to try again regardless (a lease's end, a Retry-After).
// - Past MAX_WAITING_PER_MEMBER jobs of one member on one server, or MAX_WAITING_PER_KEY in all, `enqueue`
//   refuses (as data, with the limit): the line's record stays small enough to rewrite at every change.

export { MAX_WAITING_PER_KEY, MAX_WAITING_PER_MEMBER } from './key-queue-record.ts';
export type { ClaimAnswer, Claimant, ClaimTicket, EnqueueAnswer, QueueJob, WaitingPlace } from './key-queue-record.ts';

/** A key's line is forgotten after this long without a change (a key no longer used); any change keeps it. */
const KEEP_IDLE_LINE_MS = 30 * 24 * 3_600_000;

export interface ClaimOptions {
  /** The admin's `key_concurrency` for the key, when stated: no more than this at once, and no probing. */
  statedLimit?: number;
  /** How long a claim holds before it counts as abandoned; default CLAIM_LEASE_MS. */
  leaseMs?: number;
  /** Who claims: recorded with the claim, for `releaseEarlierRuns`. */
  claimant?: Claimant;
}

export class KeyQueue {
  readonly #lines: Collection<KeyQueueRecord>;

  constructor(store: Store) {
    this.#lines = store.collection('video_key_queues', parseKeyQueueRecord);
  }

  /** Puts the job in its key's line: its place (1 is next), or why it may not wait. */
  enqueue(job: QueueJob): Promise<EnqueueAnswer> {
    return this.#change(job.keyId, (record) => enqueueJob(record, job));
  }

  /** Takes the next job when a slot is free and the key is not paused, recording it as holding the slot. */
  claimNext(keyId: string, now: number, options: ClaimOptions = {}): Promise<ClaimAnswer> {
    return this.#change(keyId, (record) =>
      claimJob(record, keyId, now, options.statedLimit, options.leaseMs ?? CLAIM_LEASE_MS, options.claimant),
    );
  }

  /**
   * Releases, on every key's line, the claims that earlier runs of `claimant`'s worker left unreported:
   * each key whose line had any, with the guild of one of its released jobs (to drain it).
   */
  async releaseEarlierRuns(claimant: Claimant, now: number): Promise<{ keyId: string; guildId: string }[]> {
    const released: { keyId: string; guildId: string }[] = [];
    for await (const [keyId, record] of this.#lines.entries()) {
      // Read first, so that lines without such a claim are not written; the change decides again atomically.
      if (releaseEarlierRuns(record, claimant, now).answer.length === 0) continue;
      const guilds = await this.#change(keyId, (current) => releaseEarlierRuns(current, claimant, now));
      if (guilds[0] !== undefined) released.push({ keyId, guildId: guilds[0] });
    }
    return released;
  }

  /** The gateway accepted the claimed job. False: the claim was taken over (see the contract above). */
  accepted(ticket: ClaimTicket, now: number): Promise<boolean> {
    return this.#change(ticket.keyId, (record) => markAccepted(record, ticket, now));
  }

  /** The job's slot is free (its task ended, or its send failed for good). False: it held none. */
  finished(keyId: string, jobId: string): Promise<boolean> {
    return this.#change(keyId, (record) => markFinished(record, jobId));
  }

  /** The gateway refused the job for the key's concurrency: back first in line, and the key's limit lowered. */
  refusedForConcurrency(ticket: ClaimTicket, now: number): Promise<boolean> {
    return this.#change(ticket.keyId, (record) => markRefusedForConcurrency(record, ticket, now));
  }

  /** The gateway refused the job for the key's rate: back first in line, and the key paused for `retryAfterMs`. */
  refusedForRate(ticket: ClaimTicket, retryAfterMs: number, now: number): Promise<boolean> {
    return this.#change(ticket.keyId, (record) => markRefusedForRate(record, ticket, retryAfterMs, now));
  }

  /** Takes a waiting job out of line: true if it was waiting (a claimed one is past cancelling here). */
  cancel(keyId: string, jobId: string): Promise<boolean> {
    return this.#change(keyId, (record) => cancelJob(record, jobId));
  }

  /** The job's place in line (1 is next), or undefined when it is not waiting. */
  async placeOf(keyId: string, jobId: string): Promise<number | undefined> {
    return (await this.waiting(keyId)).find((waiting) => waiting.jobId === jobId)?.place;
  }

  /** The key's waiting jobs in the order they will be sent. */
  async waiting(keyId: string): Promise<WaitingPlace[]> {
    const record = await this.#lines.get(keyId);
    return record ? sendOrder(record.line) : [];
  }

  /** One atomic step on the key's line: the answer of the decision the store wrote (the last one it ran). */
  async #change<A>(keyId: string, decide: (record: KeyQueueRecord) => Decision<A>): Promise<A> {
    let decided: Decision<A> | undefined;
    await this.#lines.update(
      keyId,
      (current) => {
        decided = decide(current ?? emptyKeyQueue());
        return decided.next;
      },
      KEEP_IDLE_LINE_MS,
    );
    if (!decided) throw new Error(`the store did not run the change of key queue ${keyId}`);
    return decided.answer;
  }
}
