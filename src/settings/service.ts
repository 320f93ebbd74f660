import { isDeepStrictEqual } from 'node:util';
import { AuthenticationError, GatewayError, MalformedResponseError } from '../gateway/errors.ts';
import { notice, refuse, type Notice, type Outcome } from '../wording/notice.ts';
import { keyFingerprint, type GatewayClientPool } from '../gateway/pool.ts';
import type { Layer } from '../gateway/spec.ts';
import { registerSecret, type Logger } from '../lib/log.ts';
import { onceUntilFailure } from '../lib/once-until-failure.ts';
import type { Collection, Store } from '../store/index.ts';
import type { Locale, MessageKey } from '../i18n/index.ts';
import { isUserInstallScope } from '../ports/user-install.ts';
import type { UserInstallLimits } from './user-installs.ts';
import type { GatewayCredentials } from '../gateway/types.ts';
import type {
  GuildVideoPolicy,
  LimitQuery,
  MemberCosts,
  MemberDayCost,
  MemberTask,
  SpendReservation,
  TaskCost,
  VideoEstimateRequest,
} from '../ports/guild-policy.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import type { VideoDefaults } from '../ports/video-defaults.ts';
import type { VoiceSettings, VoiceSettingsSource } from '../ports/voice-settings.ts';
import { checkAccess, type AccessVerdict } from './access.ts';
import {
  HISTORY_KEPT,
  defaultGuildSettings,
  parseGuildSettings,
  type Feature,
  type GuildSettings,
  type ServerRules,
  type StoredKey,
} from './guild-settings.ts';
import { blockedWordIn, compileBlockedWords, type BlockedWords } from './blocked-words.ts';
import { ModerationLog } from './moderation-log.ts';
import { memberRefusal, type RulesVerdict } from './rules.ts';
import { KeyCipher, MIN_ENCRYPTION_SECRET_LENGTH, UnreadableKeyError, type SealedKey } from './key-cipher.ts';
import { discordRelativeTime, type LimitVerdict } from './limits.ts';
import type { PriceTable } from './prices.ts';
import { Spending, type SpendingOptions } from './spending.ts';
import { memberUsage } from './usage.ts';
import { usdToUsdTicks } from './budgets.ts';
import {
  applyVoiceSettingsChange,
  defaultVoiceSettings,
  describeVoiceSettingsChange,
  parseStoredVoiceSettings,
  type StoredVoiceSettings,
  type VoiceSettingsChange,
} from './voice-settings.ts';

// What each server decides: its own gateway key (sealed at rest, never shown again), layer, defaults,
// storage, who may use the bot and how much, and how its voice conversations behave. The operator's GATEWAY_API_KEY serves servers without a key
// of their own.

export interface SettingsOptions {
  store: Store;
  clients: GatewayClientPool;
  log: Logger;
  /** GATEWAY_API_KEY: the operator's default for servers without a key of their own. */
  operatorKey: string | undefined;
  /** GATEWAY_LAYER: the layer of servers that did not choose one. */
  defaultLayer: Layer;
  /** GATEWAY_VENDOR: whose realtime models the voice settings default to. */
  gatewayVendor: string;
  /** KEY_ENCRYPTION_SECRET: without it servers cannot store keys. */
  encryptionSecret: string | undefined;
  /** KEY_ENCRYPTION_SECRET_PREVIOUS: during a rotation, keys sealed under it are read and sealed again. */
  previousEncryptionSecret?: string | undefined;
  /** What estimates are made with (PRICES_FILE over the defaults). */
  prices: PriceTable;
  /** Posts a budget alert in a server's alert channel; default none. */
  postAlert?: SpendingOptions['postAlert'];
  metrics?: Pick<BotMetrics, 'spend'>;
  /** USER_INSTALL_DAILY_VIDEOS and USER_INSTALL_DAILY_USD: what a member makes a day through their own install; default no limit. */
  userInstallLimits?: UserInstallLimits;
  /**
   * Posts a message of a server's moderation log (`/config rules log_channel`), pinging nobody; default
   * none (nothing is logged).
   */
  postLog?: (channelId: string, content: string) => Promise<unknown>;
  /** A server's language, which its moderation log is written in; default English. */
  serverLocale?: (guildId: string) => Locale;
}

/** What `/config show` tells beyond the stored settings, as data its answer words. */
export interface ServerFacts {
  /** The server can use a gateway key (its own or the operator's). */
  hasKey: boolean;
  canStoreKeys: boolean;
  /** Which key serves the server, and why. */
  keyInUse: Notice;
  defaultLayer: Layer;
  /** What estimates are made with. */
  prices: PriceTable;
}

/** `models`: how many models the key may use, when the gateway's model list could be read. */
export type SetKeyResult = Outcome<{ lastFour: string; models: number | undefined }>;

export type GatewayAccessProblem = 'no-key' | 'undecryptable' | 'no-secret';

/** The port's GatewayAccess, with where the key came from or why there is none. */
export type SettingsGatewayAccess = Outcome<GatewayCredentials & { source: 'server' | 'operator' }, { reason: GatewayAccessProblem }>;

/** What the key's problems are called in the catalogs (`config.key.<name>`). */
export type KeyMessage = 'noKey' | 'noSecret' | 'secretRemoved' | 'unreadable' | 'notAKey';

const KEY_MESSAGE_KEYS = {
  noKey: 'config.key.no-key',
  /** To the admin who wants to store a key: exactly what the operator must do. */
  noSecret: 'config.key.no-secret',
  /** A key was stored, but the secret that opens it is gone. */
  secretRemoved: 'config.key.secret-removed',
  unreadable: 'config.key.unreadable',
  notAKey: 'config.key.not-a-key',
} as const satisfies Record<KeyMessage, MessageKey>;

/** A key's problem, as a notice. */
export function keyNotice(which: KeyMessage): Notice {
  return notice(KEY_MESSAGE_KEYS[which], { minLength: MIN_ENCRYPTION_SECRET_LENGTH });
}

const MIN_KEY_LENGTH = 8;

/** `next`, with the change that made it from `current` recorded first in the history (the last HISTORY_KEPT are kept). */
function withHistory(next: GuildSettings, current: GuildSettings, by: string, change: string): GuildSettings {
  return { ...next, history: [{ at: Date.now(), by, change }, ...current.history].slice(0, HISTORY_KEPT) };
}

type ServerKey = Outcome<{ key: string }, { reason: 'undecryptable' | 'no-secret' }>;

/** A stored key that cannot be opened. */
function cannotOpen(): ServerKey {
  return { ok: false, reason: 'undecryptable', notice: keyNotice('unreadable') };
}

/** Servers whose compiled blocked words are kept (a few KB each); past it the oldest is compiled again when needed. */
const MAX_COMPILED_RULE_SETS = 1_000;

export class SettingsService implements GuildVideoPolicy, MemberCosts, VoiceSettingsSource {
  readonly #options: SettingsOptions;
  /** Each server's blocked words compiled, with the rule set they were compiled from. */
  readonly #compiledRules = new Map<string, { signature: string; words: BlockedWords }>();
  readonly #settings: Collection<GuildSettings>;
  /**
   * Where versions before 2026-11-27 kept a server's voice settings, one record per server: folded into
   * the server's settings once (#foldOlderVoiceSettings), then deleted.
   */
  readonly #olderVoiceSettings: Collection<StoredVoiceSettings>;
  readonly #olderVoiceSettingsFolded = onceUntilFailure(() => this.#foldOlderVoiceSettings());
  readonly #voiceDefaults: VoiceSettings;
  readonly #cipher: KeyCipher | undefined;
  /** What each server's key spends and may spend; the voice part meters through it. */
  readonly spending: Spending;
  /** Each server's moderation log: its /config changes, and what the other parts report (jobs, refusals, voice). */
  readonly moderationLog: ModerationLog;
  /**
   * Opened keys, so polls do not decrypt each time. Keyed by the sealed record's iv: a new key (from this
   * process or another one sharing the store) has a new iv, so a stale entry is never used.
   */
  readonly #openKeys = new Map<string, { iv: string; key: string }>();

  constructor(options: SettingsOptions) {
    this.#options = options;
    this.#settings = options.store.collection('guild_settings', parseGuildSettings);
    this.#olderVoiceSettings = options.store.collection('voice_settings', parseStoredVoiceSettings);
    this.#voiceDefaults = defaultVoiceSettings(options.gatewayVendor);
    this.#cipher = options.encryptionSecret ? new KeyCipher(options.encryptionSecret, options.previousEncryptionSecret) : undefined;
    this.spending = new Spending({
      store: options.store,
      log: options.log,
      prices: options.prices,
      settings: (guildId) => this.get(guildId),
      ...(options.postAlert ? { postAlert: options.postAlert } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.userInstallLimits ? { userInstallLimits: options.userInstallLimits } : {}),
    });
    const postLog = options.postLog;
    this.moderationLog = new ModerationLog({
      // Without a way to post, no server has a log to keep.
      logChannel: async (guildId) => (postLog ? (await this.rules(guildId)).logChannelId : undefined),
      post: (channelId, content) => (postLog ? postLog(channelId, content) : Promise.resolve()),
      ...(options.serverLocale ? { serverLocale: options.serverLocale } : {}),
      log: options.log.child({ part: 'settings/moderation-log' }),
    });
    if (!this.#cipher) options.log.warn('KEY_ENCRYPTION_SECRET is not set: servers cannot store their own gateway keys');
  }

  get canStoreKeys(): boolean {
    return this.#cipher !== undefined;
  }

  async get(guildId: string): Promise<GuildSettings> {
    await this.#olderVoiceSettingsFolded();
    return (await this.#settings.get(guildId)) ?? defaultGuildSettings();
  }

  /**
   * The upgrade of the `voice_settings` records of versions before 2026-11-27: each becomes its server's
   * voice settings, unless the server has some already (changed since), and is deleted. Once per process,
   * before its first read or change of settings; every worker may do it, and the second finds nothing.
   */
  async #foldOlderVoiceSettings(): Promise<void> {
    const older: [string, StoredVoiceSettings][] = [];
    for await (const entry of this.#olderVoiceSettings.entries()) older.push(entry);
    for (const [guildId, voice] of older) {
      await this.#settings.update(guildId, (current) => (current?.voice ? undefined : { ...(current ?? defaultGuildSettings()), voice }));
      await this.#olderVoiceSettings.delete(guildId);
    }
    if (older.length > 0)
      this.#options.log.info("folded voice settings of an earlier version into servers' settings", { servers: older.length });
  }

  /**
   * Applies a change (a pure function of the current settings that leaves them as they are: it may run
   * again when another writer came first) and records who made it and when; the last HISTORY_KEPT changes
   * are kept, newest first. One atomic step on the store, so two admins' changes (or two workers') cannot
   * overwrite each other. A change that leaves every setting as it was writes nothing and records nothing.
   */
  async update(
    guildId: string,
    by: string,
    description: string,
    change: (settings: GuildSettings) => GuildSettings,
  ): Promise<GuildSettings> {
    await this.#olderVoiceSettingsFolded();
    let changed = false;
    const updated = await this.#settings.update(guildId, (stored) => {
      const current = stored ?? defaultGuildSettings();
      const next = change(current);
      // The last run decides: the step runs again when another writer came first.
      changed = !isDeepStrictEqual(next, current);
      return changed ? withHistory(next, current, by, description) : undefined;
    });
    if (changed) this.moderationLog.configChanged({ guildId, by, change: description });
    // Nothing written and nothing stored: the server has the defaults.
    return updated ?? defaultGuildSettings();
  }

  // ---- Voice -----------------------------------------------------------------------------------

  /** The server's voice settings: what /voice settings changed, the defaults for the rest. */
  async voiceSettings(guildId: string): Promise<VoiceSettings> {
    const { voice } = await this.get(guildId);
    return { ...this.#voiceDefaults, ...voice };
  }

  /**
   * Changes voice settings and records the change in the server's history, in one step; two admins
   * changing different settings at once both keep theirs. A change to what is already set writes nothing.
   */
  async changeVoiceSettings(guildId: string, change: VoiceSettingsChange, by: string): Promise<VoiceSettings> {
    const effective = (settings: GuildSettings): VoiceSettings => ({ ...this.#voiceDefaults, ...settings.voice });
    const updated = await this.update(guildId, by, describeVoiceSettingsChange(change), (settings) => {
      const voice = applyVoiceSettingsChange(effective(settings), change, by, Date.now());
      return voice === undefined ? settings : { ...settings, voice };
    });
    return effective(updated);
  }

  // ---- Keys ------------------------------------------------------------------------------------

  /** Checks the key against the gateway (`/v1/models`) and, when it works, stores it sealed. */
  async setKey(guildId: string, key: string, by: string): Promise<SetKeyResult> {
    const cipher = this.#cipher;
    if (!cipher) {
      this.#options.log.warn('a server tried to store a gateway key, but KEY_ENCRYPTION_SECRET is not set', { guild: guildId });
      return { ok: false, notice: keyNotice('noSecret') };
    }
    const trimmed = key.trim();
    if (trimmed.length < MIN_KEY_LENGTH || /\s/.test(trimmed)) return { ok: false, notice: keyNotice('notAKey') };
    // Before any request: whatever goes wrong from here on, the key cannot reach a log line.
    registerSecret(trimmed);
    const checked = await this.#checkKey(trimmed);
    if (!checked.ok) return checked;
    const lastFour = trimmed.slice(-4);
    const stored: StoredKey = { sealed: cipher.seal(trimmed, guildId), lastFour, setBy: by, setAt: Date.now() };
    await this.update(guildId, by, `set the gateway key (…${lastFour})`, (settings) => ({ ...settings, key: stored }));
    this.#dropOpenKey(guildId);
    this.#options.log.info('a server set its gateway key', { guild: guildId, by, keyId: keyFingerprint(trimmed) });
    return { ok: true, lastFour, models: checked.models };
  }

  async #checkKey(key: string): Promise<Outcome<{ models: number | undefined }>> {
    const inUse = this.#isInUse(key);
    try {
      return { ok: true, models: (await this.#options.clients.get(key, 'compat').listModels()).length };
    } catch (error) {
      // The gateway took the key (a success answer) in a list shape the spec does not show: the key works.
      if (error instanceof MalformedResponseError) {
        this.#options.log.warn('the gateway accepted a server key but its model list could not be read', { error });
        return { ok: true, models: undefined };
      }
      if (!(error instanceof GatewayError)) throw error;
      this.#options.log.warn('could not check a server gateway key', { error });
      return refuse('config.key.refused', {
        words: { phrase: 'gateway-error', error, context: { key: 'offered', purpose: 'list-models' } },
        checked: error instanceof AuthenticationError ? 'yes' : 'no',
      });
    } finally {
      // A refused key must not keep a client; one already serving tasks keeps its own.
      if (!inUse) this.#options.clients.forget(key);
    }
  }

  #isInUse(key: string): boolean {
    if (key === this.#options.operatorKey) return true;
    for (const open of this.#openKeys.values()) if (open.key === key) return true;
    return false;
  }

  /** Removes the server's own key (the operator's key, if any, serves the server again). */
  async clearKey(guildId: string, by: string): Promise<boolean> {
    let cleared: string | undefined;
    await this.#settings.update(guildId, (settings) => {
      cleared = undefined;
      if (!settings?.key) return undefined;
      const { key: removed, ...rest } = settings;
      cleared = `cleared the gateway key (…${removed.lastFour})`;
      return withHistory(rest, settings, by, cleared);
    });
    if (cleared === undefined) return false;
    this.#dropOpenKey(guildId);
    this.moderationLog.configChanged({ guildId, by, change: cleared });
    return true;
  }

  /** Forgets a server's replaced or removed key, and its clients unless another server uses the same key. */
  #dropOpenKey(guildId: string): void {
    const open = this.#openKeys.get(guildId);
    this.#openKeys.delete(guildId);
    if (open && !this.#isInUse(open.key)) this.#options.clients.forget(open.key);
  }

  /** The server's own key in the clear, sealed again under the current secret when a rotation asks for it. */
  async #serverKey(guildId: string, stored: StoredKey): Promise<ServerKey> {
    const sealed = stored.sealed;
    const cached = this.#openKeys.get(guildId);
    if (sealed && cached?.iv === sealed.iv) {
      // Each use keeps it among the secrets the logs scrub (that registry forgets the least recently used).
      registerSecret(cached.key);
      return { ok: true, key: cached.key };
    }
    if (!this.#cipher) return { ok: false, reason: 'no-secret', notice: keyNotice('secretRemoved') };
    if (!sealed) {
      this.#options.log.warn('a stored server key cannot be read', { guild: guildId, reason: 'damaged-record' });
      return cannotOpen();
    }
    let opened: { plaintext: string; reseal: boolean };
    try {
      opened = this.#cipher.open(sealed, guildId);
    } catch (error) {
      if (!(error instanceof UnreadableKeyError)) throw error;
      this.#options.log.warn('a stored server key cannot be read', { guild: guildId, reason: error.reason });
      return cannotOpen();
    }
    registerSecret(opened.plaintext);
    let iv = sealed.iv;
    if (opened.reseal) iv = (await this.#reseal(guildId, opened.plaintext, sealed.iv)) ?? iv;
    this.#openKeys.set(guildId, { iv, key: opened.plaintext });
    return { ok: true, key: opened.plaintext };
  }

  /** Seals a key read under the previous secret again under the current one; the new iv, if it was written. */
  async #reseal(guildId: string, plaintext: string, readIv: string): Promise<string | undefined> {
    const cipher = this.#cipher;
    if (!cipher) return undefined;
    let sealed: SealedKey | undefined;
    await this.#settings.update(guildId, (settings) => {
      sealed = undefined;
      // An admin (or another worker's reseal) may have set another key meanwhile: leave theirs alone.
      if (!settings?.key || settings.key.sealed?.iv !== readIv) return undefined;
      sealed = cipher.seal(plaintext, guildId);
      return { ...settings, key: { ...settings.key, sealed } };
    });
    if (sealed) this.#options.log.info('sealed a server key again under the current KEY_ENCRYPTION_SECRET', { guild: guildId });
    return sealed?.iv;
  }

  // ---- GuildVideoPolicy ------------------------------------------------------------------------

  /** Which key and layer a server's requests use, or why there is none. */
  async resolveGatewayAccess(guildId: string): Promise<SettingsGatewayAccess> {
    if (isUserInstallScope(guildId)) return this.#operatorAccess();
    const settings = await this.get(guildId);
    const layer = settings.layer ?? this.#options.defaultLayer;
    if (settings.key) {
      const own = await this.#serverKey(guildId, settings.key);
      if (!own.ok) return own;
      return { ok: true, apiKey: own.key, layer, source: 'server', keyId: keyFingerprint(own.key) };
    }
    const operatorKey = this.#options.operatorKey;
    if (!operatorKey) return { ok: false, reason: 'no-key', notice: keyNotice('noKey') };
    return { ok: true, apiKey: operatorKey, layer, source: 'operator', keyId: keyFingerprint(operatorKey) };
  }

  /**
   * A member's own install of the app: the operator's key on the operator's layer, whatever a server's
   * settings say (a member in a server that has its own key still spends the operator's), or, without
   * one, why not, naming GATEWAY_API_KEY in the member's language.
   */
  #operatorAccess(): SettingsGatewayAccess {
    const operatorKey = this.#options.operatorKey;
    if (!operatorKey) return { ok: false, reason: 'no-key', notice: notice('user-install.no-key') };
    return { ok: true, apiKey: operatorKey, layer: this.#options.defaultLayer, source: 'operator', keyId: keyFingerprint(operatorKey) };
  }

  /** What `/config show` says beyond the stored settings: what the service knows of the server and the operator. */
  async shownFacts(guildId: string): Promise<ServerFacts> {
    const [access, keyInUse] = await Promise.all([this.resolveGatewayAccess(guildId), this.keyInUse(guildId)]);
    return {
      hasKey: access.ok,
      canStoreKeys: this.canStoreKeys,
      keyInUse,
      defaultLayer: this.#options.defaultLayer,
      prices: this.#options.prices,
    };
  }

  /** `/config show`'s key line: which key serves the server (its own, the operator's, or none) and why. */
  async keyInUse(guildId: string): Promise<Notice> {
    const [{ key }, access] = await Promise.all([this.get(guildId), this.resolveGatewayAccess(guildId)]);
    const own = key && notice('config.key.own', { lastFour: key.lastFour, by: `<@${key.setBy}>`, when: discordRelativeTime(key.setAt) });
    if (access.ok && access.source === 'server') return notice('config.key.in-use.server', { own: own ?? '' });
    if (access.ok) return notice('config.key.in-use.operator');
    if (own) return notice('config.key.in-use.broken', { own, why: access.notice });
    return notice('config.key.in-use.none');
  }

  /** The moderators' rules of the server (/config rules). */
  async rules(guildId: string): Promise<ServerRules> {
    return (await this.get(guildId)).rules;
  }

  /** Whether the moderators let a member use the bot on the server: refused when they denied them. */
  async memberAllowed(guildId: string, userId: string): Promise<RulesVerdict> {
    return memberRefusal(await this.rules(guildId), userId);
  }

  /**
   * The blocked word or phrase `prompt` contains, by the server's rules; undefined when none. The rules are
   * compiled once per rule set (a server's rules change seldom, its prompts often).
   */
  async blockedWordIn(guildId: string, prompt: string): Promise<string | undefined> {
    const { blockedWords } = await this.rules(guildId);
    if (blockedWords.length === 0) return undefined;
    const signature = blockedWords.join('\n');
    let compiled = this.#compiledRules.get(guildId);
    if (compiled?.signature !== signature) {
      compiled = { signature, words: compileBlockedWords(blockedWords) };
      this.#compiledRules.set(guildId, compiled);
      if (this.#compiledRules.size > MAX_COMPILED_RULE_SETS) this.#compiledRules.delete(this.#compiledRules.keys().next().value!);
    }
    return blockedWordIn(compiled.words, prompt);
  }

  async defaults(guildId: string): Promise<VideoDefaults> {
    const { defaults, storage, spending } = await this.get(guildId);
    return {
      confirmOverUsdTicks: usdToUsdTicks(spending.confirmOverUsd),
      model: defaults.model,
      resolution: defaults.resolution,
      duration: defaults.duration,
      aspectRatio: defaults.aspectRatio,
      storage,
      buttons: defaults.buttons ?? 'anyone',
      variants: defaults.variants ?? 1,
      ping: defaults.ping ?? 'on',
    };
  }

  checkLimits(request: LimitQuery): Promise<LimitVerdict> {
    return this.spending.checkLimits(request);
  }

  // A task counts on the UTC day it was created, and so does its cost: submission, refusal and cost
  // always land in the same day record.

  recordSubmission(task: MemberTask, estimateUsdTicks: number): Promise<SpendReservation> {
    return this.spending.admit(task, estimateUsdTicks);
  }

  releaseSubmission(task: MemberTask, reservation: SpendReservation): Promise<void> {
    return this.spending.release(task, reservation);
  }

  /**
   * What an admin stated with `/config limits key_concurrency`, for the server's own key only: the
   * operator's key is shared by every server without one (and by members' own installs), so no one
   * server's word is its limit; its line learns it. A stored key that cannot be opened sends nothing, so
   * it needs no opening here.
   */
  async keyConcurrency(guildId: string): Promise<number | undefined> {
    if (isUserInstallScope(guildId)) return undefined;
    const { key, limits } = await this.get(guildId);
    return key ? limits.keyConcurrency : undefined;
  }

  estimate(request: VideoEstimateRequest): number {
    return this.spending.estimate(request);
  }

  recordCost(cost: TaskCost): Promise<void> {
    return this.spending.settle(cost);
  }

  /** What the member's videos on the server cost on the UTC day of `at` (the day each task was started). */
  async memberDayCost(guildId: string, userId: string, at: number): Promise<MemberDayCost> {
    const count = memberUsage(await this.spending.ledger.day(guildId, at), userId);
    return { costUsdTicks: count.costUsdTicks, costUnreported: count.costUnreported };
  }

  // ---- Access and usage ------------------------------------------------------------------------

  /** Whether a member may use a feature: everyone when no roles are set, server managers always. */
  async mayUse(guildId: string, feature: Feature, memberRoleIds: readonly string[], isServerManager: boolean): Promise<AccessVerdict> {
    if (isServerManager) return { ok: true };
    return checkAccess(memberRoleIds, await this.get(guildId), feature, false);
  }
}
