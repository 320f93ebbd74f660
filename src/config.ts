import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseEnv } from 'node:util';
import { LAYERS, DEFAULT_EDIT_PATH, DEFAULT_EXTENSION_PATH, DEFAULT_VENDOR, type Layer } from './gateway/spec.ts';
import { LOG_LEVELS, type LogLevel } from './lib/log.ts';
import { hostAndPort, httpUrl, urlWith } from './lib/url.ts';
import { MIN_ENCRYPTION_SECRET_LENGTH } from './settings/key-cipher.ts';
import { DEFAULT_PRICES, parsePrices, type PriceTable } from './settings/prices.ts';
import {
  AUTO_ORDINAL,
  MAX_SHARD_COUNT,
  machineOrdinal,
  ordinalShards,
  parseShardIds,
  type MachineOrdinal,
  type ShardingRequest,
} from './shards/plan.ts';
import type { Result } from './lib/result.ts';

export interface BotConfig {
  discordToken: string;
  /** REST base of a Discord-compatible server; undefined means discord.com. */
  discordApiUrl: string | undefined;
  gatewayBaseUrl: string;
  gatewayWsUrl: string;
  gatewayApiKey: string | undefined;
  gatewayLayer: Layer;
  gatewayVendor: string;
  /** Edit and extension endpoints under the layer prefix (`/v1` or `/native/v1`): the spec does not show them. */
  gatewayEditPath: string;
  gatewayExtensionPath: string;
  keyEncryptionSecret: string | undefined;
  /** The secret before a rotation: keys sealed under it are still read, and sealed again under the new one. */
  keyEncryptionSecretPrevious: string | undefined;
  storeUrl: string;
  devGuildId: string | undefined;
  logLevel: LogLevel;
  /** How often running video tasks are polled at first (later polls follow the reported progress). */
  taskPollIntervalMs: number;
  /**
   * Hosts (names or IP addresses, `host` for any port or `host:port` for one) a video download may reach
   * even at an address that is not public, besides GATEWAY_BASE_URL's host and port
   * (DOWNLOAD_ALLOWED_HOSTS); undefined when none are listed.
   */
  downloadAllowedHosts: string[] | undefined;
  /** OPS_PORT and OPS_HOST: where /healthz, /readyz and /metrics are served; undefined when OPS_PORT is unset (off). */
  ops: { host: string; port: number } | undefined;
  /**
   * SHARD_COUNT, SHARD_IDS and SHARDS_PER_PROCESS (with SHARD_IDS=auto-ordinal, SHARDS_PER_MACHINE and the
   * machine's ordinal), checked as far as they can be before Discord is asked.
   */
  sharding: ShardingRequest;
  /** What estimates are made with: the defaults, with what PRICES_FILE names in their place. */
  prices: PriceTable;
  /**
   * USER_INSTALLS, USER_INSTALL_DAILY_VIDEOS and USER_INSTALL_DAILY_USD: whether members may install the app
   * for themselves and use it anywhere (off: every command is registered for server installs only), and
   * what one member may make that way per UTC day on the operator's key (0: no limit).
   */
  userInstalls: UserInstallsConfig;
}

export interface UserInstallsConfig {
  enabled: boolean;
  dailyVideos: number;
  dailyUsd: number;
}

/** What a member may make per UTC day through their own install when the operator sets nothing. */
export const DEFAULT_USER_INSTALLS: UserInstallsConfig = { enabled: false, dailyVideos: 5, dailyUsd: 2 };

/** The ops port listens on loopback unless OPS_HOST opens it wider (a container needs 0.0.0.0). */
const DEFAULT_OPS_HOST = '127.0.0.1';
const MAX_PORT = 65_535;

export type Environment = Record<string, string | undefined>;

/** The configuration, or every variable that is missing or wrong (`message` lists them, one a line). */
export type ConfigResult = Result<{ config: BotConfig }, { problems: string[] }>;

export const DEFAULT_STORE_URL = 'sqlite://data/bot.sqlite';
const SNOWFLAKE = /^\d{17,20}$/;
const DEFAULT_TASK_POLL_INTERVAL_MS = 5_000;
const MIN_TASK_POLL_INTERVAL_MS = 100;
const ON_OFF = new Map([
  ['on', true],
  ['off', false],
]);

/** An empty (or blank) value counts as unset, wherever it is written. */
function isSet(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

/**
 * Variables from `.env` (if present) under those of the environment: the environment wins, except
 * with an empty value (`DISCORD_TOKEN= npm start`), which counts as unset and leaves the file's value.
 */
export function readEnvironment(envFile = '.env', environment: Environment = process.env): Environment {
  const fromFile = existsSync(envFile) ? parseEnv(readFileSync(envFile, 'utf8')) : {};
  const fromEnvironment = Object.fromEntries(Object.entries(environment).filter(([, value]) => isSet(value)));
  return { ...fromFile, ...fromEnvironment };
}

function withoutTrailingSlash(url: URL): string {
  return url.toString().replace(/\/+$/, '');
}

/**
 * discord.js adds the API version itself: a base written with one, as Discord's documentation shows
 * (`.../api/v10`), would make every request go to `.../v10/v10/...` and answer 404.
 */
function withoutApiVersion(url: URL): string {
  return withoutTrailingSlash(url).replace(/\/v\d+$/, '');
}

function isStoreUrl(value: string): boolean {
  if (value.startsWith('sqlite://')) return value.length > 'sqlite://'.length;
  const url = urlWith(['redis:', 'rediss:'], value);
  return url !== undefined && url.hostname !== '';
}

/**
 * Reads and checks every variable at once, so one start names every problem. Messages name the
 * variable and never repeat a secret's value. `hostName` is asked only for SHARD_IDS=auto-ordinal.
 */
export function loadConfig(environment: Environment, hostName: () => string = hostname): ConfigResult {
  const problems: string[] = [];
  // An empty assignment (as in a copied .env.example) means "not set".
  const read = (name: string): string | undefined => {
    const value = environment[name];
    return isSet(value) ? value.trim() : undefined;
  };

  const discordToken = read('DISCORD_TOKEN');
  if (!discordToken) problems.push('DISCORD_TOKEN is required: the bot token from the Discord developer portal.');

  const discordApiUrlText = read('DISCORD_API_URL');
  const discordApiUrl = discordApiUrlText ? httpUrl(discordApiUrlText) : undefined;
  if (discordApiUrlText && !discordApiUrl) {
    problems.push(`DISCORD_API_URL must be an http(s) URL such as http://127.0.0.1:8900/api (got "${discordApiUrlText}").`);
  }

  const gatewayBaseUrlText = read('GATEWAY_BASE_URL');
  const gatewayBaseUrl = gatewayBaseUrlText ? httpUrl(gatewayBaseUrlText) : undefined;
  if (!gatewayBaseUrlText) {
    problems.push(
      'GATEWAY_BASE_URL is required: the http(s) base of the video and voice gateway (e.g. http://127.0.0.1:8787 for `npm run emulator`).',
    );
  } else if (!gatewayBaseUrl) {
    problems.push(`GATEWAY_BASE_URL must be an http(s) URL (got "${gatewayBaseUrlText}").`);
  }

  const gatewayWsUrlText = read('GATEWAY_WS_URL');
  let gatewayWsUrl = gatewayWsUrlText ? urlWith(['ws:', 'wss:'], gatewayWsUrlText) : undefined;
  if (gatewayWsUrlText && !gatewayWsUrl) {
    problems.push(`GATEWAY_WS_URL must be a ws(s) URL (got "${gatewayWsUrlText}").`);
  }
  if (!gatewayWsUrlText && gatewayBaseUrl) {
    gatewayWsUrl = new URL(gatewayBaseUrl);
    gatewayWsUrl.protocol = gatewayBaseUrl.protocol === 'https:' ? 'wss:' : 'ws:';
  }

  const layerText = read('GATEWAY_LAYER') ?? 'compat';
  const gatewayLayer = LAYERS.find((layer) => layer === layerText);
  if (!gatewayLayer) problems.push(`GATEWAY_LAYER must be "compat" or "native" (got "${layerText}").`);

  const gatewayVendor = read('GATEWAY_VENDOR') ?? DEFAULT_VENDOR;
  if (!/^[a-z0-9][a-z0-9_-]*$/i.test(gatewayVendor)) {
    problems.push(`GATEWAY_VENDOR must be a single word such as "svc" (got "${gatewayVendor}").`);
  }

  // One path per operation serves both layers, so each is written relative to the layer prefix.
  const endpointPath = (name: string, fallback: string): string => {
    const value = read(name) ?? fallback;
    if (!/^\/[^\s?#]*$/.test(value)) {
      problems.push(`${name} must be a path starting with / under the layer prefix, such as ${fallback} (got "${value}").`);
    }
    return value;
  };
  const gatewayEditPath = endpointPath('GATEWAY_EDIT_PATH', DEFAULT_EDIT_PATH);
  const gatewayExtensionPath = endpointPath('GATEWAY_EXTENSION_PATH', DEFAULT_EXTENSION_PATH);

  const keyEncryptionSecret = read('KEY_ENCRYPTION_SECRET');
  if (keyEncryptionSecret && keyEncryptionSecret.length < MIN_ENCRYPTION_SECRET_LENGTH) {
    problems.push(
      `KEY_ENCRYPTION_SECRET must be at least ${MIN_ENCRYPTION_SECRET_LENGTH} characters long (a random string, e.g. \`openssl rand -base64 32\`).`,
    );
  }

  const keyEncryptionSecretPrevious = read('KEY_ENCRYPTION_SECRET_PREVIOUS');
  if (keyEncryptionSecretPrevious && !keyEncryptionSecret) {
    problems.push(
      'KEY_ENCRYPTION_SECRET_PREVIOUS is set without KEY_ENCRYPTION_SECRET: set the new secret too, or remove the previous one.',
    );
  }

  const storeUrl = read('STORE_URL') ?? DEFAULT_STORE_URL;
  if (!isStoreUrl(storeUrl)) {
    problems.push(`STORE_URL must be sqlite://<file> or redis://<host>:<port> (got "${storeUrl.replace(/\/\/[^@/]*@/, '//***@')}").`);
  }

  const devGuildId = read('DEV_GUILD_ID');
  if (devGuildId && !SNOWFLAKE.test(devGuildId)) {
    problems.push(`DEV_GUILD_ID must be a Discord server id (17 to 20 digits; got "${devGuildId}").`);
  }

  const logLevelText = read('LOG_LEVEL') ?? 'info';
  const logLevel = LOG_LEVELS.find((level) => level === logLevelText.toLowerCase());
  if (!logLevel) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevelText}").`);

  const pollText = read('TASK_POLL_INTERVAL_MS');
  const taskPollIntervalMs = pollText === undefined ? DEFAULT_TASK_POLL_INTERVAL_MS : Number(pollText);
  if (!Number.isInteger(taskPollIntervalMs) || taskPollIntervalMs < MIN_TASK_POLL_INTERVAL_MS) {
    problems.push(
      `TASK_POLL_INTERVAL_MS must be a whole number of milliseconds, at least ${MIN_TASK_POLL_INTERVAL_MS} (got "${pollText}").`,
    );
  }

  const allowedHostsText = read('DOWNLOAD_ALLOWED_HOSTS');
  const downloadAllowedHosts: string[] = [];
  for (const entry of (allowedHostsText ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')) {
    const allowed = hostAndPort(entry);
    if (allowed === undefined) {
      problems.push(
        `DOWNLOAD_ALLOWED_HOSTS must be a comma-separated list of host names or IP addresses, each with an optional port, without scheme or path, such as storage.internal,10.0.0.5:9000 (got "${entry}").`,
      );
    } else {
      const host = allowed.host.includes(':') ? `[${allowed.host}]` : allowed.host;
      downloadAllowedHosts.push(allowed.port === undefined ? host : `${host}:${allowed.port}`);
    }
  }

  const opsPortText = read('OPS_PORT');
  const opsPort = opsPortText === undefined ? undefined : Number(opsPortText);
  if (opsPort !== undefined && (!Number.isInteger(opsPort) || opsPort < 0 || opsPort > MAX_PORT)) {
    problems.push(
      `OPS_PORT must be a TCP port from 1 to ${MAX_PORT} (0: any free port, logged) for /healthz, /readyz and /metrics, or unset to serve none (got "${opsPortText}").`,
    );
  }
  const opsHost = read('OPS_HOST') ?? DEFAULT_OPS_HOST;
  if (opsHost.includes('/') || opsHost.includes(' '))
    problems.push(`OPS_HOST must be an address to listen on, such as 127.0.0.1 or 0.0.0.0 (got "${opsHost}").`);

  const shardCountText = read('SHARD_COUNT') ?? 'auto';
  const shardCount = shardCountText.toLowerCase() === 'auto' ? 'auto' : Number(shardCountText);
  if (shardCount !== 'auto' && (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > MAX_SHARD_COUNT)) {
    problems.push(
      `SHARD_COUNT must be "auto" (Discord's recommendation) or a whole number of shards from 1 to ${MAX_SHARD_COUNT} (got "${shardCountText}").`,
    );
  }
  // With "auto" the shards are checked against the count once Discord has said it.
  const knownCount =
    typeof shardCount === 'number' && Number.isInteger(shardCount) && shardCount >= 1 ? shardCount : Number.MAX_SAFE_INTEGER;
  const shardIdsText = read('SHARD_IDS');
  const perMachineText = read('SHARDS_PER_MACHINE');
  let shardIds: string | MachineOrdinal | undefined = shardIdsText;
  if (shardIdsText?.toLowerCase() === AUTO_ORDINAL) {
    const perMachine = perMachineText === undefined ? 1 : Number(perMachineText);
    const perMachineValid = Number.isInteger(perMachine) && perMachine >= 1 && perMachine <= MAX_SHARD_COUNT;
    if (!perMachineValid)
      problems.push(`SHARDS_PER_MACHINE must be a whole number of shards per machine, at least 1 (got "${perMachineText}").`);
    const ordinal = machineOrdinal(read('POD_INDEX'), hostName());
    if (!ordinal.ok) problems.push(ordinal.message);
    else if (perMachineValid) {
      shardIds = { ordinal: ordinal.ordinal, perMachine, source: ordinal.source };
      const checked = ordinalShards(shardIds, knownCount);
      if (!checked.ok) problems.push(checked.message);
    }
  } else {
    if (shardIdsText !== undefined) {
      const checked = parseShardIds(shardIdsText, knownCount);
      if (!checked.ok) problems.push(checked.message);
    }
    if (perMachineText !== undefined) {
      problems.push(
        `SHARDS_PER_MACHINE applies only with SHARD_IDS=${AUTO_ORDINAL} (got SHARD_IDS=${shardIdsText === undefined ? 'unset' : `"${shardIdsText}"`}): set both, or neither.`,
      );
    }
  }
  const perProcessText = read('SHARDS_PER_PROCESS');
  const shardsPerProcess = perProcessText === undefined ? 1 : Number(perProcessText);
  if (!Number.isInteger(shardsPerProcess) || shardsPerProcess < 1 || shardsPerProcess > MAX_SHARD_COUNT) {
    problems.push(`SHARDS_PER_PROCESS must be a whole number of shards per worker process, at least 1 (got "${perProcessText}").`);
  }

  const pricesFile = read('PRICES_FILE');
  let prices = DEFAULT_PRICES;
  if (pricesFile !== undefined) {
    let text: string | undefined;
    try {
      text = readFileSync(pricesFile, 'utf8');
    } catch (error) {
      problems.push(`PRICES_FILE cannot be read (${pricesFile}: ${error instanceof Error ? error.message : String(error)}).`);
    }
    const parsed = text === undefined ? undefined : parsePrices(text);
    if (parsed?.ok) prices = parsed.prices;
    else if (parsed) problems.push(...parsed.problems.map((problem) => `PRICES_FILE (${pricesFile}): ${problem}.`));
  }

  const userInstallsText = read('USER_INSTALLS') ?? 'off';
  const userInstallsEnabled = ON_OFF.get(userInstallsText.toLowerCase());
  if (userInstallsEnabled === undefined) problems.push(`USER_INSTALLS must be "on" or "off" (got "${userInstallsText}").`);
  const dailyVideosText = read('USER_INSTALL_DAILY_VIDEOS');
  const dailyVideos = dailyVideosText === undefined ? DEFAULT_USER_INSTALLS.dailyVideos : Number(dailyVideosText);
  if (!Number.isInteger(dailyVideos) || dailyVideos < 0) {
    problems.push(
      `USER_INSTALL_DAILY_VIDEOS must be a whole number of videos a member may make a day through their own install, 0 for no limit (got "${dailyVideosText}").`,
    );
  }
  const dailyUsdText = read('USER_INSTALL_DAILY_USD');
  const dailyUsd = dailyUsdText === undefined ? DEFAULT_USER_INSTALLS.dailyUsd : Number(dailyUsdText);
  if (!Number.isFinite(dailyUsd) || dailyUsd < 0) {
    problems.push(
      `USER_INSTALL_DAILY_USD must be the dollars a member may spend a day through their own install, such as 2 or 0.5, 0 for no limit (got "${dailyUsdText}").`,
    );
  }

  if (problems.length > 0 || !discordToken || !gatewayBaseUrl || !gatewayWsUrl || !gatewayLayer || !logLevel) {
    return { ok: false, problems, message: problems.join('\n') };
  }
  return {
    ok: true,
    config: {
      discordToken,
      discordApiUrl: discordApiUrl ? withoutApiVersion(discordApiUrl) : undefined,
      gatewayBaseUrl: withoutTrailingSlash(gatewayBaseUrl),
      gatewayWsUrl: withoutTrailingSlash(gatewayWsUrl),
      gatewayApiKey: read('GATEWAY_API_KEY'),
      gatewayLayer,
      gatewayVendor,
      gatewayEditPath,
      gatewayExtensionPath,
      keyEncryptionSecret,
      keyEncryptionSecretPrevious,
      storeUrl,
      devGuildId,
      logLevel,
      taskPollIntervalMs,
      downloadAllowedHosts: downloadAllowedHosts.length > 0 ? downloadAllowedHosts : undefined,
      ops: opsPort === undefined ? undefined : { host: opsHost, port: opsPort },
      sharding: { count: shardCount, ids: shardIds, perProcess: shardsPerProcess },
      prices,
      userInstalls: { enabled: userInstallsEnabled ?? false, dailyVideos, dailyUsd },
    },
  };
}
