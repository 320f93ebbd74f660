import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseEnv } from 'node:util';
import { z } from 'zod';
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
  /**
   * FORGET_MEMBERS_WHO_LEAVE: a member who leaves a server is forgotten there as `/voice forget-me` forgets
   * them. Asks Discord for the privileged Server Members intent, which the Developer Portal must allow.
   */
  forgetMembersWhoLeave: boolean;
  /** OPUS_CODEC: `auto` runs native libopus where @discordjs/opus built, `opusscript` its WebAssembly build regardless. */
  opusCodec: OpusCodecSetting;
}

const OPUS_CODEC_SETTINGS = ['auto', 'opusscript'] as const;
export type OpusCodecSetting = (typeof OPUS_CODEC_SETTINGS)[number];

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
const DEFAULT_TASK_POLL_INTERVAL_MS = 5_000;
const MIN_TASK_POLL_INTERVAL_MS = 100;
const DEFAULT_SHARDS_PER_MACHINE = 1;
const DEFAULT_SHARDS_PER_PROCESS = 1;

/**
 * What the README's configuration table says of a variable, and how its problems are worded: every
 * problem starts with the variable's name, and shows what was written unless that may be a secret.
 */
interface VariableDescription {
  /** The sentence of the README's table. */
  meaning: string;
  /** Only for a required variable: what to set, after "NAME is required: ". */
  required?: string;
  /** The text that stands in when the variable is unset, as it would be written. */
  default?: string;
  /** What an unset variable without a default comes to, when it comes to something (the README's default cell). */
  unset?: string;
  /** What the value must be, after the name: "NAME must be …". */
  problem?: string;
  /** A secret's value is never shown in a problem. */
  secret?: boolean;
  /** How a value that may carry a secret part (a password in a URL) is shown in a problem. */
  shown?: (text: string) => string;
}

const descriptions = z.registry<VariableDescription>();

/** Rules read the text as written, trimmed; an empty (or blank) value never reaches them: it is unset. */
type Rule<T> = z.ZodType<T, string>;

function required<T>(rule: Rule<T>, description: VariableDescription & { required: string }): Rule<T> {
  return rule.register(descriptions, description);
}

function optional<T>(rule: Rule<T>, description: Omit<VariableDescription, 'required' | 'default'>) {
  return rule.optional().register(descriptions, description);
}

function defaulted<T>(text: string, rule: Rule<T>, description: Omit<VariableDescription, 'required' | 'default' | 'unset'>) {
  return rule.prefault(text).register(descriptions, { ...description, default: text });
}

/** The value `parse` makes of the text; when it makes none, the variable's own `problem` says why. */
function parsedBy<T>(parse: (text: string) => T | undefined): Rule<T> {
  return z.string().transform((text, context) => {
    const value = parse(text);
    if (value !== undefined) return value;
    context.addIssue({ code: 'custom', input: text });
    return z.NEVER;
  });
}

/** A problem worded in full where it is found (a field of the prices file, a shard range), shown as it is. */
function worded(context: z.RefinementCtx, message: string): void {
  context.addIssue({ code: 'custom', message, params: { worded: true } });
}

const wholeNumber = (min: number, max = Number.MAX_SAFE_INTEGER): Rule<number> => z.coerce.number<string>().int().min(min).max(max);

/** `/path` under the layer prefix: one path per operation serves both layers. */
const layerPath = z.string().regex(/^\/[^\s?#]*$/);

/** `host` or `host:port`, written back as URLs write it (an IPv6 address in brackets). */
function allowedHost(text: string): string | undefined {
  const allowed = hostAndPort(text);
  if (allowed === undefined) return undefined;
  const host = allowed.host.includes(':') ? `[${allowed.host}]` : allowed.host;
  return allowed.port === undefined ? host : `${host}:${allowed.port}`;
}

function isStoreUrl(value: string): boolean {
  if (value.startsWith('sqlite://')) return value.length > 'sqlite://'.length;
  const url = urlWith(['redis:', 'rediss:'], value);
  return url !== undefined && url.hostname !== '';
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

function readPrices(file: string, context: z.RefinementCtx): PriceTable {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    worded(context, `PRICES_FILE cannot be read (${file}: ${error instanceof Error ? error.message : String(error)}).`);
    return z.NEVER;
  }
  const parsed = parsePrices(text);
  if (parsed.ok) return parsed.prices;
  for (const problem of parsed.problems) worded(context, `PRICES_FILE (${file}): ${problem}.`);
  return z.NEVER;
}

/**
 * Every variable the bot reads, in the README's order: its rule, its default and its sentence. What
 * depends on two variables at once is checked after them (problemsAcross, shardIds).
 */
const VARIABLES = {
  DISCORD_TOKEN: required(z.string(), {
    required: 'the bot token from the Discord developer portal',
    secret: true,
    meaning: "The bot's Discord token.",
  }),
  DISCORD_API_URL: optional(parsedBy(httpUrl).transform(withoutApiVersion), {
    problem: 'must be an http(s) URL such as http://127.0.0.1:8900/api',
    unset: "Discord's own API",
    meaning:
      'REST base of a Discord-compatible server, for tests and local stand-ins (e.g. `http://127.0.0.1:8900/api`; a trailing `/v10` is accepted). A server that answers the login with 404 stops the bot with a message naming this variable.',
  }),
  GATEWAY_BASE_URL: required(parsedBy(httpUrl), {
    required: 'the http(s) base of the video and voice gateway (e.g. http://127.0.0.1:8787 for `npm run emulator`)',
    problem: 'must be an http(s) URL',
    meaning: 'HTTP(S) base of the gateway, e.g. `http://127.0.0.1:8787` for the emulator.',
  }),
  GATEWAY_WS_URL: optional(
    parsedBy((text) => urlWith(['ws:', 'wss:'], text)),
    {
      problem: 'must be a ws(s) URL',
      unset: '`GATEWAY_BASE_URL` with `ws`/`wss`',
      meaning: 'WebSocket base for realtime voice.',
    },
  ),
  GATEWAY_API_KEY: optional(z.string(), {
    secret: true,
    meaning: "The operator's default gateway key for every server; a server's own key (`/config key`) wins.",
  }),
  GATEWAY_LAYER: defaulted('compat', z.enum(LAYERS), {
    problem: 'must be "compat" or "native"',
    meaning: '`compat` (`/v1`) or `native` (`/native/v1`); servers can choose their own with `/config layer`.',
  }),
  GATEWAY_VENDOR: defaulted(DEFAULT_VENDOR, z.string().regex(/^[a-z0-9][a-z0-9_-]*$/i), {
    problem: 'must be a single word such as "svc"',
    meaning: 'Vendor word in model and voice names. Capabilities follow the model family, not exact names.',
  }),
  GATEWAY_EDIT_PATH: defaulted(DEFAULT_EDIT_PATH, layerPath, {
    problem: `must be a path starting with / under the layer prefix, such as ${DEFAULT_EDIT_PATH}`,
    meaning:
      'The edit endpoint under the layer prefix (`/v1` or `/native/v1`). The contract does not show it (`docs/gateway.md`, "Edit and extension paths").',
  }),
  GATEWAY_EXTENSION_PATH: defaulted(DEFAULT_EXTENSION_PATH, layerPath, {
    problem: `must be a path starting with / under the layer prefix, such as ${DEFAULT_EXTENSION_PATH}`,
    meaning: 'The extension endpoint under the layer prefix.',
  }),
  KEY_ENCRYPTION_SECRET: optional(z.string().min(MIN_ENCRYPTION_SECRET_LENGTH), {
    secret: true,
    problem: `must be at least ${MIN_ENCRYPTION_SECRET_LENGTH} characters long (a random string, e.g. \`openssl rand -base64 32\`)`,
    meaning: `At least ${MIN_ENCRYPTION_SECRET_LENGTH} characters; the key that encrypts servers' gateway keys (AES-256-GCM) is derived from it. Without it, servers cannot store keys.`,
  }),
  KEY_ENCRYPTION_SECRET_PREVIOUS: optional(z.string(), {
    secret: true,
    meaning: 'While rotating: the old secret. Keys sealed under it still open and are sealed again under the new one.',
  }),
  STORE_URL: defaulted(DEFAULT_STORE_URL, z.string().refine(isStoreUrl), {
    problem: 'must be sqlite://<file> or redis://<host>:<port>',
    shown: (text) => text.replace(/\/\/[^@/]*@/, '//***@'),
    meaning: 'An embedded SQLite file (`sqlite://<file>`), or `redis://host:6379` for a shared store; see "Redis" for what it needs.',
  }),
  DEV_GUILD_ID: optional(z.string().regex(/^\d{17,20}$/), {
    problem: 'must be a Discord server id, 17 to 20 digits',
    meaning: 'Register commands on this server only, for instant updates while developing (else globally).',
  }),
  LOG_LEVEL: defaulted('info', z.string().toLowerCase().pipe(z.enum(LOG_LEVELS)), {
    problem: `must be one of ${LOG_LEVELS.join(', ')}`,
    meaning: '`debug`, `info`, `warn` or `error`. Logs are JSON lines on stdout; secrets are scrubbed.',
  }),
  TASK_POLL_INTERVAL_MS: defaulted(String(DEFAULT_TASK_POLL_INTERVAL_MS), wholeNumber(MIN_TASK_POLL_INTERVAL_MS), {
    problem: `must be a whole number of milliseconds, at least ${MIN_TASK_POLL_INTERVAL_MS}`,
    meaning: "First poll of a video task after this many milliseconds; later polls aim at the end the gateway's progress predicts.",
  }),
  SHARD_COUNT: defaulted('auto', z.union([z.string().toLowerCase().pipe(z.literal('auto')), wholeNumber(1, MAX_SHARD_COUNT)]), {
    problem: `must be "auto" (Discord's recommendation) or a whole number of shards from 1 to ${MAX_SHARD_COUNT}`,
    meaning: 'Shards across every process and machine; `auto` takes Discord\'s recommendation (`GET /gateway/bot`). See "Many servers".',
  }),
  SHARD_IDS: optional(
    // Checked against SHARD_COUNT once the count is known (shardIds).
    z.string().transform((text, context) => {
      if (text.toLowerCase() === AUTO_ORDINAL) return AUTO_ORDINAL;
      const checked = parseShardIds(text, Number.MAX_SAFE_INTEGER);
      if (!checked.ok) worded(context, checked.message);
      return text;
    }),
    {
      unset: 'all shards',
      meaning:
        'The shards this machine runs, as ids and ranges (`0-3`, `0,2,5`). `auto-ordinal`: the block of `SHARDS_PER_MACHINE` shards the machine\'s ordinal names (machine N runs shards N×`SHARDS_PER_MACHINE` to N×`SHARDS_PER_MACHINE` + `SHARDS_PER_MACHINE` − 1), for a Kubernetes StatefulSet (see "Kubernetes").',
    },
  ),
  SHARDS_PER_MACHINE: defaulted(String(DEFAULT_SHARDS_PER_MACHINE), wholeNumber(1, MAX_SHARD_COUNT), {
    problem: 'must be a whole number of shards per machine, at least 1',
    meaning:
      'With `SHARD_IDS=auto-ordinal`: shards each machine holds. A machine whose block passes `SHARD_COUNT` refuses to start, naming both and its ordinal.',
  }),
  // Read only with SHARD_IDS=auto-ordinal, and checked there (machineOrdinal).
  POD_INDEX: optional(z.string(), {
    meaning:
      "With `SHARD_IDS=auto-ordinal`: the machine's ordinal (a StatefulSet pod's index). Unset: the number the host name ends in (`bot-3`: 3); neither stops the start naming both.",
  }),
  SHARDS_PER_PROCESS: defaulted(String(DEFAULT_SHARDS_PER_PROCESS), wholeNumber(1, MAX_SHARD_COUNT), {
    problem: 'must be a whole number of shards per worker process, at least 1',
    meaning: 'Shards each worker process holds.',
  }),
  OPS_PORT: optional(wholeNumber(0, MAX_PORT), {
    problem: `must be a TCP port from 1 to ${MAX_PORT} (0: any free port, logged) for /healthz, /readyz and /metrics, or unset to serve none`,
    meaning:
      'Serves `GET /healthz`, `GET /readyz` and `GET /metrics` on this port (see "Health and metrics"); unset: none. `0` takes any free port (logged as `ops port listening`).',
  }),
  OPS_HOST: defaulted(DEFAULT_OPS_HOST, z.string().regex(/^[^/ ]+$/), {
    problem: 'must be an address to listen on, such as 127.0.0.1 or 0.0.0.0',
    meaning: 'The address the ops port listens on (a container needs `0.0.0.0`).',
  }),
  PRICES_FILE: optional(z.string().transform(readPrices), {
    meaning:
      'A JSON file of the prices estimates use, over the defaults (the emulator\'s video prices, $0.05 per minute of voice): `{"video": {"*": {"per_second_usd": {"480p": 0.05, "720p": 0.08, "1080p": 0.14}}}, "voice": {"*": {"per_minute_usd": 0.05}}}`. A model id in place of `*` prices that model. What it names replaces the default; what it does not name keeps it. A bad file stops the start naming the field.',
  }),
  USER_INSTALLS: defaulted('off', z.stringbool({ truthy: ['on'], falsy: ['off'] }), {
    problem: 'must be "on" or "off"',
    meaning:
      '`on` lets members install the app for themselves and use it anywhere they are (see "Members\' own installs"); `off` registers every command for server installs only, so Discord offers a user install nothing.',
  }),
  USER_INSTALL_DAILY_VIDEOS: defaulted(String(DEFAULT_USER_INSTALLS.dailyVideos), wholeNumber(0), {
    problem: 'must be a whole number of videos a member may make a day through their own install, 0 for no limit',
    meaning: 'Videos one member may make per UTC day through their own install, on `GATEWAY_API_KEY`; `0` for no limit.',
  }),
  USER_INSTALL_DAILY_USD: defaulted(String(DEFAULT_USER_INSTALLS.dailyUsd), z.coerce.number<string>().min(0), {
    problem: 'must be the dollars a member may spend a day through their own install, such as 2 or 0.5, 0 for no limit',
    meaning:
      'Dollars one member may spend per UTC day through their own install (estimates reserved as budgets reserve them); `0` for no limit.',
  }),
  DOWNLOAD_ALLOWED_HOSTS: optional(
    z
      .string()
      .transform((text) => text.split(',').flatMap((entry) => (entry.trim() === '' ? [] : [entry.trim()])))
      .pipe(z.array(parsedBy(allowedHost))),
    {
      problem:
        'must be a comma-separated list of host names or IP addresses, each with an optional port, without scheme or path, such as storage.internal,10.0.0.5:9000',
      meaning:
        "Comma-separated host names or IP addresses, each with an optional port (no scheme or path), a finished video may be downloaded from even when their address is not public, e.g. `storage.internal,10.0.0.5:9000,[fd00::5]:9000`; without a port, any port of that host. Downloads go only to http(s) addresses on the public internet or to `GATEWAY_BASE_URL`'s own host and port; a video address (or a redirect) that is loopback, private, link-local, CGNAT, multicast or otherwise not public, or another port of the gateway's host, is refused, after DNS, unless it is listed here.",
    },
  ),
  FORGET_MEMBERS_WHO_LEAVE: defaulted('off', z.stringbool({ truthy: ['on'], falsy: ['off'] }), {
    problem: 'must be "on" or "off"',
    meaning:
      '`on` forgets a member who leaves a server as `/voice forget-me` does (see "Privacy"). It needs the privileged **Server Members Intent**: turn it on in the Developer Portal (your application, Bot, Privileged Gateway Intents) first. Before it connects, the bot reads the application\'s flags (`GET /applications/@me`); when they say the intent is off it logs one line naming this variable and that setting, and exits 2 without opening the gateway, so no start (a service manager\'s included) uses one of the 1,000 session starts Discord allows a day. Flags it cannot read refuse nothing: Discord then refuses the connection (close code 4014), and the bot logs the same line and exits 2 without trying again. `off` asks for no privileged intent.',
  }),
  OPUS_CODEC: defaulted('auto', z.enum(OPUS_CODEC_SETTINGS), {
    problem: 'must be "auto" or "opusscript"',
    meaning:
      'The Opus codec of voice conversations: `auto` runs native libopus (`@discordjs/opus`, an optional dependency built at install) where it built, and opusscript (libopus in WebAssembly, about three times the CPU) where it did not; `opusscript` runs opusscript regardless. The start logs which one runs (`opus codec`).',
  }),
};

const ENVIRONMENT = z.object(VARIABLES);
type Settings = z.output<typeof ENVIRONMENT>;
const DESCRIPTIONS = new Map(Object.entries(VARIABLES).map(([name, schema]) => [name, descriptions.get(schema)]));
/** Where each variable's problems go in the list: in the README's order. */
const ORDER = new Map(Object.keys(VARIABLES).map((name, index) => [name, index]));

/** One row of the README's configuration table, as the declarations above give it. */
export interface VariableRow {
  name: string;
  required: boolean;
  /** The text that stands in when it is unset, or what unset comes to; undefined: nothing. */
  default: string | undefined;
  meaning: string;
}

export function describeVariables(): VariableRow[] {
  return [...DESCRIPTIONS].map(([name, description]) => {
    if (description === undefined) throw new Error(`${name} has no description`);
    return {
      name,
      required: description.required !== undefined,
      default: description.default === undefined ? description.unset : `\`${description.default}\``,
      meaning: description.meaning,
    };
  });
}

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

/** The bot's variables as written, trimmed; an empty assignment (as in a copied .env.example) means "not set". */
function writtenVariables(environment: Environment): Environment {
  return Object.fromEntries(
    Object.keys(VARIABLES).map((name) => {
      const value = environment[name];
      return [name, isSet(value) ? value.trim() : undefined];
    }),
  );
}

interface Problem {
  variable: string;
  message: string;
}

/** The problem an issue of the schema stands for, in the variable's own words. */
function problemOf(issue: z.core.$ZodIssue, written: Environment): Problem {
  const variable = String(issue.path[0]);
  const description = DESCRIPTIONS.get(variable);
  const text = written[variable];
  if (description?.required !== undefined && text === undefined)
    return { variable, message: `${variable} is required: ${description.required}.` };
  const problem = description?.problem ?? `is not valid: ${issue.message}`;
  if (description?.secret) return { variable, message: `${variable} ${problem}.` };
  if (issue.code === 'custom' && issue.params?.worded === true) return { variable, message: issue.message };
  // An entry of a list is shown alone; anything else as written (a number that did not parse shows as written, not as NaN).
  const entry = issue.path.length > 1 && typeof issue.input === 'string' ? issue.input : (text ?? '');
  return { variable, message: `${variable} ${problem} (got "${description?.shown ? description.shown(entry) : entry}").` };
}

/** What one variable's rule makes of its text, or undefined when the rule refuses it (a problem of its own). */
function valueOf<T>(schema: z.ZodType<T, string | undefined>, text: string | undefined): T | undefined {
  const parsed = schema.safeParse(text);
  return parsed.success ? parsed.data : undefined;
}

/** Problems of a variable written without the one it goes with. */
function problemsAcross(written: Environment): Problem[] {
  const problems: Problem[] = [];
  if (written.KEY_ENCRYPTION_SECRET_PREVIOUS !== undefined && written.KEY_ENCRYPTION_SECRET === undefined) {
    problems.push({
      variable: 'KEY_ENCRYPTION_SECRET_PREVIOUS',
      message: 'KEY_ENCRYPTION_SECRET_PREVIOUS is set without KEY_ENCRYPTION_SECRET: set the new secret too, or remove the previous one.',
    });
  }
  if (written.SHARDS_PER_MACHINE !== undefined && valueOf(VARIABLES.SHARD_IDS, written.SHARD_IDS) !== AUTO_ORDINAL) {
    problems.push({
      variable: 'SHARDS_PER_MACHINE',
      message: `SHARDS_PER_MACHINE applies only with SHARD_IDS=${AUTO_ORDINAL} (got SHARD_IDS=${written.SHARD_IDS === undefined ? 'unset' : `"${written.SHARD_IDS}"`}): set both, or neither.`,
    });
  }
  return problems;
}

/**
 * SHARD_IDS as the shard plan takes it: the list as written, or under auto-ordinal this machine's block,
 * from POD_INDEX or the host name (asked only then). Each is checked against SHARD_COUNT when that is a
 * number; with "auto" they are checked once Discord has said the count.
 */
function shardIds(written: Environment, hostName: () => string): { ids: string | MachineOrdinal | undefined; problems: Problem[] } {
  const ids = valueOf(VARIABLES.SHARD_IDS, written.SHARD_IDS);
  const count = valueOf(VARIABLES.SHARD_COUNT, written.SHARD_COUNT);
  const refused = (message: string) => ({ ids: undefined, problems: [{ variable: 'SHARD_IDS', message }] });
  if (ids !== AUTO_ORDINAL) {
    const checked = ids !== undefined && typeof count === 'number' ? parseShardIds(ids, count) : undefined;
    return checked?.ok === false ? refused(checked.message) : { ids, problems: [] };
  }
  const ordinal = machineOrdinal(written.POD_INDEX, hostName());
  if (!ordinal.ok) return refused(ordinal.message);
  const perMachine = valueOf(VARIABLES.SHARDS_PER_MACHINE, written.SHARDS_PER_MACHINE);
  if (perMachine === undefined) return { ids: undefined, problems: [] };
  const machine = { ordinal: ordinal.ordinal, perMachine, source: ordinal.source };
  const checked = typeof count === 'number' ? ordinalShards(machine, count) : undefined;
  return checked?.ok === false ? refused(checked.message) : { ids: machine, problems: [] };
}

function botConfig(settings: Settings, ids: string | MachineOrdinal | undefined): BotConfig {
  const baseUrl = settings.GATEWAY_BASE_URL;
  const derivedWsUrl = new URL(baseUrl);
  derivedWsUrl.protocol = baseUrl.protocol === 'https:' ? 'wss:' : 'ws:';
  const allowedHosts = settings.DOWNLOAD_ALLOWED_HOSTS ?? [];
  return {
    discordToken: settings.DISCORD_TOKEN,
    discordApiUrl: settings.DISCORD_API_URL,
    gatewayBaseUrl: withoutTrailingSlash(baseUrl),
    gatewayWsUrl: withoutTrailingSlash(settings.GATEWAY_WS_URL ?? derivedWsUrl),
    gatewayApiKey: settings.GATEWAY_API_KEY,
    gatewayLayer: settings.GATEWAY_LAYER,
    gatewayVendor: settings.GATEWAY_VENDOR,
    gatewayEditPath: settings.GATEWAY_EDIT_PATH,
    gatewayExtensionPath: settings.GATEWAY_EXTENSION_PATH,
    keyEncryptionSecret: settings.KEY_ENCRYPTION_SECRET,
    keyEncryptionSecretPrevious: settings.KEY_ENCRYPTION_SECRET_PREVIOUS,
    storeUrl: settings.STORE_URL,
    devGuildId: settings.DEV_GUILD_ID,
    logLevel: settings.LOG_LEVEL,
    taskPollIntervalMs: settings.TASK_POLL_INTERVAL_MS,
    downloadAllowedHosts: allowedHosts.length > 0 ? allowedHosts : undefined,
    ops: settings.OPS_PORT === undefined ? undefined : { host: settings.OPS_HOST, port: settings.OPS_PORT },
    sharding: { count: settings.SHARD_COUNT, ids, perProcess: settings.SHARDS_PER_PROCESS },
    prices: settings.PRICES_FILE ?? DEFAULT_PRICES,
    userInstalls: {
      enabled: settings.USER_INSTALLS,
      dailyVideos: settings.USER_INSTALL_DAILY_VIDEOS,
      dailyUsd: settings.USER_INSTALL_DAILY_USD,
    },
    forgetMembersWhoLeave: settings.FORGET_MEMBERS_WHO_LEAVE,
    opusCodec: settings.OPUS_CODEC,
  };
}

/**
 * Reads and checks every variable at once, so one start names every problem, in the README's order.
 * Problems name the variable and never repeat a secret's value. `hostName` is asked only for
 * SHARD_IDS=auto-ordinal.
 */
export function loadConfig(environment: Environment, hostName: () => string = hostname): ConfigResult {
  const written = writtenVariables(environment);
  const settings = ENVIRONMENT.safeParse(written, { reportInput: true });
  const sharding = shardIds(written, hostName);
  const problems = [
    ...(settings.success ? [] : settings.error.issues.map((issue) => problemOf(issue, written))),
    ...problemsAcross(written),
    ...sharding.problems,
  ].sort((a, b) => (ORDER.get(a.variable) ?? 0) - (ORDER.get(b.variable) ?? 0));
  const messages = [...new Set(problems.map((problem) => problem.message))];
  if (!settings.success || messages.length > 0) return { ok: false, problems: messages, message: messages.join('\n') };
  return { ok: true, config: botConfig(settings.data, sharding.ids) };
}
