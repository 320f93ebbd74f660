import type { SubcommandDefinition } from '../discord/command-options.ts';
import { MESSAGE_LIMITS } from '../discord/message-limits.ts';
import { MAX_VARIANTS } from '../ports/video-defaults.ts';
import { ASPECT_RATIOS, GENERATION_DURATION, LAYERS, RESOLUTIONS, type Layer } from '../gateway/spec.ts';
import { formatList, formatNumber, t, translator, type Locale } from '../i18n/index.ts';
import { refuse, type Refusal, type Result } from '../lib/result.ts';
import { shorten } from '../lib/text.ts';
import { formatCost, formatCostIn } from '../wording/cost.ts';
import { usdToTicks } from './budgets.ts';
import { FEATURES, RESULT_BUTTONS, STORAGE_MAX_DAYS, type BudgetName, type GuildSettings } from './guild-settings.ts';

// /config's subcommands: what each asks, what it accepts (and why not, to the admin, in their language), and
// the change it makes with the words the server's history records it in (English: the history is stored,
// and read by every admin of the server). commands/config.ts reads the options and hands
// them here. What the subcommands and options are called and described, in every language, is the catalogs'
// (`command.config.*` in src/i18n/catalogs/).

const MAX_LIMIT = 10_000;
/** A budget or confirmation threshold, in dollars: high enough for any server, low enough to be a typo's bound. */
const MAX_USD = 1_000_000;
/**
 * What /config shows of what grows with the server or the admins' input, so that every answer fits
 * Discord's 2,000 characters in every language: a model id (a key's models, a default), roles per
 * feature, and one change of the history (a change can name a model).
 */
const MODEL_SHOWN = 60;
const ROLES_SHOWN = 3;
const HISTORY_CHANGE_SHOWN = 80;
const HISTORY_SHOWN = 5;

export const CONFIG_COMMAND = { name: 'config' } as const;

export const CONFIG_SUBCOMMANDS = {
  key: { name: 'key' },
  keyClear: { name: 'key-clear' },
  show: { name: 'show' },
  layer: {
    name: 'layer',
    options: [
      {
        type: 'string',
        name: 'layer',
        required: true,
        choices: LAYERS.map((layer) => ({ value: layer, literal: true })),
      },
    ],
  },
  defaults: {
    name: 'defaults',
    options: [
      { type: 'string', name: 'model', autocomplete: true },
      {
        type: 'string',
        name: 'resolution',
        choices: RESOLUTIONS.map((value) => ({ value, literal: true })),
      },
      {
        type: 'integer',
        name: 'duration',
        min: GENERATION_DURATION.min,
        max: GENERATION_DURATION.max,
      },
      {
        type: 'string',
        name: 'aspect_ratio',
        choices: ASPECT_RATIOS.map((value) => ({ value, literal: true })),
      },
      {
        type: 'string',
        name: 'buttons',
        choices: [{ value: 'anyone' }, { value: 'owner' }],
      },
      { type: 'integer', name: 'variants', min: 1, max: MAX_VARIANTS },
      { type: 'boolean', name: 'reset' },
    ],
  },
  storage: {
    name: 'storage',
    options: [
      {
        type: 'integer',
        name: 'keep_days',
        descriptionValues: { maxDays: STORAGE_MAX_DAYS },
        required: true,
        min: 0,
        max: STORAGE_MAX_DAYS,
      },
      { type: 'boolean', name: 'public_link' },
    ],
  },
  roles: {
    name: 'roles',
    options: [
      {
        type: 'string',
        name: 'feature',
        required: true,
        choices: FEATURES.map((feature) => ({ value: feature })),
      },
      {
        type: 'string',
        name: 'action',
        required: true,
        choices: [{ value: 'add' }, { value: 'remove' }, { value: 'clear' }],
      },
      { type: 'role', name: 'role' },
    ],
  },
  limits: {
    name: 'limits',
    options: [
      { type: 'integer', name: 'concurrent_per_user', min: 0, max: MAX_LIMIT },
      { type: 'integer', name: 'daily_per_user', min: 0, max: MAX_LIMIT },
      { type: 'integer', name: 'daily_per_server', min: 0, max: MAX_LIMIT },
    ],
  },
  budget: {
    name: 'budget',
    options: [
      { type: 'number', name: 'member_daily_usd', min: 0, max: MAX_USD },
      { type: 'number', name: 'server_daily_usd', min: 0, max: MAX_USD },
      { type: 'number', name: 'server_monthly_usd', min: 0, max: MAX_USD },
      { type: 'text-channel', name: 'alert_channel' },
      {
        type: 'number',
        name: 'confirm_over_usd',
        min: 0,
        max: MAX_USD,
      },
      { type: 'boolean', name: 'clear_alert_channel' },
    ],
  },
} as const satisfies Record<string, SubcommandDefinition>;

/** A change an admin asked for: how the history words it, and what it does to the settings; `note` in the admin's language. */
export type SettingsChangeRequest = Result<{ description: string; change: (settings: GuildSettings) => GuildSettings; note?: string }>;

/** `a, b or c` in the locale, each in code style: the values an option accepts. */
function oneOf(locale: Locale, values: readonly (string | number)[]): string {
  return formatList(
    locale,
    values.map((value) => `\`${value}\``),
    'disjunction',
  );
}

/** "Give at least one of …" naming the options. */
function atLeastOne(locale: Locale, options: readonly string[]): Refusal {
  return refuse(t(locale, 'config.at-least-one', { options: oneOf(locale, options) }));
}

export function layerChange(locale: Locale, given: string): SettingsChangeRequest {
  const layer: Layer | undefined = LAYERS.find((candidate) => candidate === given);
  if (!layer) return refuse(t(locale, 'config.must-be-one-of', { option: '`layer`', values: oneOf(locale, LAYERS) }));
  return {
    ok: true,
    description: `set the layer to ${layer}`,
    change: (settings) => ({ ...settings, layer }),
    note: t(locale, 'config.layer.saved', { layer }),
  };
}

export interface DefaultsGiven {
  model: string | undefined;
  resolution: string | undefined;
  duration: number | undefined;
  aspectRatio: string | undefined;
  buttons: string | undefined;
  /** Variants a generation makes by default (1-4). */
  variants?: number | undefined;
  reset: boolean;
}

/** The model is checked apart (checkDefaultModel): the models a key may use are the gateway's to say. */
export function defaultsChange(locale: Locale, given: DefaultsGiven): SettingsChangeRequest {
  if (given.reset) return { ok: true, description: 'reset the video defaults', change: (settings) => ({ ...settings, defaults: {} }) };
  const { model, resolution, duration, aspectRatio } = given;
  if (
    model === undefined &&
    resolution === undefined &&
    duration === undefined &&
    aspectRatio === undefined &&
    given.buttons === undefined &&
    given.variants === undefined
  ) {
    return atLeastOne(locale, ['model', 'resolution', 'duration', 'aspect_ratio', 'buttons', 'variants', 'reset']);
  }
  const mustBeOneOf = (option: string, values: readonly string[]) =>
    refuse(t(locale, 'config.must-be-one-of', { option: `\`${option}\``, values: oneOf(locale, values) }));
  const { variants } = given;
  if (variants !== undefined && (!Number.isInteger(variants) || variants < 1 || variants > MAX_VARIANTS))
    return refuse(t(locale, 'config.defaults.variants-range', { max: MAX_VARIANTS }));
  const buttons = RESULT_BUTTONS.find((value) => value === given.buttons);
  if (given.buttons !== undefined && buttons === undefined) return mustBeOneOf('buttons', RESULT_BUTTONS);
  if (resolution !== undefined && !RESOLUTIONS.some((value) => value === resolution)) return mustBeOneOf('resolution', RESOLUTIONS);
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((value) => value === aspectRatio)) return mustBeOneOf('aspect_ratio', ASPECT_RATIOS);
  if (duration !== undefined && (duration < GENERATION_DURATION.min || duration > GENERATION_DURATION.max)) {
    return refuse(t(locale, 'config.defaults.duration-range', { min: GENERATION_DURATION.min, max: GENERATION_DURATION.max }));
  }
  const defaults = {
    ...(model === undefined ? {} : { model }),
    ...(resolution === undefined ? {} : { resolution }),
    ...(duration === undefined ? {} : { duration }),
    ...(aspectRatio === undefined ? {} : { aspectRatio }),
    ...(buttons === undefined ? {} : { buttons }),
    ...(variants === undefined ? {} : { variants }),
  };
  const words = [
    model,
    resolution,
    duration === undefined ? undefined : `${duration} s`,
    aspectRatio,
    buttons === undefined ? undefined : `buttons ${buttons}`,
    variants === undefined ? undefined : `${variants} variant${variants === 1 ? '' : 's'}`,
  ];
  return {
    ok: true,
    description: `set video defaults: ${words.filter((part) => part !== undefined).join(', ')}`,
    change: (settings) => ({ ...settings, defaults: { ...settings.defaults, ...defaults } }),
  };
}

/**
 * A default model the server's key cannot use; `available` undefined or empty: the list could not be read,
 * and the model is accepted. The key's models are named as many as fit in one message, then how many more.
 */
export function checkDefaultModel(locale: Locale, model: string, available: readonly string[] | undefined): string | undefined {
  if (!available || available.length === 0 || available.includes(model)) return undefined;
  const refusal = (shown: number) => {
    const names = available.slice(0, shown).map((name) => shorten(name, MODEL_SHOWN));
    const more = available.length - shown;
    if (more > 0) names.push(t(locale, 'config.defaults.more-models', { count: more }));
    return t(locale, 'config.defaults.model-unavailable', { model: shorten(model, MODEL_SHOWN), available: names.join(', ') });
  };
  let shown = 0;
  while (shown < available.length && refusal(shown + 1).length <= MESSAGE_LIMITS.content) shown++;
  return refusal(shown);
}

export function storageChange(locale: Locale, keepDays: number, publicLink: boolean): SettingsChangeRequest {
  if (keepDays < 0 || keepDays > STORAGE_MAX_DAYS) return refuse(t(locale, 'config.storage.keep-days-range', { max: STORAGE_MAX_DAYS }));
  return {
    ok: true,
    description: `set storage to ${keepDays} days${publicLink ? ' with a public link' : ''}`,
    change: (settings) => ({ ...settings, storage: { keepDays, publicLink } }),
  };
}

export function rolesChange(locale: Locale, givenFeature: string, action: string, roleId: string | undefined): SettingsChangeRequest {
  const feature = FEATURES.find((candidate) => candidate === givenFeature);
  if (!feature) return refuse(t(locale, 'config.must-be-one-of', { option: '`feature`', values: oneOf(locale, FEATURES) }));
  let description: string;
  let next: (current: string[]) => string[];
  if (action === 'clear') {
    description = `allowed everyone on /${feature}`;
    next = () => [];
  } else if (roleId === undefined) {
    return refuse(t(locale, 'config.roles.pick-role'));
  } else if (action === 'add') {
    description = `allowed <@&${roleId}> on /${feature}`;
    next = (current) => [...new Set([...current, roleId])];
  } else if (action === 'remove') {
    description = `stopped allowing <@&${roleId}> on /${feature}`;
    next = (current) => current.filter((id) => id !== roleId);
  } else {
    return refuse(t(locale, 'config.must-be-one-of', { option: '`action`', values: oneOf(locale, ['add', 'remove', 'clear']) }));
  }
  return {
    ok: true,
    description,
    change: (settings) => ({ ...settings, roles: { ...settings.roles, [feature]: next(settings.roles[feature]) } }),
  };
}

/** null: the option was left out. */
export type LimitsGiven = Record<keyof GuildSettings['limits'], number | null>;

export function limitsChange(locale: Locale, given: LimitsGiven): SettingsChangeRequest {
  if (Object.values(given).every((value) => value === null))
    return atLeastOne(locale, ['concurrent_per_user', 'daily_per_user', 'daily_per_server']);
  for (const [option, value] of [
    ['concurrent_per_user', given.concurrentPerUser],
    ['daily_per_user', given.dailyPerUser],
    ['daily_per_server', given.dailyPerServer],
  ] as const) {
    if (value !== null && (value < 0 || value > MAX_LIMIT))
      return refuse(t(locale, 'config.limits.range', { option: `\`${option}\``, max: MAX_LIMIT }));
  }
  const parts = [
    given.concurrentPerUser === null ? undefined : `${limit(given.concurrentPerUser)} in progress per member`,
    given.dailyPerUser === null ? undefined : `${limit(given.dailyPerUser)} a day per member`,
    given.dailyPerServer === null ? undefined : `${limit(given.dailyPerServer)} a day for the server`,
  ];
  return {
    ok: true,
    description: `set limits: ${parts.filter((part) => part !== undefined).join(', ')}`,
    change: (settings) => ({
      ...settings,
      limits: {
        concurrentPerUser: given.concurrentPerUser ?? settings.limits.concurrentPerUser,
        dailyPerUser: given.dailyPerUser ?? settings.limits.dailyPerUser,
        dailyPerServer: given.dailyPerServer ?? settings.limits.dailyPerServer,
      },
    }),
  };
}

/** null: the option was left out. */
export type BudgetGiven = Record<BudgetName | 'confirm_over_usd', number | null> & {
  alertChannelId: string | null;
  clearAlertChannel: boolean;
};

function usd(amount: number): string {
  return formatCost(usdToTicks(amount));
}

function budgetWords(amount: number): string {
  return amount === 0 ? 'no budget' : usd(amount);
}

export function budgetChange(locale: Locale, given: BudgetGiven): SettingsChangeRequest {
  const amounts = [
    ['member_daily_usd', given.member_daily_usd],
    ['server_daily_usd', given.server_daily_usd],
    ['server_monthly_usd', given.server_monthly_usd],
    ['confirm_over_usd', given.confirm_over_usd],
  ] as const;
  if (amounts.every(([, value]) => value === null) && given.alertChannelId === null && !given.clearAlertChannel) {
    return atLeastOne(locale, [
      'member_daily_usd',
      'server_daily_usd',
      'server_monthly_usd',
      'alert_channel',
      'confirm_over_usd',
      'clear_alert_channel',
    ]);
  }
  for (const [option, value] of amounts) {
    if (value !== null && !(Number.isFinite(value) && value >= 0 && value <= MAX_USD))
      return refuse(t(locale, 'config.budget.range', { option: `\`${option}\``, max: formatNumber(locale, MAX_USD) }));
    // Kept to the cent below, an amount under half a cent would become 0: no budget at all, the opposite of what was asked.
    if (value !== null && value > 0 && Math.round(value * 100) === 0)
      return refuse(t(locale, 'config.budget.at-least-a-cent', { option: `\`${option}\``, cent: formatCostIn(locale, usdToTicks(0.01)) }));
  }
  if (given.alertChannelId !== null && given.clearAlertChannel) return refuse(t(locale, 'config.budget.not-both'));
  // Dollars are kept to the cent: what the admin reads back is what is enforced.
  const cents = (value: number | null) => (value === null ? null : Math.round(value * 100) / 100);
  const memberDaily = cents(given.member_daily_usd);
  const serverDaily = cents(given.server_daily_usd);
  const serverMonthly = cents(given.server_monthly_usd);
  const confirmOver = cents(given.confirm_over_usd);
  const parts = [
    memberDaily === null ? undefined : `${budgetWords(memberDaily)} per member a day`,
    serverDaily === null ? undefined : `${budgetWords(serverDaily)} for the server a day`,
    serverMonthly === null ? undefined : `${budgetWords(serverMonthly)} for the server a month`,
    confirmOver === null ? undefined : confirmOver === 0 ? 'no confirmation' : `confirm videos over ${usd(confirmOver)}`,
    given.alertChannelId === null ? undefined : `alerts in <#${given.alertChannelId}>`,
    given.clearAlertChannel ? 'no alerts' : undefined,
  ];
  return {
    ok: true,
    description: `set budgets: ${parts.filter((part) => part !== undefined).join(', ')}`,
    change: (settings) => {
      const { alertChannelId: current, ...spending } = settings.spending;
      const alertChannelId = given.clearAlertChannel ? undefined : (given.alertChannelId ?? current);
      return {
        ...settings,
        spending: {
          ...spending,
          budgets: {
            member_daily_usd: memberDaily ?? spending.budgets.member_daily_usd,
            server_daily_usd: serverDaily ?? spending.budgets.server_daily_usd,
            server_monthly_usd: serverMonthly ?? spending.budgets.server_monthly_usd,
          },
          confirmOverUsd: confirmOver ?? spending.confirmOverUsd,
          ...(alertChannelId === undefined ? {} : { alertChannelId }),
        },
      };
    },
  };
}

function limit(value: number): string {
  return value === 0 ? 'no limit' : String(value);
}

/** What `/config show` says beyond the stored settings: facts the service knows. */
export interface ShownFacts {
  /** The server can use a gateway key (its own or the operator's). */
  hasKey: boolean;
  canStoreKeys: boolean;
  keyInUse: string;
  defaultLayer: Layer;
  /** The prices estimates are made with, one line each: as many as fit are shown. */
  prices: readonly string[];
}

/** The history's newest changes, as many as fit in `room` characters (HISTORY_SHOWN at most), under their heading; none: nothing. */
function historyLines(locale: Locale, history: GuildSettings['history'], room: number): string[] {
  const lines = [t(locale, 'config.show.history')];
  for (const entry of history.slice(0, HISTORY_SHOWN)) {
    const line = `<t:${Math.floor(entry.at / 1000)}:R> <@${entry.by}> ${shorten(entry.change, HISTORY_CHANGE_SHOWN)}`;
    if ([...lines, line].join('\n').length > room) break;
    lines.push(line);
  }
  return lines.length > 1 ? lines : [];
}

/** The prices line with as many of `prices` as fit in `room` characters, then how many more there are and where. */
function pricesLine(locale: Locale, prices: readonly string[], room: number): string {
  const line = (shown: number) => {
    const more = prices.length - shown;
    const parts = [...prices.slice(0, shown), ...(more > 0 ? [t(locale, 'prices.more', { count: more })] : [])];
    return t(locale, 'config.show.prices', { prices: parts.join('; ') });
  };
  let shown = 0;
  while (shown < prices.length && line(shown + 1).length <= room) shown++;
  return line(shown);
}

/**
 * `/config show`'s first line: what stands between this server and a working bot, in one look (a gateway
 * key for /video and /voice, the operator's encryption secret for a key of the server's own), or that
 * nothing does.
 */
function missingLine(locale: Locale, facts: ShownFacts): string {
  const missing: string[] = [];
  if (!facts.hasKey) missing.push(t(locale, 'config.show.missing.key'));
  if (!facts.canStoreKeys) missing.push(t(locale, 'config.show.missing.secret'));
  return missing.length === 0 ? t(locale, 'config.show.missing-none') : t(locale, 'config.show.missing', { missing: missing.join('; ') });
}

/**
 * `/config show`, and what every change answers with, in the admin's language, in `room` characters at
 * most (what a message holds, less what the answer puts before it): the prices take what the rest leaves.
 */
export function describeServerSettings(
  locale: Locale,
  settings: GuildSettings,
  facts: ShownFacts,
  room: number = MESSAGE_LIMITS.content,
): string {
  const say = translator(locale);
  const roles = (ids: string[]) => {
    if (ids.length === 0) return say('config.show.everyone');
    const shown = ids.slice(0, ROLES_SHOWN).map((id) => `<@&${id}>`);
    const more = ids.length - shown.length;
    return formatList(locale, more > 0 ? [...shown, say('config.show.more-roles', { count: more })] : shown);
  };
  const limit = (value: number) => (value === 0 ? say('config.show.no-limit') : formatNumber(locale, value));
  const budget = (amount: number) => (amount === 0 ? say('config.show.no-budget') : formatCostIn(locale, usdToTicks(amount)));
  const orDefault = (value: string | undefined) => value ?? say('config.show.gateway-default');
  const { defaults, storage, limits, spending } = settings;
  const { budgets } = spending;
  const before = [
    missingLine(locale, facts),
    say('config.show.key', { key: facts.keyInUse }),
    settings.layer === undefined
      ? say('config.show.layer-default', { layer: facts.defaultLayer })
      : say('config.show.layer', { layer: settings.layer }),
    say('config.show.defaults', {
      model: defaults.model === undefined ? say('config.show.latest') : shorten(defaults.model, MODEL_SHOWN),
      resolution: orDefault(defaults.resolution),
      duration:
        defaults.duration === undefined
          ? say('config.show.gateway-default')
          : formatNumber(locale, defaults.duration, { style: 'unit', unit: 'second', unitDisplay: 'narrow' }),
      aspectRatio: orDefault(defaults.aspectRatio),
    }),
    say('config.show.buttons', { who: defaults.buttons === 'owner' ? 'owner' : 'anyone' }),
    say('config.show.storage', { days: storage.keepDays, publicLink: storage.publicLink ? 'yes' : 'no' }),
    say('config.show.roles', { video: roles(settings.roles.video), voice: roles(settings.roles.voice) }),
    say('config.show.limits', {
      concurrent: limit(limits.concurrentPerUser),
      perMember: limit(limits.dailyPerUser),
      perServer: limit(limits.dailyPerServer),
    }),
    say('config.show.budgets', {
      perMember: budget(budgets.member_daily_usd),
      perServer: budget(budgets.server_daily_usd),
      perMonth: budget(budgets.server_monthly_usd),
      alerts:
        spending.alertChannelId === undefined
          ? say('config.show.alerts-off')
          : say('config.show.alerts-in', { channel: `<#${spending.alertChannelId}>` }),
      confirm:
        spending.confirmOverUsd === 0
          ? say('config.show.confirm-none')
          : say('config.show.confirm-over', { amount: formatCostIn(locale, usdToTicks(spending.confirmOverUsd)) }),
    }),
  ];
  // The settings first, whole; then the newest changes in at most half of what is left, and the prices in the rest.
  const left = room - before.join('\n').length - '\n'.length;
  const history = historyLines(locale, settings.history, Math.floor(left / 2));
  const prices = pricesLine(locale, facts.prices, left - history.join('\n').length - (history.length > 0 ? '\n'.length : 0));
  const text = [...before, prices, ...history].join('\n');
  // The bounds above keep the settings well within a message; this keeps an unforeseen worst case from being refused whole.
  return shorten(text, room);
}
