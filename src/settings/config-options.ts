import type { SubcommandDefinition } from '../discord/command-options.ts';
import { MAX_VARIANTS } from '../ports/video-defaults.ts';
import { ASPECT_RATIOS, GENERATION_DURATION, LAYERS, RESOLUTIONS, type Layer } from '../gateway/spec.ts';
import { refuse, type Result } from '../lib/result.ts';
import { formatCost } from '../wording/cost.ts';
import { usdToTicks } from './budgets.ts';
import { FEATURES, RESULT_BUTTONS, STORAGE_MAX_DAYS, type BudgetName, type GuildSettings } from './guild-settings.ts';

// /config's subcommands: what each asks, what it accepts (and why not, to the admin), and the change it
// makes with the words the server's history records it in. commands/config.ts reads the options and hands
// them here. What the subcommands and options are called and described, in every language, is the catalogs'
// (`command.config.*` in src/i18n/catalogs/).

const MAX_LIMIT = 10_000;
/** A budget or confirmation threshold, in dollars: high enough for any server, low enough to be a typo's bound. */
const MAX_USD = 1_000_000;

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

/** A change an admin asked for: how the history words it, and what it does to the settings. */
export type SettingsChangeRequest = Result<{ description: string; change: (settings: GuildSettings) => GuildSettings; note?: string }>;

export function layerChange(given: string): SettingsChangeRequest {
  const layer: Layer | undefined = LAYERS.find((candidate) => candidate === given);
  if (!layer) return refuse('`layer` must be compat or native.');
  return {
    ok: true,
    description: `set the layer to ${layer}`,
    change: (settings) => ({ ...settings, layer }),
    note: `Saved: new tasks use the ${layer} layer (tasks already running stay on theirs).`,
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
export function defaultsChange(given: DefaultsGiven): SettingsChangeRequest {
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
    return refuse('Give at least one of `model`, `resolution`, `duration`, `aspect_ratio`, `buttons`, `variants`, or `reset`.');
  }
  const { variants } = given;
  if (variants !== undefined && (!Number.isInteger(variants) || variants < 1 || variants > MAX_VARIANTS))
    return refuse(`\`variants\` must be 1 to ${MAX_VARIANTS}.`);
  const buttons = RESULT_BUTTONS.find((value) => value === given.buttons);
  if (given.buttons !== undefined && buttons === undefined) return refuse(`\`buttons\` must be one of ${RESULT_BUTTONS.join(', ')}.`);
  if (resolution !== undefined && !RESOLUTIONS.some((value) => value === resolution))
    return refuse(`\`resolution\` must be one of ${RESOLUTIONS.join(', ')}.`);
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((value) => value === aspectRatio))
    return refuse(`\`aspect_ratio\` must be one of ${ASPECT_RATIOS.join(', ')}.`);
  if (duration !== undefined && (duration < GENERATION_DURATION.min || duration > GENERATION_DURATION.max)) {
    return refuse(`\`duration\` must be ${GENERATION_DURATION.min} to ${GENERATION_DURATION.max} seconds.`);
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

/** A default model the server's key cannot use; `available` undefined or empty: the list could not be read, and the model is accepted. */
export function checkDefaultModel(model: string, available: readonly string[] | undefined): string | undefined {
  if (!available || available.length === 0 || available.includes(model)) return undefined;
  return `\`model\`: ${model} is not available to this server's key. Available: ${available.join(', ')}.`;
}

export function storageChange(keepDays: number, publicLink: boolean): SettingsChangeRequest {
  if (keepDays < 0 || keepDays > STORAGE_MAX_DAYS) return refuse(`\`keep_days\` must be 0 (not kept) to ${STORAGE_MAX_DAYS}.`);
  return {
    ok: true,
    description: `set storage to ${keepDays} days${publicLink ? ' with a public link' : ''}`,
    change: (settings) => ({ ...settings, storage: { keepDays, publicLink } }),
  };
}

export function rolesChange(givenFeature: string, action: string, roleId: string | undefined): SettingsChangeRequest {
  const feature = FEATURES.find((candidate) => candidate === givenFeature);
  if (!feature) return refuse('`feature` must be video or voice.');
  let description: string;
  let next: (current: string[]) => string[];
  if (action === 'clear') {
    description = `allowed everyone on /${feature}`;
    next = () => [];
  } else if (roleId === undefined) {
    return refuse('`role`: pick the role to allow or stop allowing.');
  } else if (action === 'add') {
    description = `allowed <@&${roleId}> on /${feature}`;
    next = (current) => [...new Set([...current, roleId])];
  } else if (action === 'remove') {
    description = `stopped allowing <@&${roleId}> on /${feature}`;
    next = (current) => current.filter((id) => id !== roleId);
  } else {
    return refuse('`action` must be add, remove or clear.');
  }
  return {
    ok: true,
    description,
    change: (settings) => ({ ...settings, roles: { ...settings.roles, [feature]: next(settings.roles[feature]) } }),
  };
}

/** null: the option was left out. */
export type LimitsGiven = Record<keyof GuildSettings['limits'], number | null>;

export function limitsChange(given: LimitsGiven): SettingsChangeRequest {
  if (Object.values(given).every((value) => value === null))
    return refuse('Give at least one of `concurrent_per_user`, `daily_per_user`, `daily_per_server`.');
  for (const [option, value] of [
    ['concurrent_per_user', given.concurrentPerUser],
    ['daily_per_user', given.dailyPerUser],
    ['daily_per_server', given.dailyPerServer],
  ] as const) {
    if (value !== null && (value < 0 || value > MAX_LIMIT)) return refuse(`\`${option}\` must be 0 (no limit) to ${MAX_LIMIT}.`);
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

export function budgetChange(given: BudgetGiven): SettingsChangeRequest {
  const amounts = [
    ['member_daily_usd', given.member_daily_usd],
    ['server_daily_usd', given.server_daily_usd],
    ['server_monthly_usd', given.server_monthly_usd],
    ['confirm_over_usd', given.confirm_over_usd],
  ] as const;
  if (amounts.every(([, value]) => value === null) && given.alertChannelId === null && !given.clearAlertChannel) {
    return refuse(
      'Give at least one of `member_daily_usd`, `server_daily_usd`, `server_monthly_usd`, `alert_channel`, `confirm_over_usd`, or `clear_alert_channel`.',
    );
  }
  for (const [option, value] of amounts) {
    if (value !== null && !(Number.isFinite(value) && value >= 0 && value <= MAX_USD))
      return refuse(`\`${option}\` must be an amount in dollars from 0 (none) to ${MAX_USD.toLocaleString('en-US')}.`);
    // Kept to the cent below, an amount under half a cent would become 0: no budget at all, the opposite of what was asked.
    if (value !== null && value > 0 && Math.round(value * 100) === 0)
      return refuse(`\`${option}\` must be at least $0.01 (or 0 for none).`);
  }
  if (given.alertChannelId !== null && given.clearAlertChannel) return refuse('Give `alert_channel` or `clear_alert_channel`, not both.');
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
  /** The prices estimates are made with, one line each. */
  prices: readonly string[];
}

/**
 * `/config show`'s first line: what stands between this server and a working bot, in one look (a gateway
 * key for /video and /voice, the operator's encryption secret for a key of the server's own), or that
 * nothing does.
 */
function missingLine(facts: ShownFacts): string {
  const missing: string[] = [];
  if (!facts.hasKey) missing.push('a gateway key: `/video` and `/voice` cannot work until a server admin sets one with `/config key`');
  if (!facts.canStoreKeys)
    missing.push("the bot's encryption secret: the operator has not set KEY_ENCRYPTION_SECRET, so no server can store a key of its own");
  return missing.length === 0 ? '**Missing:** nothing; `/video` and `/voice` are ready to use.' : `**Missing:** ${missing.join('; ')}.`;
}

/** `/config show`, and what every change answers with. */
export function describeServerSettings(settings: GuildSettings, facts: ShownFacts): string {
  const roles = (ids: string[]) => (ids.length === 0 ? 'everyone' : ids.map((id) => `<@&${id}>`).join(', '));
  const { defaults, storage, limits, spending } = settings;
  const { budgets } = spending;
  return [
    missingLine(facts),
    `**Gateway key in use:** ${facts.keyInUse}`,
    `**Layer:** ${settings.layer ?? `${facts.defaultLayer} (the operator's default)`}`,
    `**Defaults:** model ${defaults.model ?? 'latest'}, ${defaults.resolution ?? 'gateway default'} resolution, ${defaults.duration === undefined ? 'gateway default' : `${defaults.duration} s`}, aspect ratio ${defaults.aspectRatio ?? 'gateway default'}`,
    `**Buttons under a video** (Extend, Edit, Regenerate): ${defaults.buttons === 'owner' ? 'only the member who made the video may press them' : 'anyone may press them'}`,
    `**Storage:** ${storage.keepDays === 0 ? 'videos are not kept beyond the temporary link' : `kept ${storage.keepDays} days`}${storage.publicLink ? ', with a public link' : ''}`,
    `**Who may use /video:** ${roles(settings.roles.video)}; **/voice:** ${roles(settings.roles.voice)}`,
    `**Limits:** ${limit(limits.concurrentPerUser)} in progress per member, ${limit(limits.dailyPerUser)} a day per member, ${limit(limits.dailyPerServer)} a day for the server`,
    `**Budgets** (video and voice): ${budgetWords(budgets.member_daily_usd)} per member a day, ${budgetWords(budgets.server_daily_usd)} for the server a day, ${budgetWords(budgets.server_monthly_usd)} a month; alerts ${spending.alertChannelId === undefined ? 'not posted' : `in <#${spending.alertChannelId}>`}; ${spending.confirmOverUsd === 0 ? 'no video waits for a confirmation' : `videos estimated over ${usd(spending.confirmOverUsd)} wait for their member's confirmation`}`,
    `**Prices used for estimates** (what the gateway reports is what counts): ${facts.prices.join('; ')}`,
    settings.history.length > 0
      ? `**Recent changes:**\n${settings.history
          .slice(0, 5)
          .map((entry) => `<t:${Math.floor(entry.at / 1000)}:R> <@${entry.by}> ${entry.change}`)
          .join('\n')}`
      : '',
  ]
    .filter((line) => line !== '')
    .join('\n');
}
