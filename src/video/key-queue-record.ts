import { z } from 'zod';
import { TASK_TIMEOUT_MS } from '../gateway/spec.ts';
import { DEFAULT_TIMEOUTS } from '../gateway/http.ts';
import { versionedRecord } from '../store/index.ts';
import { MAX_KEY_CONCURRENCY } from '../ports/guild-policy.ts';

// A gateway key's line of jobs as one stored record, and every change of it as a pure function of the
// record and the time: the store's atomic update runs these (again, when another process wrote first),
// so they decide everything from what they are handed and do nothing else. `key-queue.ts` says the contract.

/** The 11th job a member asks for on one server while 10 of theirs wait is refused. */
export const MAX_WAITING_PER_MEMBER = 10;
/**
 * Past this many waiting jobs the key's line refuses more: each change rewrites the whole record (about 100
 * bytes a job), and a line this long on one key is hours of videos, longer than anyone waits for one.
 */
export const MAX_WAITING_PER_KEY = 1_000;
/**
 * A claimed job not reported within this is taken for abandoned (its process died mid-send) and handed out
 * again: longer than the gateway client's longest request (an upload), so a live sender is never overtaken.
 */
export const CLAIM_LEASE_MS = DEFAULT_TIMEOUTS.totalMs + 60_000;
/**
 * A job the gateway accepted holds its slot until `finished`, or at most this: past the gateway's own
 * timeout the task has ended there whatever the bot heard, so a slot whose tracker was lost comes back.
 */
export const RUNNING_LEASE_MS = TASK_TIMEOUT_MS + 120_000;
/** After a concurrency refusal the key is not probed past what it took for this long. */
export const REFUSAL_REMEMBERED_MS = 15 * 60_000;
/**
 * A concurrency refusal while none of the bot's own jobs ran on the key (another user of the key holds its
 * slots): no `finished` will say when one frees, so the line waits this long before trying again.
 */
export const BUSY_ELSEWHERE_PAUSE_MS = 30_000;
/** A rate limit's Retry-After is kept within these: a missing or absurd one neither hammers nor stalls the key. */
export const MIN_RATE_PAUSE_MS = 1_000;
export const MAX_RATE_PAUSE_MS = 3_600_000;

/** A job of the line: what the caller enqueued. `askedAt` is when its member asked (the wait metric counts from it). */
export interface QueueJob {
  jobId: string;
  keyId: string;
  guildId: string;
  memberId: string;
  askedAt: number;
}

interface WaitingJob {
  jobId: string;
  askedAt: number;
  /** How many times it was claimed before and put back (a refusal): the next claim is attempt `claims + 1`. */
  claims: number;
}

/**
 * A member's waiting jobs on one server, oldest first. A member whose job was just claimed keeps their
 * entry (empty, `servedAt` set) at the back of the turn order for a while: a job they ask for next comes
 * after the members who have not had a turn since, not first because nobody else was waiting that moment.
 */
interface MemberLine {
  guildId: string;
  memberId: string;
  jobs: WaitingJob[];
  /** When a job of theirs was last claimed; unset while they wait for their first turn (or were put back first). */
  servedAt?: number;
}

/** A served member with nothing waiting is remembered this long for their place in the turn order… */
const SERVED_REMEMBERED_MS = 3_600_000;
/** …and only the most recent this many of them: the record is rewritten at every change. */
const MAX_SERVED_REMEMBERED = 200;

interface RunningJob {
  jobId: string;
  guildId: string;
  memberId: string;
  askedAt: number;
  /** Which claim of the job holds the slot: reports of an earlier one are stale. */
  attempt: number;
  /** `claimed`: handed to a sender, not yet accepted by the gateway; `sent`: accepted, running there. */
  phase: 'claimed' | 'sent';
  leaseUntil: number;
  /** Who claimed it, when the claimant said (see `Claimant`): an earlier run of the same worker releases it at start. */
  claimedBy?: Claimant;
}

/**
 * The process that claims: `worker` says which part of the bot it is (the application and its shards), the
 * same across restarts and different for every process running at once; `run` is new at every start. A
 * process that starts again finds the claims of its earlier runs abandoned: nobody else can hold them.
 */
export interface Claimant {
  worker: string;
  run: string;
}

export const KEY_QUEUE_VERSION = 1;

export interface KeyQueueRecord {
  v: typeof KEY_QUEUE_VERSION;
  /** Members with a job waiting, in turn order: the next job is the first member's first. */
  line: MemberLine[];
  running: RunningJob[];
  /** The most jobs at once the gateway has accepted on the key (at least 1: a line must start somewhere). */
  learnedLimit: number;
  /** A concurrency refusal's lesson: no more than `limit` at once until `until`, stated limit or not. */
  refusal?: { limit: number; until: number };
  /** A rate limit's Retry-After: nothing is claimed before. */
  pausedUntil?: number;
}

const waitingJobSchema = z.object({ jobId: z.string(), askedAt: z.number(), claims: z.number().int().nonnegative() });

/** Reads a key's line. Version 1 is the first: there is no older record to upgrade. */
export const parseKeyQueueRecord = versionedRecord<KeyQueueRecord>({
  name: 'key queue',
  version: KEY_QUEUE_VERSION,
  schema: z.object({
    v: z.literal(KEY_QUEUE_VERSION),
    // `servedAt` was added without a new version: a line stored before it had no member marked as served.
    line: z.array(
      z.object({ guildId: z.string(), memberId: z.string(), jobs: z.array(waitingJobSchema), servedAt: z.number().optional() }),
    ),
    running: z.array(
      z.object({
        jobId: z.string(),
        guildId: z.string(),
        memberId: z.string(),
        askedAt: z.number(),
        attempt: z.number().int().positive(),
        phase: z.enum(['claimed', 'sent']),
        leaseUntil: z.number(),
        // Added without a new version: a claim stored before it is left to its lease.
        claimedBy: z.object({ worker: z.string(), run: z.string() }).optional(),
      }),
    ),
    learnedLimit: z.number().int().min(1).max(MAX_KEY_CONCURRENCY),
    refusal: z.object({ limit: z.number().int().min(1), until: z.number() }).optional(),
    pausedUntil: z.number().optional(),
  }),
  // No record was written before version 1.
  upgrade: (stored) => stored,
});

export function emptyKeyQueue(): KeyQueueRecord {
  return { v: KEY_QUEUE_VERSION, line: [], running: [], learnedLimit: 1 };
}

/** A waiting job as cards and `/video list` show it: its place (1 is next) and whose it is. */
export interface WaitingPlace {
  jobId: string;
  guildId: string;
  memberId: string;
  askedAt: number;
  place: number;
}

/**
 * The order the waiting jobs will be sent in: round after round over the members in turn order, each
 * round taking every member's next job. Taking the first and moving its member to the back (what a claim
 * does) leaves the rest in this same order, so a place only ever moves forward, or back when a job is put
 * back at the front.
 */
export function sendOrder(line: readonly MemberLine[]): WaitingPlace[] {
  const order: WaitingPlace[] = [];
  const rounds = Math.max(0, ...line.map((member) => member.jobs.length));
  for (let round = 0; round < rounds; round++)
    for (const { guildId, memberId, jobs } of line) {
      const job = jobs[round];
      if (job) order.push({ jobId: job.jobId, guildId, memberId, askedAt: job.askedAt, place: order.length + 1 });
    }
  return order;
}

/** What a change decided: the record to write (undefined: write nothing) and the answer for the caller. */
export interface Decision<A> {
  next: KeyQueueRecord | undefined;
  answer: A;
}

function copy(record: KeyQueueRecord): KeyQueueRecord {
  return structuredClone(record);
}

function isWaiting(record: KeyQueueRecord, jobId: string): boolean {
  return record.line.some((member) => member.jobs.some((job) => job.jobId === jobId));
}

export type EnqueueAnswer =
  | { kind: 'waiting'; place: number }
  /** Already claimed (an enqueue tried again after its first write landed unseen): it is not waiting. */
  | { kind: 'running' }
  | { kind: 'refused'; reason: 'member_limit' | 'line_full'; limit: number };

export function enqueueJob(record: KeyQueueRecord, job: QueueJob): Decision<EnqueueAnswer> {
  const placed = sendOrder(record.line).find((waiting) => waiting.jobId === job.jobId);
  if (placed) return { next: undefined, answer: { kind: 'waiting', place: placed.place } };
  if (record.running.some((running) => running.jobId === job.jobId)) return { next: undefined, answer: { kind: 'running' } };
  const next = copy(record);
  let member = next.line.find((each) => each.guildId === job.guildId && each.memberId === job.memberId);
  if (member && member.jobs.length >= MAX_WAITING_PER_MEMBER)
    return { next: undefined, answer: { kind: 'refused', reason: 'member_limit', limit: MAX_WAITING_PER_MEMBER } };
  const waitingCount = next.line.reduce((sum, each) => sum + each.jobs.length, 0);
  if (waitingCount >= MAX_WAITING_PER_KEY)
    return { next: undefined, answer: { kind: 'refused', reason: 'line_full', limit: MAX_WAITING_PER_KEY } };
  if (!member) {
    // A member who has not had a turn takes theirs after everyone else who has not, before those who had one.
    member = { guildId: job.guildId, memberId: job.memberId, jobs: [] };
    const firstServed = next.line.findIndex((each) => each.servedAt !== undefined);
    next.line.splice(firstServed === -1 ? next.line.length : firstServed, 0, member);
  }
  member.jobs.push({ jobId: job.jobId, askedAt: job.askedAt, claims: 0 });
  const place = sendOrder(next.line).find((waiting) => waiting.jobId === job.jobId)?.place ?? 0;
  return { next, answer: { kind: 'waiting', place } };
}

/** Which claim of a job a sender holds: every report names it, and a report of a claim since taken over changes nothing. */
export interface ClaimTicket {
  keyId: string;
  jobId: string;
  attempt: number;
}

export type ClaimAnswer =
  /** `resumed`: a claim whose sender went silent past its lease; it may have been sent (see key-queue.ts). */
  | { kind: 'claimed'; ticket: ClaimTicket; job: QueueJob; resumed: boolean }
  | { kind: 'empty' }
  /** Every slot is held; `retryAt`: when the first lease runs out, should no `finished` come before. */
  | { kind: 'full'; retryAt: number }
  | { kind: 'paused'; until: number };

/**
 * How many jobs may hold a slot now: the stated limit, or the learned one and one more to probe. A stated
 * limit is taken within 1..MAX_KEY_CONCURRENCY, as /config stores it (its 0 clears it, never stored): 0
 * would stop the line for good.
 */
export function slotsNow(record: KeyQueueRecord, now: number, statedLimit: number | undefined): number {
  const refusedAt = record.refusal && record.refusal.until > now ? record.refusal.limit : undefined;
  if (statedLimit !== undefined) {
    const stated = Math.min(MAX_KEY_CONCURRENCY, Math.max(1, Math.floor(statedLimit) || 1));
    return Math.min(stated, refusedAt ?? stated);
  }
  if (refusedAt !== undefined) return Math.min(record.learnedLimit, refusedAt);
  return Math.min(record.learnedLimit + 1, MAX_KEY_CONCURRENCY);
}

/** Drops accepted jobs past their lease (the gateway has ended them); true when it dropped any. */
function dropEndedRunning(record: KeyQueueRecord, now: number): boolean {
  const kept = record.running.filter((running) => running.phase === 'claimed' || running.leaseUntil > now);
  const dropped = kept.length !== record.running.length;
  record.running = kept;
  return dropped;
}

export function claimJob(
  record: KeyQueueRecord,
  keyId: string,
  now: number,
  statedLimit: number | undefined,
  leaseMs: number,
  claimant?: Claimant,
): Decision<ClaimAnswer> {
  const next = copy(record);
  const dropped = dropEndedRunning(next, now);
  const unchanged = (answer: ClaimAnswer): Decision<ClaimAnswer> => ({ next: dropped ? next : undefined, answer });
  if (next.pausedUntil !== undefined && next.pausedUntil > now) return unchanged({ kind: 'paused', until: next.pausedUntil });
  const ticketOf = (jobId: string, attempt: number): ClaimTicket => ({ keyId, jobId, attempt });

  const abandoned = next.running.find((running) => running.phase === 'claimed' && running.leaseUntil <= now);
  if (abandoned) {
    abandoned.attempt += 1;
    abandoned.leaseUntil = now + leaseMs;
    if (claimant) abandoned.claimedBy = claimant;
    else delete abandoned.claimedBy;
    const { jobId, guildId, memberId, askedAt } = abandoned;
    return {
      next,
      answer: {
        kind: 'claimed',
        ticket: ticketOf(jobId, abandoned.attempt),
        job: { jobId, keyId, guildId, memberId, askedAt },
        resumed: true,
      },
    };
  }

  const turn = next.line.findIndex((member) => member.jobs.length > 0);
  const first = next.line[turn];
  const job = first?.jobs[0];
  if (!first || !job) return unchanged({ kind: 'empty' });
  if (next.running.length >= slotsNow(next, now, statedLimit))
    return unchanged({ kind: 'full', retryAt: Math.min(...next.running.map((running) => running.leaseUntil)) });

  first.jobs.shift();
  next.line.splice(turn, 1);
  // Round-robin: the member served goes to the back of the turn order, waiting jobs or not.
  first.servedAt = now;
  next.line.push(first);
  forgetLongServed(next, now);
  const attempt = job.claims + 1;
  const { guildId, memberId } = first;
  next.running.push({
    jobId: job.jobId,
    guildId,
    memberId,
    askedAt: job.askedAt,
    attempt,
    phase: 'claimed',
    leaseUntil: now + leaseMs,
    ...(claimant ? { claimedBy: claimant } : {}),
  });
  if (next.pausedUntil !== undefined) delete next.pausedUntil;
  return {
    next,
    answer: {
      kind: 'claimed',
      ticket: ticketOf(job.jobId, attempt),
      job: { jobId: job.jobId, keyId, guildId, memberId, askedAt: job.askedAt },
      resumed: false,
    },
  };
}

/**
 * A process starting again: the claims its earlier runs held and never reported (it was killed between a
 * claim and its report) are abandoned now rather than at their lease's end, so the next claim hands them
 * out again (`resumed`, with the same rules as a lease run out). Claims of another worker, or of this run,
 * are left alone. The answer: the guilds of the released jobs.
 */
export function releaseEarlierRuns(record: KeyQueueRecord, claimant: Claimant, now: number): Decision<string[]> {
  const isEarlierRun = (running: RunningJob): boolean =>
    running.phase === 'claimed' &&
    running.leaseUntil > now &&
    running.claimedBy?.worker === claimant.worker &&
    running.claimedBy.run !== claimant.run;
  if (!record.running.some(isEarlierRun)) return { next: undefined, answer: [] };
  const next = copy(record);
  const guilds: string[] = [];
  for (const running of next.running.filter(isEarlierRun)) {
    running.leaseUntil = now;
    guilds.push(running.guildId);
  }
  return { next, answer: guilds };
}

/** Drops served members with nothing waiting once they are old news, or too many to keep. */
function forgetLongServed(record: KeyQueueRecord, now: number): void {
  let idle = record.line.filter((member) => member.jobs.length === 0).length;
  record.line = record.line.filter((member) => {
    if (member.jobs.length > 0) return true;
    const keep = idle <= MAX_SERVED_REMEMBERED && now - (member.servedAt ?? 0) < SERVED_REMEMBERED_MS;
    if (!keep) idle--;
    return keep;
  });
}

function heldBy(record: KeyQueueRecord, ticket: ClaimTicket): RunningJob | undefined {
  return record.running.find((running) => running.jobId === ticket.jobId && running.attempt === ticket.attempt);
}

/** The gateway accepted the ticket's job: it holds its slot until `finished`, and the key has taken this many at once. */
export function markAccepted(record: KeyQueueRecord, ticket: ClaimTicket, now: number): Decision<boolean> {
  const next = copy(record);
  const held = heldBy(next, ticket);
  if (!held) return { next: undefined, answer: false };
  held.phase = 'sent';
  held.leaseUntil = now + RUNNING_LEASE_MS;
  // An accepted job whose end the bot has not yet heard of may have ended at the gateway: this can count one
  // too many, which the next concurrency refusal corrects.
  const atOnce = next.running.filter((running) => running.phase === 'sent').length;
  next.learnedLimit = Math.min(MAX_KEY_CONCURRENCY, Math.max(next.learnedLimit, atOnce));
  return { next, answer: true };
}

/** The job's slot is free: it ended at the gateway, or its send failed for good. Any claim of it. */
export function markFinished(record: KeyQueueRecord, jobId: string): Decision<boolean> {
  const running = record.running.filter((each) => each.jobId !== jobId);
  if (running.length === record.running.length) return { next: undefined, answer: false };
  return { next: { ...copy(record), running }, answer: true };
}

/** Takes the ticket's job out of the running jobs and puts it first in line: it goes next, before anyone's. */
function putBackFirst(record: KeyQueueRecord, ticket: ClaimTicket): KeyQueueRecord | undefined {
  const held = heldBy(record, ticket);
  if (!held) return undefined;
  const next = copy(record);
  next.running = next.running.filter((running) => running.jobId !== ticket.jobId);
  const index = next.line.findIndex((member) => member.guildId === held.guildId && member.memberId === held.memberId);
  const member: MemberLine = index === -1 ? { guildId: held.guildId, memberId: held.memberId, jobs: [] } : next.line.splice(index, 1)[0]!;
  member.jobs.unshift({ jobId: held.jobId, askedAt: held.askedAt, claims: held.attempt });
  // First in line, as if never served: nobody who arrives now goes before it.
  delete member.servedAt;
  next.line.unshift(member);
  return next;
}

/**
 * The gateway refused the job for the key's concurrency: it goes back first in line, and the key is taken
 * to run no more than the bot's other jobs on it (at least 1) for a while. The others still being sent
 * count too: the gateway most likely took them first (two sent at once, the second refused before the
 * first's answer is stored), and one counted too many costs one more refusal, not a stalled line.
 */
export function markRefusedForConcurrency(record: KeyQueueRecord, ticket: ClaimTicket, now: number): Decision<boolean> {
  const next = putBackFirst(record, ticket);
  if (!next) return { next: undefined, answer: false };
  dropEndedRunning(next, now);
  const others = next.running.length;
  const limit = Math.max(1, others);
  next.learnedLimit = Math.min(next.learnedLimit, limit);
  next.refusal = { limit, until: now + REFUSAL_REMEMBERED_MS };
  if (others === 0) next.pausedUntil = Math.max(next.pausedUntil ?? 0, now + BUSY_ELSEWHERE_PAUSE_MS);
  return { next, answer: true };
}

/** The gateway refused the job for the key's rate: it goes back first in line and nothing is claimed until Retry-After. */
export function markRefusedForRate(record: KeyQueueRecord, ticket: ClaimTicket, retryAfterMs: number, now: number): Decision<boolean> {
  const next = putBackFirst(record, ticket);
  if (!next) return { next: undefined, answer: false };
  const pauseMs = Math.min(MAX_RATE_PAUSE_MS, Math.max(MIN_RATE_PAUSE_MS, Number.isNaN(retryAfterMs) ? MIN_RATE_PAUSE_MS : retryAfterMs));
  next.pausedUntil = Math.max(next.pausedUntil ?? 0, now + pauseMs);
  return { next, answer: true };
}

/** Takes a waiting job out of line; a claimed or running one stays (it is no longer the line's to cancel). */
export function cancelJob(record: KeyQueueRecord, jobId: string): Decision<boolean> {
  if (!isWaiting(record, jobId)) return { next: undefined, answer: false };
  const next = copy(record);
  next.line = next.line
    .map((member) => ({ ...member, jobs: member.jobs.filter((job) => job.jobId !== jobId) }))
    .filter((member) => member.jobs.length > 0 || member.servedAt !== undefined);
  return { next, answer: true };
}
