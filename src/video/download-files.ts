import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../lib/log.ts';
import { onceUntilFailure } from '../lib/once-until-failure.ts';

// Where finished videos wait between their download and their post: files on disk, so that a delivery
// holds a chunk of a video in memory at a time, not the whole of it (eight deliveries of 200 MB each
// would otherwise need gigabytes). Each instance writes under a directory of its own, named after the
// process, so bots sharing a machine (and its temporary directory) never remove each other's files;
// on start, the directories of processes that are gone (killed mid-download) are removed.

/** The default parent of every instance's directory, under the OS temporary directory. */
export const DEFAULT_DOWNLOAD_ROOT = join(tmpdir(), 'video-voice-bot-downloads');

/** Whether a process with this id is running (one of another user counts: it cannot be signalled, but it lives). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class DownloadFiles {
  readonly #root: string;
  readonly #directory: string;
  readonly #log: Logger;
  /** Sweeps what dead processes left and makes this instance's directory, once (again after a failure). */
  readonly ready = onceUntilFailure(() => this.#prepare());

  constructor(log: Logger, root = DEFAULT_DOWNLOAD_ROOT) {
    this.#root = root;
    this.#directory = join(root, `${process.pid}-${randomBytes(4).toString('hex')}`);
    this.#log = log;
  }

  async #prepare(): Promise<void> {
    await mkdir(this.#directory, { recursive: true });
    for (const entry of await readdir(this.#root)) {
      const pid = Number(/^(\d+)-[0-9a-f]+$/.exec(entry)?.[1]);
      if (!Number.isInteger(pid) || pid === process.pid || isRunning(pid)) continue;
      await rm(join(this.#root, entry), { recursive: true, force: true });
      this.#log.info('removed downloads left by a bot process that is gone', { directory: join(this.#root, entry) });
    }
  }

  /** A new file name for a task's video (the file is not created). */
  async pathFor(taskId: string): Promise<string> {
    await this.ready();
    return join(this.#directory, `${taskId}-${randomBytes(4).toString('hex')}.video`);
  }

  /** Removes a download; a failure is logged, never thrown (the sweep at the next start catches it). */
  async remove(path: string): Promise<void> {
    try {
      await rm(path, { force: true });
    } catch (error) {
      this.#log.warn('could not remove a downloaded video', { path, error });
    }
  }
}
