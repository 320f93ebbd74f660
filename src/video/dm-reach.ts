import { z } from 'zod';
import { parseShape, type Collection, type Store } from '../store/index.ts';

// Whether the bot last found a member's DMs closed to it. Discord tells only when a message is sent
// (403 / 50007, or 50278 with no server in common), so the bot keeps what its last DM to the member
// met: the job card of their own install, handed off before its token ends, then tells them where to
// look for the rest (`/video status`) instead of promising a DM that will not come. A DM that goes
// through forgets it. Kept in the store, so every worker and a restart know it.

/** A member may open their DMs again without the bot hearing of it: what it learned is forgotten after this. */
const KNOWN_CLOSED_FOR_MS = 30 * 24 * 3600_000;

/** When the bot found them closed, a bare value (src/store/versioned.ts). */
function parseTime(raw: unknown): number {
  return parseShape('time', z.number(), raw);
}

export class DirectMessageReach {
  /** When the bot last found each member's DMs closed to it, by user id. */
  readonly #closed: Collection<number>;

  constructor(store: Store) {
    this.#closed = store.collection('user_dms_closed', parseTime);
  }

  async closed(userId: string, now = Date.now()): Promise<void> {
    await this.#closed.set(userId, now, KNOWN_CLOSED_FOR_MS);
  }

  async opened(userId: string): Promise<void> {
    await this.#closed.delete(userId);
  }

  async knownClosed(userId: string): Promise<boolean> {
    return (await this.#closed.get(userId)) !== undefined;
  }
}
