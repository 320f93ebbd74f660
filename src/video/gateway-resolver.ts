import type { GatewayClient } from '../gateway/client.ts';
import type { GatewayClientPool } from '../gateway/pool.ts';
import type { Logger } from '../lib/log.ts';
import type { GatewayAccessResolver } from '../ports/gateway-access.ts';
import type { TaskRecord } from './record.ts';
import type { Notice } from '../wording/notice.ts';

export interface GatewayResolver {
  /** The client to follow this task with: on the layer it was submitted on, with its server's current key. */
  clientFor(task: TaskRecord): Promise<GatewayClient>;
}

/** The task's server has no key the bot can use any more (cleared, or unreadable); `notice` says why, for members. */
export class NoGatewayAccessError extends Error {
  readonly notice: Notice;
  constructor(guildId: string, told: Notice) {
    super(`server ${guildId} has no usable gateway key`);
    this.name = 'NoGatewayAccessError';
    this.notice = told;
  }
}

/**
 * Follows a task on the layer it was submitted on, with its server's current key. Not the key that
 * submitted it: after a rotation the new key still gets running tasks delivered, and a key an admin
 * removed (often because it leaked or was revoked) is not kept in task records or used again.
 */
export class PolicyGatewayResolver implements GatewayResolver {
  readonly #policy: GatewayAccessResolver;
  readonly #clients: GatewayClientPool;
  readonly #log: Logger;

  constructor(policy: GatewayAccessResolver, clients: GatewayClientPool, log: Logger) {
    this.#policy = policy;
    this.#clients = clients;
    this.#log = log;
  }

  async clientFor(task: TaskRecord): Promise<GatewayClient> {
    // Why not is said on the task's card.
    const access = await this.#policy.resolveGatewayAccess(task.guildId);
    if (!access.ok) throw new NoGatewayAccessError(task.guildId, access.notice);
    if (access.keyId !== task.keyId) {
      // The admin replaced the key meanwhile: the new one follows the task.
      this.#log.debug('following a task with another key than the one that submitted it', { task: task.id });
    }
    return this.#clients.get(access.apiKey, task.layer);
  }
}
