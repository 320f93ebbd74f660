import { randomBytes } from 'node:crypto';
import { onceUntilFailure } from '../lib/once-until-failure.ts';
import { z } from 'zod';
import { parseShape, type Collection, type Store } from '../store/index.ts';
import { endUserId } from './requests.ts';

// The spec's `user` for each member: a keyed hash of the Discord id with this installation's secret salt,
// made once and kept in the store.

const SALT_KEY = 'user-salt';
const SALT_BYTES = 32;

/** The salt, a bare value (src/store/versioned.ts). */
function parseSalt(raw: unknown): string {
  return parseShape('salt', z.string().min(SALT_BYTES), raw);
}

export class EndUserIds {
  readonly #meta: Collection<string>;
  /**
   * Every caller waits for the same read (or creation). A new salt is written only if there is none, in one
   * step for every worker sharing the store, and what is used is what the store holds: two first uses,
   * in this process or two, cannot hash the same member with two salts.
   */
  readonly #salt = onceUntilFailure(() => this.#loadSalt());

  constructor(store: Store) {
    this.#meta = store.collection('video_meta', parseSalt);
  }

  async of(discordUserId: string): Promise<string> {
    return endUserId(await this.#salt(), discordUserId);
  }

  async #loadSalt(): Promise<Buffer> {
    const { value } = await this.#meta.setIfAbsent(SALT_KEY, randomBytes(SALT_BYTES).toString('base64url'));
    return Buffer.from(value, 'base64url');
  }
}
