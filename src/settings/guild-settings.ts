import { isRecord } from '../lib/json.ts';
import { LAYERS, type Layer } from '../gateway/spec.ts';
import { MAX_VARIANTS, type ResultButtons } from '../ports/video-defaults.ts';
import { parseSealedKey, type SealedKey } from './key-cipher.ts';
import type { RecordWarning } from '../store/index.ts';
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

export interface GuildSettings {
  key?: StoredKey;
  /** Unset: the operator's GATEWAY_LAYER. */
  layer?: Layer;
  /** Request defaults, and who may press the buttons under a video (`buttons`, unset: anyone): all set with /config defaults. */
  defaults: { model?: string; resolution?: string; duration?: number; aspectRatio?: string; buttons?: ResultButtons; variants?: number };
  storage: { keepDays: number; publicLink: boolean };
  /** Roles allowed to use each feature; empty means everyone. */
  roles: Record<Feature, string[]>;
  /** 0 means no limit. */
  limits: { concurrentPerUser: number; dailyPerUser: number; dailyPerServer: number };
  /**
   * Budgets in dollars for video and voice together (0: none), where alerts at 80% and 100% of a server
   * budget go, and the estimate over which a video waits for its member's confirmation (0: never).
   */
  spending: { budgets: Budgets; alertChannelId?: string; confirmOverUsd: number };
  /** What /voice settings changed; unset: the defaults (or what an older version kept in its own record). */
  voice?: StoredVoiceSettings;
  history: SettingsChange[];
}

export const HISTORY_KEPT = 50;
export const STORAGE_MAX_DAYS = 30;

export function defaultGuildSettings(): GuildSettings {
  return {
    defaults: {},
    storage: { keepDays: 0, publicLink: false },
    roles: { video: [], voice: [] },
    limits: { concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 },
    spending: { budgets: { ...NO_BUDGETS }, confirmOverUsd: 0 },
    history: [],
  };
}

function string(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function number(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** Limits and day counts: whole numbers, 0 or more (0 means no limit). */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}

/** Dollar amounts: 0 or more, finite (0 means none). */
function dollars(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** A damaged sealed key must not make the whole record (roles, limits) unreadable. */
function sealedOrNull(raw: unknown): SealedKey | null {
  try {
    return parseSealedKey(raw);
  } catch {
    return null;
  }
}

export function parseGuildSettings(raw: unknown, warn?: RecordWarning): GuildSettings {
  if (!isRecord(raw)) throw new Error('guild settings must be an object');
  const defaults = defaultGuildSettings();
  const settings: GuildSettings = { ...defaults };
  if (isRecord(raw.key)) {
    const key = raw.key;
    const lastFour = string(key.lastFour);
    const setBy = string(key.setBy);
    if (lastFour !== undefined && setBy !== undefined) {
      settings.key = { sealed: sealedOrNull(key.sealed), lastFour, setBy, setAt: number(key.setAt, 0) };
    }
  }
  const layer = LAYERS.find((candidate) => candidate === raw.layer);
  if (layer) settings.layer = layer;
  const stored = raw.defaults;
  if (isRecord(stored)) {
    const model = string(stored.model);
    const resolution = string(stored.resolution);
    const aspectRatio = string(stored.aspectRatio);
    const duration = typeof stored.duration === 'number' ? stored.duration : undefined;
    const buttons = RESULT_BUTTONS.find((candidate) => candidate === stored.buttons);
    const variants =
      typeof stored.variants === 'number' && Number.isInteger(stored.variants) && stored.variants >= 1 && stored.variants <= MAX_VARIANTS
        ? stored.variants
        : undefined;
    settings.defaults = {
      ...(model === undefined ? {} : { model }),
      ...(resolution === undefined ? {} : { resolution }),
      ...(aspectRatio === undefined ? {} : { aspectRatio }),
      ...(duration === undefined ? {} : { duration }),
      ...(buttons === undefined ? {} : { buttons }),
      ...(variants === undefined ? {} : { variants }),
    };
  }
  if (isRecord(raw.storage)) {
    settings.storage = { keepDays: Math.min(count(raw.storage.keepDays), STORAGE_MAX_DAYS), publicLink: raw.storage.publicLink === true };
  }
  if (isRecord(raw.roles)) settings.roles = { video: strings(raw.roles.video), voice: strings(raw.roles.voice) };
  if (isRecord(raw.limits)) {
    settings.limits = {
      concurrentPerUser: count(raw.limits.concurrentPerUser),
      dailyPerUser: count(raw.limits.dailyPerUser),
      dailyPerServer: count(raw.limits.dailyPerServer),
    };
  }
  if (isRecord(raw.spending)) {
    const spending = raw.spending;
    const budgets = isRecord(spending.budgets) ? spending.budgets : {};
    const alertChannelId = string(spending.alertChannelId);
    settings.spending = {
      budgets: {
        member_daily_usd: dollars(budgets.member_daily_usd),
        server_daily_usd: dollars(budgets.server_daily_usd),
        server_monthly_usd: dollars(budgets.server_monthly_usd),
      },
      ...(alertChannelId === undefined ? {} : { alertChannelId }),
      confirmOverUsd: dollars(spending.confirmOverUsd),
    };
  }
  if (isRecord(raw.voice)) settings.voice = parseStoredVoiceSettings(raw.voice, warn);
  if (Array.isArray(raw.history)) {
    settings.history = raw.history.flatMap((entry: unknown) => {
      if (!isRecord(entry)) return [];
      const by = string(entry.by);
      const change = string(entry.change);
      return by === undefined || change === undefined ? [] : [{ at: number(entry.at, 0), by, change }];
    });
  }
  return settings;
}
