import { randomBytes } from 'node:crypto';
import type { Layer } from '../gateway/spec.ts';
import type { Logger } from '../lib/log.ts';
import { z } from 'zod';
import { parseShape, StoredRecordError, type Collection, type Store } from '../store/index.ts';
import { needsWork, parseTaskRecord, routingGuildId, type TaskRecord } from './record.ts';

// Where tasks live. Besides the records themselves, three small indexes keep every read cheap however
// long the history grows: the tasks that still need work (all a restart has to scan), gateway ids to
// task ids, and each member's recent tasks for /video list.

const RECENT_PER_USER = 25;
/**
 * Index marks this process keeps for active tasks. A task that ends is unmarked when it is saved as
 * finished; one that vanishes without that (deleted, or followed by another process) would stay, so the
 * oldest marks go beyond this many: a mark only spares a write, and a lost one costs one.
 */
const MAX_MARKS = 100_000;
/** Finished tasks are kept this long (for /video status, edits and extensions of them), then dropped. */
const FINISHED_TASK_TTL_MS = 90 * 24 * 3600_000;

// The indexes are bare values (src/store/versioned.ts): a task id, a member's list of ids, and an
// active task's marker.

function parseTaskIds(raw: unknown): string[] {
  return parseShape('recent tasks', z.array(z.string()), raw);
}

function parseTaskId(raw: unknown): string {
  return parseShape('task id', z.string(), raw);
}

/**
 * An active task's marker: the guild whose shard follows it (routingGuildId(): its server, or for a
 * member's own install the server it was asked in, or `0` for shard 0), so that a worker can resume its
 * own guilds' tasks without reading the others'. Version 0, written before sharding (2026-11-25), is
 * `true`, which names no guild: shard 0 resumes its task (a finished one long since; one still going is
 * followed from there as any worker can, its card and buttons working from every worker).
 */
function parseActiveMarker(raw: unknown): string {
  return parseShape('active task', z.union([z.literal(true).transform(() => '0'), z.string().min(1)]), raw);
}

/** Sortable by creation time, and short enough to be a Discord message nonce (at most 25 characters). */
export function newTaskId(now = Date.now()): string {
  return `v${now.toString(36)}${randomBytes(6).toString('hex')}`;
}

/** When a task was created, read from its id; undefined for an id newTaskId() did not make. */
function taskIdCreatedAt(id: string): number | undefined {
  const time = /^v([0-9a-z]+)[0-9a-f]{12}$/.exec(id)?.[1];
  return time === undefined ? undefined : Number.parseInt(time, 36);
}

/** Adds `id` to a set of marks, forgetting the oldest beyond MAX_MARKS (a Set keeps insertion order). */
function mark(marks: Set<string>, id: string): void {
  marks.add(id);
  for (const oldest of marks) {
    if (marks.size <= MAX_MARKS) break;
    marks.delete(oldest);
  }
}

export class TaskRepository {
  readonly #tasks: Collection<TaskRecord>;
  readonly #active: Collection<string>;
  readonly #byGatewayId: Collection<string>;
  readonly #recentByUser: Collection<string[]>;
  /**
   * Index entries this process has written for tasks still active: a task is saved several times while
   * it runs, and rewriting them each time doubled the writes. Its active marker is written at its first
   * save, its gateway id at the first save that has one.
   */
  readonly #markedActive = new Set<string>();
  readonly #gatewayIdIndexed = new Set<string>();
  /** Unreadable records already logged: each is one line in the log, however often a list meets it. */
  readonly #loggedUnreadable = new Set<string>();
  readonly #log: Logger;

  constructor(store: Store, log: Logger) {
    this.#log = log;
    this.#tasks = store.collection('tasks', parseTaskRecord);
    this.#active = store.collection('tasks_active', parseActiveMarker);
    this.#byGatewayId = store.collection('tasks_by_gateway_id', parseTaskId);
    this.#recentByUser = store.collection('tasks_recent_by_user', parseTaskIds);
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    return this.#tasks.get(id);
  }

  async getByGatewayId(layer: Layer, gatewayId: string): Promise<TaskRecord | undefined> {
    const id = await this.#byGatewayId.get(`${layer}:${gatewayId}`);
    return id === undefined ? undefined : this.get(id);
  }

  /** A task of this server by the bot's ref (`v…`) or by its gateway task id on either layer. */
  async findInGuild(guildId: string, ref: string): Promise<TaskRecord | undefined> {
    const trimmed = ref.trim();
    const task =
      (await this.get(trimmed)) ?? (await this.getByGatewayId('compat', trimmed)) ?? (await this.getByGatewayId('native', trimmed));
    return task?.guildId === guildId ? task : undefined;
  }

  /** Writes the task and keeps the indexes in step with it. */
  async save(task: TaskRecord): Promise<void> {
    const active = needsWork(task);
    await this.#tasks.set(task.id, task, active ? undefined : FINISHED_TASK_TTL_MS);
    if (task.gatewayId && !this.#gatewayIdIndexed.has(task.id)) {
      await this.#byGatewayId.set(`${task.layer}:${task.gatewayId}`, task.id, FINISHED_TASK_TTL_MS);
      if (active) mark(this.#gatewayIdIndexed, task.id);
    }
    if (!active) {
      await this.#active.delete(task.id);
      this.#markedActive.delete(task.id);
      this.#gatewayIdIndexed.delete(task.id);
    } else if (!this.#markedActive.has(task.id)) {
      await this.#active.set(task.id, routingGuildId(task));
      mark(this.#markedActive, task.id);
    }
  }

  /**
   * One atomic step on a stored task: `decide` gets the task as stored and answers what to write, or
   * undefined to leave it. Returns the task as it stands after the step (undefined when there is none).
   * The steps of a task waiting in its key's line (sending it, cancelling it) decide on what is stored,
   * so two processes can never both take it.
   */
  async change(id: string, decide: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    let written: TaskRecord | undefined;
    const stored = await this.#tasks.update(id, (current) => {
      written = current === undefined ? undefined : decide(current);
      return written;
    });
    // Written: saved again through save() for its lifetime (a finished task expires) and its indexes.
    if (written !== undefined && stored !== undefined) await this.save(stored);
    return stored;
  }

  /** A new task: saved, and first in its member's recent list. */
  async create(task: TaskRecord): Promise<void> {
    await this.save(task);
    // One atomic step on the store: two tasks of a member created at once (by two workers, while a guild is
    // handed over) both stay on the list that /video list and the per-member limit read.
    await this.#recentByUser.update(`${task.guildId}:${task.userId}`, (recent = []) =>
      [task.id, ...recent.filter((id) => id !== task.id)].slice(0, RECENT_PER_USER),
    );
  }

  /** The member's most recent tasks, newest first; with `createdSince`, only those created since then (the others are not read). */
  async recentForUser(guildId: string, userId: string, limit = RECENT_PER_USER, createdSince?: number): Promise<TaskRecord[]> {
    const ids = (await this.#recentByUser.get(`${guildId}:${userId}`)) ?? [];
    const wanted = ids.slice(0, limit).filter((id) => createdSince === undefined || (taskIdCreatedAt(id) ?? Infinity) >= createdSince);
    const tasks = await Promise.all(wanted.map((id) => this.#readableOrNone(id)));
    return tasks.filter((task) => task !== undefined);
  }

  /**
   * A task in a member's list, or undefined when its record cannot be read: one bad record must not make
   * the member's limits or /video list fail. It is logged once, with its key, and stays for a person to see.
   */
  async #readableOrNone(id: string): Promise<TaskRecord | undefined> {
    try {
      return await this.get(id);
    } catch (error) {
      if (!(error instanceof StoredRecordError)) throw error;
      this.reportUnreadable(id, error);
      return undefined;
    }
  }

  /**
   * Logs a task whose record cannot be read, once per task whoever meets it (a list, a limit, the poller):
   * each of them leaves it out, and it stays in the store for a person to look at.
   */
  reportUnreadable(id: string, error: StoredRecordError): void {
    if (this.#loggedUnreadable.has(id)) return;
    mark(this.#loggedUnreadable, id);
    this.#log.error('a stored video task is unreadable; lists, limits and the poller leave it out', { task: id, error });
  }

  /**
   * Forgets that a task needs work, once its record is gone from the store: a restart does not resume
   * (and report lost) it again.
   */
  async forgetActive(id: string): Promise<void> {
    await this.#active.delete(id);
    this.#markedActive.delete(id);
    this.#gatewayIdIndexed.delete(id);
  }

  /** Ids of every task that still needs polling or posting: what a restart resumes. */
  async *activeIds(ownsGuild: (guildId: string) => boolean = () => true): AsyncIterable<string> {
    for await (const [id, guildId] of this.#active.entries()) if (ownsGuild(guildId)) yield id;
  }
}
