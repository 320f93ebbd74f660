import KeyvRedis, { createClient, type RedisClientType } from '@keyv/redis';
import type { Logger } from '../lib/log.ts';
import { redactUrl, type AtomicAccess, type Backend } from './backend.ts';
import { checkRedisSettings } from './redis-settings.ts';
import { StoreUnavailableError, withinDeadline } from './interface.ts';

// The store on Redis, shared by every worker process.

/** How long the start waits for the store to accept a connection, in calls' deadlines. */
const CONNECT_DEADLINES = 3;
/** Commands node-redis keeps for a lost connection; beyond it new ones fail at once instead of piling up. */
const REDIS_QUEUE_MAX = 10_000;

/** Sets KEYS[1] to ARGV[2] (with ARGV[3] ms to live, if given) only while it holds ARGV[1]; 1 if it did. */
const REDIS_COMPARE_AND_SET = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1`;

/**
 * SET NX for a record that is not there, a script (atomic on the server) for one that is, on the adapter's
 * own key names (namespace, separator, Keyv's key) and with its ttl.
 */
function redisAtomic(client: RedisClientType, adapter: KeyvRedis<unknown>): AtomicAccess {
  const nativeKey = (key: string): string => adapter.createKeyPrefix(key, adapter.namespace);
  return {
    async read(key) {
      return (await client.get(nativeKey(key))) ?? undefined;
    },
    async replace(key, expected, text, ttlMs) {
      if (expected === undefined) {
        const expiration = ttlMs === undefined ? {} : { expiration: { type: 'PX', value: ttlMs } as const };
        return (await client.set(nativeKey(key), text, { condition: 'NX', ...expiration })) !== null;
      }
      const ttl = ttlMs === undefined ? [] : [String(ttlMs)];
      return (await client.eval(REDIS_COMPARE_AND_SET, { keys: [nativeKey(key)], arguments: [expected, text, ...ttl] })) === 1;
    },
  };
}

/** The EventEmitter methods that subscribe a listener. */
const SUBSCRIBE_METHODS: ReadonlySet<PropertyKey> = new Set(['on', 'addListener', 'once', 'prependListener', 'prependOnceListener']);

/**
 * The client as a collection's adapter sees it: every command, none of its events. KeyvRedis subscribes four
 * forwarders (error, connect, disconnect, reconnecting) to the client it is given, in its constructor and again
 * after each reconnect it makes itself, and never removes them: one adapter per collection on the one client
 * put 14 sets on it, and every Redis start printed four MaxListenersExceededWarning lines. The store listens
 * to the client once, in openRedis; nothing listens to an adapter's connection events, and an adapter's own
 * command errors still reach its Keyv.
 */
function withoutSubscriptions(client: RedisClientType): RedisClientType {
  return new Proxy(client, {
    get(target, property, receiver: unknown): unknown {
      if (SUBSCRIBE_METHODS.has(property)) return () => receiver;
      const value: unknown = Reflect.get(target, property, target);
      // The client's methods run on the client itself (its queue, its state), not on this view.
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
}

export async function openRedis(url: string, log: Logger, deadlineMs: number): Promise<Backend> {
  const client: RedisClientType = createClient({ url, commandsQueueMaxLength: REDIS_QUEUE_MAX, socket: { connectTimeout: deadlineMs } });
  client.on('error', (error: unknown) => log.error('redis connection error', { error }));
  const connectDeadlineMs = CONNECT_DEADLINES * deadlineMs;
  try {
    await withinDeadline(client.connect(), connectDeadlineMs, 'connect');
  } catch (error) {
    client.destroy();
    throw new StoreUnavailableError(
      `could not connect to the store at STORE_URL ${redactUrl(url)} within ${connectDeadlineMs / 1000} s`,
      error,
    );
  }
  // One round trip on a Redis that just answered the connect; at worst one deadline, and never a failure.
  await checkRedisSettings(client, log, deadlineMs);
  return {
    kind: 'redis',
    // Errors are thrown, not swallowed: a read that fails must never look like "no record".
    adapterFor(collection) {
      const adapter = new KeyvRedis(withoutSubscriptions(client), { namespace: collection, keyPrefixSeparator: ':', throwOnErrors: true });
      return { adapter, atomic: redisAtomic(client, adapter) };
    },
    async close() {
      // A graceful close waits for queued commands, which a lost server never answers.
      await withinDeadline(client.close(), deadlineMs, 'close').catch(() => client.destroy());
    },
  };
}
