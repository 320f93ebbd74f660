import { AuthenticationError, GatewayApiError, GatewayError } from '../gateway/errors.ts';
import { keyFingerprint, type GatewayClientPool } from '../gateway/pool.ts';
import type { Layer } from '../gateway/spec.ts';
import { registerSecret, type Logger } from '../log.ts';
import type { Collection, Store } from '../store.ts';
import type { TaskRecord } from '../tasks/record.ts';
import type { GatewayAccess, GuildVideoPolicy, PolicyVerdict, VideoDefaults } from '../tasks/service.ts';
import { KeyCipher, UnreadableKeyError } from './key-cipher.ts';
import { HISTORY_KEPT, defaultGuildSettings, parseGuildSettings, type Feature, type GuildSettings } from './guild-settings.ts';
import { UsageLedger, dayKey, nextUtcMidnight, usd, type UsageCount } from './usage.ts';

// What each server decides: its own gateway key (sealed at rest, never shown again), layer, defaults,
// storage, who may use the bot and how much. The operator's GATEWAY_API_KEY serves servers without a key
// of their own.

export interface SettingsOptions {
  store: Store;
  clients: GatewayClientPool;
  log: Logger;
  operatorKey: string | undefined;
  defaultLayer: Layer;
  encryptionSecret: string | undefined;
  previousEncryptionSecret?: string | undefined;
}

export type SetKeyResult = { ok: true; lastFour: string; models: number } | { ok: false; message: string };

export const MESSAGES = {
  noKey: 'This server has no gateway key yet: a server admin can add one with `/config key`.',
  noSecret:
    "The bot's operator has not set KEY_ENCRYPTION_SECRET, so servers cannot store their own gateway keys safely. Ask the operator to set it, then run `/config key` again.",
  unreadable:
    "This server's stored gateway key can no longer be read (the bot's encryption secret changed, or the stored data was altered). A server admin must set it again with `/config key`.",
} as const;

export class SettingsService implements GuildVideoPolicy {
  readonly #options: SettingsOptions;
  readonly #settings: Collection<GuildSettings>;
  readonly #cipher: KeyCipher | undefined;
  readonly #usage: UsageLedger;
  /** Opened keys, so polls do not decrypt each time; dropped on every change of the server's key. */
  readonly #openKeys = new Map<string, string>();

  constructor(options: SettingsOptions) {
    this.#options = options;
    this.#settings = options.store.collection('guild_settings', parseGuildSettings);
    this.#cipher = options.encryptionSecret ? new KeyCipher(options.encryptionSecret, options.previousEncryptionSecret) : undefined;
    this.#usage = new UsageLedger(options.store);
    if (!this.#cipher) options.log.warn('KEY_ENCRYPTION_SECRET is not set: servers cannot store their own gateway keys');
  }

  get canStoreKeys(): boolean {
    return this.#cipher !== undefined;
  }

  async get(guildId: string): Promise<GuildSettings> {
    return (await this.#settings.get(guildId)) ?? defaultGuildSettings();
  }

  async #save(guildId: string, settings: GuildSettings, by: string, change: string): Promise<GuildSettings> {
    const next: GuildSettings = { ...settings, history: [{ at: Date.now(), by, change }, ...settings.history].slice(0, HISTORY_KEPT) };
    await this.#settings.set(guildId, next);
    return next;
  }

  /** Applies a change (a pure function of the settings) and records who made it and what it was. */
  async update(guildId: string, by: string, description: string, change: (settings: GuildSettings) => GuildSettings): Promise<GuildSettings> {
    return this.#save(guildId, change(await this.get(guildId)), by, description);
  }

  // ---- Keys ------------------------------------------------------------------------------------

  /** Checks the key against the gateway (`/v1/models`) and, when it works, stores it sealed. */
  async setKey(guildId: string, key: string, by: string): Promise<SetKeyResult> {
    if (!this.#cipher) {
      this.#options.log.warn('a server tried to store a gateway key without KEY_ENCRYPTION_SECRET', { guild: guildId });
      return { ok: false, message: MESSAGES.noSecret };
    }
    const trimmed = key.trim();
    if (trimmed.length < 8 || /\s/.test(trimmed)) return { ok: false, message: 'That does not look like a gateway key (no spaces, at least 8 characters).' };
    registerSecret(trimmed);
    let models: number;
    try {
      models = (await this.#options.clients.get(trimmed, 'compat').listModels()).length;
    } catch (error) {
      if (error instanceof AuthenticationError) {
        return { ok: false, message: 'The gateway refused this key (401 invalid_api_key): check that it was copied whole and is still active. Nothing was stored.' };
      }
      const requestId = error instanceof GatewayError && error.requestId ? ` (request id \`${error.requestId}\`)` : '';
      const detail = error instanceof GatewayApiError ? `the gateway answered ${error.status} ${error.code ?? ''}`.trim() : 'the gateway could not be reached';
      return { ok: false, message: `The key could not be checked: ${detail}${requestId}. Nothing was stored; try again.` };
    } finally {
      this.#options.clients.forget(trimmed);
    }
    const lastFour = trimmed.slice(-4);
    await this.update(guildId, by, `set the gateway key (…${lastFour})`, (settings) => ({
      ...settings,
      key: { sealed: this.#cipher!.seal(trimmed, guildId), lastFour, setBy: by, setAt: Date.now() },
    }));
    this.#openKeys.delete(guildId);
    return { ok: true, lastFour, models };
  }

  async clearKey(guildId: string, by: string): Promise<boolean> {
    const settings = await this.get(guildId);
    if (!settings.key) return false;
    const { key: _removed, ...rest } = settings;
    await this.#save(guildId, rest, by, `cleared the gateway key (…${settings.key.lastFour})`);
    const open = this.#openKeys.get(guildId);
    if (open) this.#options.clients.forget(open);
    this.#openKeys.delete(guildId);
    return true;
  }

  /** The server's key in the clear, or why there is none to use. */
  async #serverKey(guildId: string, settings: GuildSettings): Promise<{ key: string } | { problem: string } | undefined> {
    if (!settings.key) return undefined;
    const cached = this.#openKeys.get(guildId);
    if (cached) return { key: cached };
    if (!this.#cipher) return { problem: MESSAGES.noSecret };
    try {
      const { plaintext, reseal } = this.#cipher.open(settings.key.sealed, guildId);
      registerSecret(plaintext);
      if (reseal) {
        await this.#settings.set(guildId, { ...settings, key: { ...settings.key, sealed: this.#cipher.seal(plaintext, guildId) } });
        this.#options.log.info('re-sealed a server key under the current secret', { guild: guildId });
      }
      this.#openKeys.set(guildId, plaintext);
      return { key: plaintext };
    } catch (error) {
      if (!(error instanceof UnreadableKeyError)) throw error;
      this.#options.log.warn('a stored server key cannot be read', { guild: guildId, reason: error.reason });
      return { problem: MESSAGES.unreadable };
    }
  }

  // ---- GuildVideoPolicy ------------------------------------------------------------------------

  async resolveGatewayAccess(guildId: string): Promise<GatewayAccess> {
    const settings = await this.get(guildId);
    const layer = settings.layer ?? this.#options.defaultLayer;
    const own = await this.#serverKey(guildId, settings);
    if (own && 'problem' in own) return { ok: false, message: own.problem };
    const apiKey = own?.key ?? this.#options.operatorKey;
    if (!apiKey) return { ok: false, message: MESSAGES.noKey };
    return { ok: true, apiKey, layer, keyId: keyFingerprint(apiKey) };
  }

  async defaults(guildId: string): Promise<VideoDefaults> {
    const settings = await this.get(guildId);
    return { ...{ model: undefined, resolution: undefined, duration: undefined, aspectRatio: undefined }, ...settings.defaults, storage: settings.storage };
  }

  async checkLimits(request: { guildId: string; userId: string; activeTasksOfUser: number; now: number }): Promise<PolicyVerdict> {
    const { limits } = await this.get(request.guildId);
    if (limits.concurrentPerUser > 0 && request.activeTasksOfUser >= limits.concurrentPerUser) {
      return { ok: false, message: `You have ${request.activeTasksOfUser} videos in progress (this server allows ${limits.concurrentPerUser} at a time). Try again when one finishes.` };
    }
    if (limits.dailyPerUser === 0 && limits.dailyPerServer === 0) return { ok: true };
    const today = await this.#usage.day(request.guildId, request.now);
    const retry = `<t:${Math.floor(nextUtcMidnight(request.now) / 1000)}:R>`;
    const mine = today.users[request.userId]?.tasks ?? 0;
    if (limits.dailyPerUser > 0 && mine >= limits.dailyPerUser) {
      return { ok: false, message: `You reached this server's limit of ${limits.dailyPerUser} videos a day. Try again ${retry}.` };
    }
    const total = Object.values(today.users).reduce((sum, count) => sum + count.tasks, 0);
    if (limits.dailyPerServer > 0 && total >= limits.dailyPerServer) {
      return { ok: false, message: `This server reached its limit of ${limits.dailyPerServer} videos for today. Try again ${retry}.` };
    }
    return { ok: true };
  }

  async recordSubmission(task: TaskRecord): Promise<void> {
    await this.#usage.recordSubmission(task.guildId, task.userId, task.submittedAt ?? task.createdAt);
  }

  async releaseSubmission(task: TaskRecord): Promise<void> {
    await this.#usage.releaseSubmission(task.guildId, task.userId, task.submittedAt ?? task.createdAt);
  }

  async recordCost(task: TaskRecord): Promise<void> {
    if (task.outcome.costTicks === undefined || task.outcome.costTicks <= 0) return;
    await this.#usage.recordCost(task.guildId, task.userId, task.id, task.outcome.costTicks, task.submittedAt ?? task.createdAt);
  }

  // ---- Access and usage ------------------------------------------------------------------------

  /** Whether a member may use a feature: everyone when no roles are set, admins always. */
  async mayUse(guildId: string, feature: Feature, memberRoleIds: readonly string[], isAdmin: boolean): Promise<PolicyVerdict> {
    if (isAdmin) return { ok: true };
    const allowed = (await this.get(guildId)).roles[feature];
    if (allowed.length === 0 || allowed.some((role) => memberRoleIds.includes(role))) return { ok: true };
    return { ok: false, message: `On this server, /${feature} is for members with ${allowed.map((role) => `<@&${role}>`).join(' or ')}. Ask a server admin if you need it.` };
  }

  async usageReport(guildId: string, now = Date.now()): Promise<string> {
    const today = (await this.#usage.day(guildId, now)).users;
    const month = await this.#usage.month(guildId, now);
    const lines = (title: string, counts: Record<string, UsageCount>) => {
      const entries = Object.entries(counts).sort(([, a], [, b]) => b.costTicks - a.costTicks || b.tasks - a.tasks);
      const total = entries.reduce((sum, [, count]) => ({ tasks: sum.tasks + count.tasks, costTicks: sum.costTicks + count.costTicks }), { tasks: 0, costTicks: 0 });
      const rows = entries.slice(0, 20).map(([userId, count]) => `<@${userId}>: ${count.tasks} videos, ${usd(count.costTicks)}`);
      return [`**${title}**: ${total.tasks} videos, ${usd(total.costTicks)}`, ...(rows.length > 0 ? rows : ['nothing yet'])].join('\n');
    };
    return `${lines(`Today (${dayKey(now)} UTC)`, today)}\n\n${lines(`This month (${dayKey(now).slice(0, 7)})`, month)}`;
  }
}
