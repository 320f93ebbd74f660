import type { SubcommandDefinition } from '../discord/command-options.ts';
import { MAX_KEY_CONCURRENCY } from '../ports/guild-policy.ts';
import { MAX_VARIANTS } from '../ports/video-defaults.ts';
import { ASPECT_RATIOS, GENERATION_DURATION, LAYERS, RESOLUTIONS, type Layer } from '../gateway/spec.ts';
import { formatCost } from '../wording/cost.ts';
import { notice, refuse, type Notice, type Outcome, type Phrase, type Refusal } from '../wording/notice.ts';
import { shorten } from '../lib/text.ts';
import { BLOCKED_WORDS_LIMITS, blockedWordKey, blockedWordsRefusals } from './blocked-words.ts';
import { usdToUsdTicks } from './budgets.ts';
import {
  FEATURES,
  READY_PINGS,
  RESULT_BUTTONS,
  STORAGE_MAX_DAYS,
  type BudgetName,
  type GuildSettings,
  type ServerRules,
} from './guild-settings.ts';

// /config's subcommands: what each asks, what it accepts (and why not, as a notice the command words in the
// admin's language), and the change it makes with the words the server's history records it in (English:
// the history is stored, and read by every admin of the server). commands/config.ts reads the options and
// hands them here. What the subcommands and options are called and described, in every language, is the
// catalogs' (`command.config.*` in src/i18n/catalogs/); what /config show says, the interaction layer's
// (src/interactions/settings-answers.ts).

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
      {
        type: 'string',
        name: 'ping',
        choices: [{ value: 'on' }, { value: 'off' }],
      },
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
      // 0, as for the other limits, takes back what was stated: the key's line learns it from the gateway again.
      { type: 'integer', name: 'key_concurrency', min: 0, max: MAX_KEY_CONCURRENCY },
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
  // The moderators' rules: options rather than subcommands, as for /config budget, so that one command can
  // change several rules at once, and without any it shows them in full.
  rules: {
    name: 'rules',
    options: [
      {
        type: 'string',
        name: 'blocked_words_add',
        descriptionValues: { max: BLOCKED_WORDS_LIMITS.rules, characters: BLOCKED_WORDS_LIMITS.ruleCharacters },
      },
      { type: 'string', name: 'blocked_words_remove' },
      { type: 'boolean', name: 'blocked_words_clear' },
      { type: 'text-or-forum-channel', name: 'video_channel_add' },
      { type: 'text-or-forum-channel', name: 'video_channel_remove' },
      { type: 'boolean', name: 'video_channels_clear' },
      { type: 'user', name: 'deny' },
      { type: 'user', name: 'allow' },
      { type: 'text-channel', name: 'log_channel' },
      { type: 'boolean', name: 'clear_log_channel' },
    ],
  },
} as const satisfies Record<string, SubcommandDefinition>;

/**
 * A change an admin asked for: how the history words it, and what it does to the settings; `note`: what
 * the answer says instead of "saved". Refused: why, as a notice.
 */
export type SettingsChangeRequest = Outcome<{ description: string; change: (settings: GuildSettings) => GuildSettings; note?: Notice }>;

/** `a, b or c` in the reader's language, each in code style: the values an option accepts. */
function oneOf(values: readonly (string | number)[]): Phrase {
  return { phrase: 'list', items: values.map((value) => `\`${value}\``), type: 'disjunction' };
}

/** "Give at least one of …" naming the options. */
function atLeastOne(options: readonly string[]): Refusal {
  return refuse('config.at-least-one', { options: oneOf(options) });
}

/** "`option` must be one of …" naming the values it takes. */
function mustBeOneOf(option: string, values: readonly string[]): Refusal {
  return refuse('config.must-be-one-of', { option: `\`${option}\``, values: oneOf(values) });
}

export function layerChange(given: string): SettingsChangeRequest {
  const layer: Layer | undefined = LAYERS.find((candidate) => candidate === given);
  if (!layer) return mustBeOneOf('layer', LAYERS);
  return {
    ok: true,
    description: `set the layer to ${layer}`,
    change: (settings) => ({ ...settings, layer }),
    note: notice('config.layer.saved', { layer }),
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
  /** Whether a member is pinged when their video is ready (`on`, `off`). */
  ping?: string | undefined;
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
    given.variants === undefined &&
    given.ping === undefined
  ) {
    return atLeastOne(['model', 'resolution', 'duration', 'aspect_ratio', 'buttons', 'variants', 'ping', 'reset']);
  }
  const { variants } = given;
  if (variants !== undefined && (!Number.isInteger(variants) || variants < 1 || variants > MAX_VARIANTS))
    return refuse('config.defaults.variants-range', { max: MAX_VARIANTS });
  const buttons = RESULT_BUTTONS.find((value) => value === given.buttons);
  if (given.buttons !== undefined && buttons === undefined) return mustBeOneOf('buttons', RESULT_BUTTONS);
  const ping = READY_PINGS.find((value) => value === given.ping);
  if (given.ping !== undefined && ping === undefined) return mustBeOneOf('ping', READY_PINGS);
  if (resolution !== undefined && !RESOLUTIONS.some((value) => value === resolution)) return mustBeOneOf('resolution', RESOLUTIONS);
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((value) => value === aspectRatio)) return mustBeOneOf('aspect_ratio', ASPECT_RATIOS);
  if (duration !== undefined && (duration < GENERATION_DURATION.min || duration > GENERATION_DURATION.max)) {
    return refuse('config.defaults.duration-range', { min: GENERATION_DURATION.min, max: GENERATION_DURATION.max });
  }
  const defaults = {
    ...(model === undefined ? {} : { model }),
    ...(resolution === undefined ? {} : { resolution }),
    ...(duration === undefined ? {} : { duration }),
    ...(aspectRatio === undefined ? {} : { aspectRatio }),
    ...(buttons === undefined ? {} : { buttons }),
    ...(variants === undefined ? {} : { variants }),
    ...(ping === undefined ? {} : { ping }),
  };
  const words = [
    model,
    resolution,
    duration === undefined ? undefined : `${duration} s`,
    aspectRatio,
    buttons === undefined ? undefined : `buttons ${buttons}`,
    variants === undefined ? undefined : `${variants} variant${variants === 1 ? '' : 's'}`,
    ping === undefined ? undefined : `ping ${ping}`,
  ];
  return {
    ok: true,
    description: `set video defaults: ${words.filter((part) => part !== undefined).join(', ')}`,
    change: (settings) => ({ ...settings, defaults: { ...settings.defaults, ...defaults } }),
  };
}

/** A default model the server's key cannot use, and the models it can. */
export interface UnavailableModel {
  model: string;
  available: readonly string[];
}

/**
 * A default model the server's key cannot use; `available` undefined or empty: the list could not be read,
 * and the model is accepted.
 */
export function checkDefaultModel(model: string, available: readonly string[] | undefined): UnavailableModel | undefined {
  if (!available || available.length === 0 || available.includes(model)) return undefined;
  return { model, available };
}

export function storageChange(keepDays: number, publicLink: boolean): SettingsChangeRequest {
  if (keepDays < 0 || keepDays > STORAGE_MAX_DAYS) return refuse('config.storage.keep-days-range', { max: STORAGE_MAX_DAYS });
  return {
    ok: true,
    description: `set storage to ${keepDays} days${publicLink ? ' with a public link' : ''}`,
    change: (settings) => ({ ...settings, storage: { keepDays, publicLink } }),
  };
}

export function rolesChange(givenFeature: string, action: string, roleId: string | undefined): SettingsChangeRequest {
  const feature = FEATURES.find((candidate) => candidate === givenFeature);
  if (!feature) return mustBeOneOf('feature', FEATURES);
  let description: string;
  let next: (current: string[]) => string[];
  if (action === 'clear') {
    description = `allowed everyone on /${feature}`;
    next = () => [];
  } else if (roleId === undefined) {
    return refuse('config.roles.pick-role');
  } else if (action === 'add') {
    description = `allowed <@&${roleId}> on /${feature}`;
    next = (current) => [...new Set([...current, roleId])];
  } else if (action === 'remove') {
    description = `stopped allowing <@&${roleId}> on /${feature}`;
    next = (current) => current.filter((id) => id !== roleId);
  } else {
    return mustBeOneOf('action', ['add', 'remove', 'clear']);
  }
  return {
    ok: true,
    description,
    change: (settings) => ({ ...settings, roles: { ...settings.roles, [feature]: next(settings.roles[feature]) } }),
  };
}

/** null: the option was left out; `keyConcurrency` 0: learn it from the gateway again. */
export type LimitsGiven = Record<keyof GuildSettings['limits'], number | null>;

export function limitsChange(given: LimitsGiven): SettingsChangeRequest {
  if (Object.values(given).every((value) => value === null))
    return atLeastOne(['concurrent_per_user', 'daily_per_user', 'daily_per_server', 'key_concurrency']);
  for (const [option, value] of [
    ['concurrent_per_user', given.concurrentPerUser],
    ['daily_per_user', given.dailyPerUser],
    ['daily_per_server', given.dailyPerServer],
  ] as const) {
    if (value !== null && (value < 0 || value > MAX_LIMIT))
      return refuse('config.limits.range', { option: `\`${option}\``, max: MAX_LIMIT });
  }
  const stated = given.keyConcurrency;
  // Discord keeps to the option's bounds; a caller that does not (a test, another front) is told the same.
  if (stated !== null && !(Number.isInteger(stated) && stated >= 0 && stated <= MAX_KEY_CONCURRENCY))
    return refuse('config.limits.key-concurrency-range', { option: '`key_concurrency`', max: MAX_KEY_CONCURRENCY });
  const parts = [
    given.concurrentPerUser === null ? undefined : `${limit(given.concurrentPerUser)} in progress per member`,
    given.dailyPerUser === null ? undefined : `${limit(given.dailyPerUser)} a day per member`,
    given.dailyPerServer === null ? undefined : `${limit(given.dailyPerServer)} a day for the server`,
    stated === null ? undefined : stated === 0 ? 'key concurrency learned from the gateway' : `key concurrency ${stated} at once`,
  ];
  return {
    ok: true,
    description: `set limits: ${parts.filter((part) => part !== undefined).join(', ')}`,
    change: (settings) => {
      const { keyConcurrency: current, ...limits } = settings.limits;
      const keyConcurrency = stated === null ? current : stated === 0 ? undefined : stated;
      return {
        ...settings,
        limits: {
          concurrentPerUser: given.concurrentPerUser ?? limits.concurrentPerUser,
          dailyPerUser: given.dailyPerUser ?? limits.dailyPerUser,
          dailyPerServer: given.dailyPerServer ?? limits.dailyPerServer,
          ...(keyConcurrency === undefined ? {} : { keyConcurrency }),
        },
      };
    },
  };
}

/** null: the option was left out. */
export type BudgetGiven = Record<BudgetName | 'confirm_over_usd', number | null> & {
  alertChannelId: string | null;
  clearAlertChannel: boolean;
};

function usd(amount: number): string {
  return formatCost(usdToUsdTicks(amount));
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
    return atLeastOne([
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
      return refuse('config.budget.range', { option: `\`${option}\``, max: { phrase: 'number', value: MAX_USD } });
    // Kept to the cent below, an amount under half a cent would become 0: no budget at all, the opposite of what was asked.
    if (value !== null && value > 0 && Math.round(value * 100) === 0)
      return refuse('config.budget.at-least-a-cent', { option: `\`${option}\``, cent: { phrase: 'cost', usdTicks: usdToUsdTicks(0.01) } });
  }
  if (given.alertChannelId !== null && given.clearAlertChannel) return refuse('config.budget.not-both');
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

// ---- /config rules: the moderators' rules (issue 36) ---------------------------------------------

/** The most of a word or phrase a refusal or the history quotes: a refused one can be thousands of characters. */
const WORD_QUOTED = 30;
/** The words a refusal or the history names, before "and N more". */
const WORDS_NAMED = 5;

/**
 * An option's words and phrases: separated by commas (a Japanese or Chinese comma too, as those keyboards
 * type it), each trimmed and its runs of spaces made one, empty ones left out.
 */
export function parseBlockedWords(text: string): string[] {
  return text
    .split(/[,\uff0c\u3001\ufe50\u060c]/u)
    .map((word) => word.trim().replace(/\s+/gu, ' '))
    .filter((word) => word !== '');
}

/** `current` with `added` after it, leaving out what it blocks already (whatever the case or punctuation). */
function withWords(current: readonly string[], added: readonly string[]): string[] {
  const keys = new Set(current.map(blockedWordKey));
  const next = [...current];
  for (const word of added) {
    const key = blockedWordKey(word);
    if (keys.has(key)) continue;
    keys.add(key);
    next.push(word);
  }
  return next;
}

/** `current` without what `removed` names, however it is written ("DRAGON" removes `dragon`). */
function withoutWords(current: readonly string[], removed: readonly string[]): string[] {
  const keys = new Set(removed.map(blockedWordKey));
  return current.filter((word) => !keys.has(blockedWordKey(word)));
}

/** What kind of channel an admin picked: one where people write (text, announcements), a forum, or another. */
export type ChannelKind = 'text' | 'forum' | 'other';

/** A channel an admin picked (Discord offers only the server's own). */
export interface PickedChannel {
  id: string;
  kind: ChannelKind;
}

/** What the bot needs to post in a channel, by the names the catalogs give them (`config.rules.permission`). */
export type PostPermission = 'view' | 'send';

/** A log channel an admin picked, and what the bot lacks to post there (empty: nothing, or not known). */
export interface PickedLogChannel extends PickedChannel {
  missing: readonly PostPermission[];
}

/** What /config rules was given; null or false: the option was left out. */
export interface RulesGiven {
  blockedWordsAdd: string | null;
  blockedWordsRemove: string | null;
  blockedWordsClear: boolean;
  videoChannelAdd: PickedChannel | null;
  videoChannelRemove: string | null;
  videoChannelsClear: boolean;
  /** Member ids. */
  deny: string | null;
  allow: string | null;
  logChannel: PickedLogChannel | null;
  clearLogChannel: boolean;
}

/** Who asks, the server's owner, and the rules as they stand (the count of blocked words is checked against them). */
export interface RulesContext {
  by: string;
  ownerId: string | undefined;
  current: ServerRules;
}

/** Whether /config rules was given anything to change (without, it shows the rules in full). */
export function changesRules(given: RulesGiven): boolean {
  return (
    given.blockedWordsAdd !== null ||
    given.blockedWordsRemove !== null ||
    given.blockedWordsClear ||
    given.videoChannelAdd !== null ||
    given.videoChannelRemove !== null ||
    given.videoChannelsClear ||
    given.deny !== null ||
    given.allow !== null ||
    given.logChannel !== null ||
    given.clearLogChannel
  );
}

function code(option: string): string {
  return `\`${option}\``;
}

function notBoth(first: string, second: string): Refusal {
  return refuse('config.rules.not-both', { first: code(first), second: code(second) });
}

/** Words as a refusal names them, in code style: the first WORDS_NAMED, shortened, then how many more. */
function namedWords(words: readonly string[]): Phrase {
  const named = words.slice(0, WORDS_NAMED).map((word) => code(shorten(word.replaceAll('`', "'"), WORD_QUOTED)));
  const more = words.length - named.length;
  return { phrase: 'list', items: more > 0 ? [...named, notice('config.rules.more-words', { count: more })] : named };
}

/** Words as the history records them (English, stored): quoted, the first WORDS_NAMED, then how many more. */
function quotedWords(words: readonly string[]): string {
  const named = words.slice(0, WORDS_NAMED).map((word) => `"${shorten(word, WORD_QUOTED)}"`);
  const more = words.length - named.length;
  return more > 0 ? `${named.join(', ')} and ${more} more` : named.join(', ');
}

/** Why words offered to `blocked_words_add` cannot be kept, added to what is blocked; undefined: they can. */
function blockedWordsRefusal(added: readonly string[], next: readonly string[]): Refusal | undefined {
  const option = code('blocked_words_add');
  const refusals = blockedWordsRefusals(added);
  const tooLong = refusals.flatMap((refusal) => (refusal.limit === 'rule-characters' ? [refusal.rule] : []));
  if (tooLong.length > 0)
    return refuse('config.rules.words-too-long', { option, max: BLOCKED_WORDS_LIMITS.ruleCharacters, words: namedWords(tooLong) });
  const empty = refusals.flatMap((refusal) => (refusal.limit === 'rule-empty' ? [refusal.rule] : []));
  if (empty.length > 0) return refuse('config.rules.words-empty', { option, words: namedWords(empty) });
  if (next.length > BLOCKED_WORDS_LIMITS.rules)
    return refuse('config.rules.too-many-words', { option, max: BLOCKED_WORDS_LIMITS.rules, count: next.length });
  return undefined;
}

/**
 * A change of the moderators' rules, checked: blocked words within BLOCKED_WORDS_LIMITS, channels of the
 * right kind (a log channel the bot can post in), and no admin denying themselves or the server's owner.
 * Several options at once make one change, recorded as one line of the history.
 */
export function rulesChange(given: RulesGiven, context: RulesContext): SettingsChangeRequest {
  if (given.blockedWordsClear && given.blockedWordsAdd !== null) return notBoth('blocked_words_add', 'blocked_words_clear');
  if (given.blockedWordsClear && given.blockedWordsRemove !== null) return notBoth('blocked_words_remove', 'blocked_words_clear');
  if (given.videoChannelsClear && given.videoChannelAdd !== null) return notBoth('video_channel_add', 'video_channels_clear');
  if (given.videoChannelsClear && given.videoChannelRemove !== null) return notBoth('video_channel_remove', 'video_channels_clear');
  if (given.videoChannelAdd !== null && given.videoChannelAdd.id === given.videoChannelRemove)
    return notBoth('video_channel_add', 'video_channel_remove');
  if (given.deny !== null && given.deny === given.allow) return notBoth('deny', 'allow');
  if (given.logChannel !== null && given.clearLogChannel) return notBoth('log_channel', 'clear_log_channel');

  const added = given.blockedWordsAdd === null ? [] : parseBlockedWords(given.blockedWordsAdd);
  const removed = given.blockedWordsRemove === null ? [] : parseBlockedWords(given.blockedWordsRemove);
  for (const [option, text, words] of [
    ['blocked_words_add', given.blockedWordsAdd, added],
    ['blocked_words_remove', given.blockedWordsRemove, removed],
  ] as const) {
    if (text !== null && words.length === 0) return refuse('config.rules.no-words', { option: code(option) });
  }
  const blocked = (current: readonly string[]) => (given.blockedWordsClear ? [] : withWords(withoutWords(current, removed), added));
  if (added.length > 0) {
    const refusal = blockedWordsRefusal(added, blocked(context.current.blockedWords));
    if (refusal) return refusal;
  }

  const channelAdded = given.videoChannelAdd;
  if (channelAdded !== null && channelAdded.kind === 'other')
    return refuse('config.rules.not-a-video-channel', { option: code('video_channel_add'), channel: `<#${channelAdded.id}>` });
  const log = given.logChannel;
  if (log !== null && log.kind !== 'text')
    return refuse('config.rules.not-a-log-channel', { option: code('log_channel'), channel: `<#${log.id}>` });
  if (log !== null && log.missing.length > 0) {
    return refuse('config.rules.log-channel-cannot-post', {
      channel: `<#${log.id}>`,
      missing: { phrase: 'list', items: log.missing.map((permission) => notice('config.rules.permission', { permission })) },
    });
  }
  if (given.deny !== null && given.deny === context.by) return refuse('config.rules.deny-self');
  if (given.deny !== null && given.deny === context.ownerId) return refuse('config.rules.deny-owner');

  const parts = [
    given.blockedWordsClear ? 'cleared the blocked words' : undefined,
    removed.length > 0 ? `unblocked ${quotedWords(removed)}` : undefined,
    added.length > 0 ? `blocked ${quotedWords(added)}` : undefined,
    given.videoChannelsClear ? 'allowed /video in every channel' : undefined,
    given.videoChannelRemove === null ? undefined : `stopped allowing /video in <#${given.videoChannelRemove}>`,
    channelAdded === null ? undefined : `allowed /video in <#${channelAdded.id}>`,
    given.deny === null ? undefined : `denied <@${given.deny}> the bot`,
    given.allow === null ? undefined : `allowed <@${given.allow}> the bot again`,
    log === null ? undefined : `log in <#${log.id}>`,
    given.clearLogChannel ? 'no log channel' : undefined,
  ];
  return {
    ok: true,
    description: `set rules: ${parts.filter((part) => part !== undefined).join(', ')}`,
    change: (settings) => {
      const { logChannelId: currentLog, ...rules } = settings.rules;
      let blockedWords = blocked(rules.blockedWords);
      // Another admin's words, added since the count was checked, could take the set past its limit: theirs
      // stand, and this change leaves the words as they are (what it answers shows them).
      if (blockedWords.length > BLOCKED_WORDS_LIMITS.rules && blockedWords.length > rules.blockedWords.length)
        blockedWords = rules.blockedWords;
      let videoChannels = given.videoChannelsClear ? [] : rules.videoChannels.filter((id) => id !== given.videoChannelRemove);
      if (channelAdded !== null) videoChannels = [...new Set([...videoChannels, channelAdded.id])];
      let denied = rules.denied.filter((id) => id !== given.allow);
      if (given.deny !== null) denied = [...new Set([...denied, given.deny])];
      const logChannelId = given.clearLogChannel ? undefined : (log?.id ?? currentLog);
      return {
        ...settings,
        rules: { blockedWords, videoChannels, denied, ...(logChannelId === undefined ? {} : { logChannelId }) },
      };
    },
  };
}
