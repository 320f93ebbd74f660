import { ApplicationFlags, Client, GatewayIntentBits, Options, REST, Routes } from 'discord.js';
import { readNumber, readRecord, readString } from '../lib/json.ts';
import { SharedIdentifyThrottler, type ClaimIdentifyBucket } from './identify-throttle.ts';

/**
 * Only the intents the bot needs, none privileged: GUILDS (servers, channels, roles, interactions)
 * and GUILD_VOICE_STATES (who is in which voice channel, and the voice connection handshake).
 */
const BOT_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates];
/**
 * GUILD_MEMBERS, privileged: members leaving (GUILD_MEMBER_REMOVE), asked for only when the operator turned
 * FORGET_MEMBERS_WHO_LEAVE on. Discord closes a connection asking for a privileged intent the Developer
 * Portal does not allow (4014), so it is never asked for by default.
 */
const MEMBERS_INTENT = GatewayIntentBits.GuildMembers;
/**
 * The application flags that say the Developer Portal allows Server Members: GATEWAY_GUILD_MEMBERS for an
 * application verified in 100 servers or more, GATEWAY_GUILD_MEMBERS_LIMITED for one in fewer.
 */
const MEMBERS_INTENT_FLAGS = ApplicationFlags.GatewayGuildMembers | ApplicationFlags.GatewayGuildMembersLimited;
/** Every REST call to Discord answers within this long or fails (discord.js's default is 15 s). */
const REST_TIMEOUT_MS = 15_000;

/** The shards a client holds, out of how many in all (discord.js's own sharding runs them). */
export interface ClientShards {
  ids: number[];
  count: number;
}

export interface ClientOptions {
  shards?: ClientShards;
  /**
   * How a shard claims its identify window from every process of the bot (the shared store). Without it
   * discord.js spaces identifies within this process only.
   */
  claimIdentify?: ClaimIdentifyBucket;
  /** Ask for the privileged Server Members intent (members leaving); default false. */
  membersIntent?: boolean;
}

export function createDiscordClient(apiUrl: string | undefined, options: ClientOptions = {}): Client {
  const { shards, claimIdentify, membersIntent = false } = options;
  return new Client({
    intents: membersIntent ? [...BOT_INTENTS, MEMBERS_INTENT] : BOT_INTENTS,
    rest: { timeout: REST_TIMEOUT_MS, ...(apiUrl ? { api: apiUrl } : {}) },
    ...(shards ? { shards: shards.ids, shardCount: shards.count } : {}),
    ...(claimIdentify
      ? {
          ws: {
            buildIdentifyThrottler: async (manager) => {
              const information = await manager.fetchGatewayInformation();
              return new SharedIdentifyThrottler(information.session_start_limit.max_concurrency, claimIdentify);
            },
          },
        }
      : {}),
    // The bot reads no message history: keep the caches small.
    makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
  });
}

/** Discord's REST API without a gateway connection (the sharding supervisor's lookups and registration). */
export function createDiscordRest(apiUrl: string | undefined, token: string): REST {
  return new REST({ timeout: REST_TIMEOUT_MS, ...(apiUrl ? { api: apiUrl } : {}) }).setToken(token);
}

export interface GatewayBotInfo {
  /** Discord's recommended shard count. */
  shards: number;
  /** How many shards may identify at once (one per rate-limit bucket every 5 s). */
  maxConcurrency: number;
}

/** GET /gateway/bot: the recommended shard count and the identify concurrency. */
export async function fetchGatewayBot(rest: REST): Promise<GatewayBotInfo> {
  const answer: unknown = await rest.get(Routes.gatewayBot());
  const shards = readNumber(answer, 'shards');
  const maxConcurrency = readNumber(readRecord(answer, 'session_start_limit'), 'max_concurrency') ?? 1;
  if (shards === undefined || !Number.isInteger(shards) || shards < 1)
    throw new Error('Discord answered GET /gateway/bot without a usable shard count');
  return { shards, maxConcurrency: Number.isInteger(maxConcurrency) && maxConcurrency >= 1 ? maxConcurrency : 1 };
}

/**
 * GET /applications/@me, before the gateway is opened: whether the application's flags allow the Server
 * Members intent; undefined when the answer carries no flags. Rejects as the request does.
 */
export async function membersIntentAllowed(rest: REST): Promise<boolean | undefined> {
  const flags = readNumber(await rest.get(Routes.currentApplication()), 'flags');
  return flags === undefined || !Number.isInteger(flags) ? undefined : (flags & MEMBERS_INTENT_FLAGS) !== 0;
}

/** GET /applications/@me: the application whose commands the bot registers. */
export async function fetchApplicationId(rest: REST): Promise<string> {
  const id = readString(await rest.get(Routes.currentApplication()), 'id');
  if (!id) throw new Error('Discord answered GET /applications/@me without an id');
  return id;
}
