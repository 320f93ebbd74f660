import { z } from 'zod';
import { LAYERS, type Layer } from '../gateway/spec.ts';
import { MAX_KEY_CONCURRENCY } from '../ports/guild-policy.ts';
import { MAX_VARIANTS, type ReadyPing, type ResultButtons } from '../ports/video-defaults.ts';
import { sealedKeySchema, type SealedKey } from './key-cipher.ts';
import { versionedRecord, type RecordWarning } from '../store/index.ts';
import { parseStoredVoiceSettings, type StoredVoiceSettings } from './voice-settings.ts';

// One server's settings, as stored: its own gateway key (sealed), layer, defaults, storage, who may use
// the bot, limits, its voice conversations, and the record of every change.

export const FEATURES = ['video', 'voice'] as const;
export const BUDGET_NAMES = ['member_daily_usd', 'server_daily_usd', 'server_monthly_usd'] as const;
export type BudgetName = (typeof BUDGET_NAMES)[number];
/** Dollars, as /config budget set them (video and voice together); 0 means no budget. */
export type Budgets = Record<BudgetName, number>;
export const NO_BUDGETS: Budgets = { member_daily_usd: 0, server_daily_usd: 0, server_monthly_usd: 0 };
/** Who may press the buttons under a video; the first is the default. */
export const RESULT_BUTTONS: readonly ResultButtons[] = ['anyone', 'owner'];
/** Whether a member is pinged when their video is ready; the first is the default. */
export const READY_PINGS: readonly ReadyPing[] = ['on', 'off'];
export type Feature = (typeof FEATURES)[number];

export interface StoredKey {
  /** null: a key was stored but its record is damaged; the server is asked to set it again. */
  sealed: SealedKey | null;
  lastFour: string;
  setBy: string;
  setAt: number;
}

export interface SettingsChange {
  at: number;
  by: string;
  change: string;
}

/** The version of a server's settings record this code writes (src/store/versioned.ts). */
export const GUILD_SETTINGS_VERSION = 1;

export interface GuildSettings {
  v: typeof GUILD_SETTINGS_VERSION;
  key?: StoredKey;
  /** Unset: the operator's GATEWAY_LAYER. */
  layer?: Layer;
  /**
   * Request defaults, who may press the buttons under a video (`buttons`, unset: anyone), and whether its
   * member is pinged when it is ready (`ping`, unset: on): all set with /config defaults.
   */
  defaults: {
    model?: string;
    resolution?: string;
    duration?: number;
    aspectRatio?: string;
    buttons?: ResultButtons;
    variants?: number;
    ping?: ReadyPing;
  };
  storage: { keepDays: number; publicLink: boolean };
  /** Roles allowed to use each feature; empty means everyone. */
  roles: Record<Feature, string[]>;
  /**
   * 0 means no limit. `keyConcurrency`: how many videos at once the server's own key takes, as an admin
   * stated it (1 to MAX_KEY_CONCURRENCY); unset: the key's line learns it from the gateway's refusals.
   */
  limits: { concurrentPerUser: number; dailyPerUser: number; dailyPerServer: number; keyConcurrency?: number };
  /**
   * Budgets in dollars for video and voice together (0: none), where alerts at 80% and 100% of a server
   * budget go, and the estimate over which a video waits for its member's confirmation (0: never).
   */
  spending: { budgets: Budgets; alertChannelId?: string; confirmOverUsd: number };
  /** What /voice settings changed; unset: the defaults. */
  voice?: StoredVoiceSettings;
  /** The moderators' rules (/config rules); each empty or unset means no such rule. */
  rules: ServerRules;
  history: SettingsChange[];
}

/** The moderators' rules of a server (issue 36), set with /config rules. */
export interface ServerRules {
  /** Words and phrases no prompt may contain (blocked-words.ts matches them); at most BLOCKED_WORDS_LIMITS. */
  blockedWords: string[];
  /** Channels (and their threads) where /video and the message commands may be used; empty: everywhere. */
  videoChannels: string[];
  /** Members refused by every command, button and voice tool call of the bot in the server. */
  denied: string[];
  /** Where the bot logs jobs, refusals, /config changes and voice conversations; unset: nowhere. */
  logChannelId?: string;
}

export function noRules(): ServerRules {
  return { blockedWords: [], videoChannels: [], denied: [] };
}

export const HISTORY_KEPT = 50;
export const STORAGE_MAX_DAYS = 30;

export function defaultGuildSettings(): GuildSettings {
  return {
    v: GUILD_SETTINGS_VERSION,
    defaults: {},
    storage: { keepDays: 0, publicLink: false },
    roles: { video: [], voice: [] },
    limits: { concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 },
    spending: { budgets: { ...NO_BUDGETS }, confirmOverUsd: 0 },
    rules: noRules(),
    history: [],
  };
}

// ---- The stored record: every setting read leniently, one that does not read right is its default ----

/** A string, or unset. */
const optionalString = z.string().optional().catch(undefined);
/** Limits and day counts: whole numbers, 0 or more (0 means no limit). */
const count = z.number().int().positive().catch(0);
/** Dollar amounts: 0 or more, finite (0 means none). */
const dollars = z.number().positive().catch(0);
/** Role ids (and other lists of strings: channel and member ids, words): the strings of a list. */
const roleIds = z
  .array(z.unknown())
  .transform((items) => items.filter((item) => typeof item === 'string'))
  .catch(() => []);

/** A server's settings as stored, its voice settings not yet read. */
type StoredGuildSettings = Omit<GuildSettings, 'voice'> & { voice?: Readonly<Record<string, unknown>> };

const guildSettingsSchema: z.ZodType<StoredGuildSettings> = z.object({
  v: z.literal(GUILD_SETTINGS_VERSION),
  key: z
    .object({
      // A damaged sealed key must not make the whole record (roles, limits) unreadable: it reads as none.
      sealed: sealedKeySchema.nullable().catch(null),
      lastFour: z.string(),
      setBy: z.string(),
      setAt: z.number().catch(0),
    })
    .optional()
    .catch(undefined),
  layer: z.enum(LAYERS).optional().catch(undefined),
  defaults: z
    .object({
      model: optionalString,
      resolution: optionalString,
      aspectRatio: optionalString,
      duration: z.number().optional().catch(undefined),
      buttons: z.enum(RESULT_BUTTONS).optional().catch(undefined),
      variants: z.number().int().min(1).max(MAX_VARIANTS).optional().catch(undefined),
      // Added without a new version: a record written before it has none, which is the default (on).
      ping: z.enum(READY_PINGS).optional().catch(undefined),
    })
    .catch(() => ({})),
  storage: z
    .object({
      keepDays: count.transform((days) => Math.min(days, STORAGE_MAX_DAYS)),
      publicLink: z.unknown().transform((on) => on === true),
    })
    .catch(() => ({ keepDays: 0, publicLink: false })),
  roles: z.object({ video: roleIds, voice: roleIds }).catch(() => ({ video: [], voice: [] })),
  limits: z
    .object({
      concurrentPerUser: count,
      dailyPerUser: count,
      dailyPerServer: count,
      // Added without a new version: a record written before it has none, which is the default (learned).
      keyConcurrency: z.number().int().min(1).max(MAX_KEY_CONCURRENCY).optional().catch(undefined),
    })
    .catch(() => ({ concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 })),
  spending: z
    .object({
      budgets: z
        .object({ member_daily_usd: dollars, server_daily_usd: dollars, server_monthly_usd: dollars })
        .catch(() => ({ ...NO_BUDGETS })),
      alertChannelId: optionalString,
      confirmOverUsd: dollars,
    })
    .catch(() => ({ budgets: { ...NO_BUDGETS }, confirmOverUsd: 0 })),
  // Added without a new version: a record written before the rules has none, which is no rule at all.
  rules: z
    .object({
      blockedWords: roleIds,
      videoChannels: roleIds,
      denied: roleIds,
      logChannelId: optionalString,
    })
    .catch(() => noRules())
    .default(() => noRules()),
  // Read by the voice settings' own schema (parseGuildSettings), which says what it left to the defaults.
  voice: z.record(z.string(), z.unknown()).optional().catch(undefined),
  history: z
    .array(z.unknown())
    .transform((entries) =>
      entries.flatMap((entry) => {
        const read = z.object({ at: z.number().catch(0), by: z.string(), change: z.string() }).safeParse(entry);
        return read.success ? [read.data] : [];
      }),
    )
    .catch(() => []),
});

/**
 * Reads a server's settings of any version. Version 0 (no `v`, before 2026-11-29) is the same record.
 * Voice settings kept by versions before 2026-11-27 in a record of their own are folded into it once
 * (SettingsService), not read here.
 */
const parseSettingsRecord = versionedRecord<StoredGuildSettings>({
  name: 'guild settings',
  version: GUILD_SETTINGS_VERSION,
  schema: guildSettingsSchema,
  upgrade: (stored) => stored,
});

export function parseGuildSettings(raw: unknown, warn?: RecordWarning): GuildSettings {
  const { voice, ...settings } = parseSettingsRecord(raw, warn);
  return voice === undefined ? settings : { ...settings, voice: parseStoredVoiceSettings(voice, warn) };
}
