import { ENGLISH, resolveLocale, t } from '../../src/i18n/index.ts';
import { describe, expect, it } from 'vitest';
import {
  budgetChange,
  checkDefaultModel,
  defaultsChange,
  layerChange,
  limitsChange,
  type BudgetGiven,
  type DefaultsGiven,
  type LimitsGiven,
} from '../../src/settings/config-options.ts';
import { defaultGuildSettings, type GuildSettings } from '../../src/settings/guild-settings.ts';
import { word } from '../../src/wording/notice.ts';

// `/config budget` and `/config limits`: what they refuse (naming the option, in the admin's language), what it keeps, and the
// words the server's history records. What /config show says is test/interactions/settings-answers.test.ts.

const CHANNEL = '400000000000000004';
const OTHER_CHANNEL = '400000000000000005';

function given(options: Partial<BudgetGiven>): BudgetGiven {
  return {
    member_daily_usd: null,
    server_daily_usd: null,
    server_monthly_usd: null,
    confirm_over_usd: null,
    alertChannelId: null,
    clearAlertChannel: false,
    ...options,
  };
}

/** The change applied to `settings`, or the refusal's words. */
function applied(options: Partial<BudgetGiven>, settings: GuildSettings = defaultGuildSettings()) {
  const request = budgetChange(given(options));
  if (!request.ok) return { refused: word(ENGLISH, request.notice) };
  return { description: request.description, spending: request.change(settings).spending };
}

describe('/config budget', () => {
  it('asks for at least one option', () => {
    expect(applied({})).toEqual({
      refused:
        'Give at least one of `member_daily_usd`, `server_daily_usd`, `server_monthly_usd`, `alert_channel`, `confirm_over_usd`, or `clear_alert_channel`.',
    });
  });

  it.each([
    ['member_daily_usd', -1],
    ['server_daily_usd', 1_000_001],
    ['server_monthly_usd', Number.NaN],
    ['confirm_over_usd', Number.POSITIVE_INFINITY],
  ] as const)('refuses %s = %d naming the option, changing nothing', (option, value) => {
    expect(applied({ [option]: value })).toEqual({ refused: `\`${option}\` must be an amount in dollars from 0 (none) to 1,000,000.` });
  });

  it('refuses a budget under half a cent rather than turning it into no budget', () => {
    expect(applied({ server_daily_usd: 0.004 })).toEqual({ refused: '`server_daily_usd` must be at least $0.01 (or 0 for none).' });
    expect(applied({ confirm_over_usd: 0.001 })).toEqual({ refused: '`confirm_over_usd` must be at least $0.01 (or 0 for none).' });
    expect(applied({ server_daily_usd: 0.005 }).spending?.budgets.server_daily_usd).toBe(0.01);
  });

  it('keeps dollars to the cent, as the admin reads them back, and the options left out as they were', () => {
    const first = applied({ member_daily_usd: 1.234, server_daily_usd: 20, confirm_over_usd: 2.1 });
    expect(first).toEqual({
      description: 'set budgets: $1.23 per member a day, $20.00 for the server a day, confirm videos over $2.10',
      spending: { budgets: { member_daily_usd: 1.23, server_daily_usd: 20, server_monthly_usd: 0 }, confirmOverUsd: 2.1 },
    });
    const settings = { ...defaultGuildSettings(), spending: first.spending! };
    expect(applied({ server_monthly_usd: 300.999, server_daily_usd: 0 }, settings)).toEqual({
      description: 'set budgets: no budget for the server a day, $301.00 for the server a month',
      spending: { budgets: { member_daily_usd: 1.23, server_daily_usd: 0, server_monthly_usd: 301 }, confirmOverUsd: 2.1 },
    });
    expect(applied({ confirm_over_usd: 0 }, settings).description).toBe('set budgets: no confirmation');
  });

  it('sets the alert channel, keeps it while other options change, and clears it', () => {
    const set = applied({ alertChannelId: CHANNEL });
    expect(set).toMatchObject({ description: `set budgets: alerts in <#${CHANNEL}>`, spending: { alertChannelId: CHANNEL } });
    const withAlerts = { ...defaultGuildSettings(), spending: set.spending! };
    expect(applied({ server_daily_usd: 5 }, withAlerts).spending).toMatchObject({ alertChannelId: CHANNEL });
    expect(applied({ alertChannelId: OTHER_CHANNEL }, withAlerts).spending).toMatchObject({ alertChannelId: OTHER_CHANNEL });
    const cleared = applied({ clearAlertChannel: true }, withAlerts);
    expect(cleared.description).toBe('set budgets: no alerts');
    expect(cleared.spending).not.toHaveProperty('alertChannelId');
    expect(applied({ alertChannelId: CHANNEL, clearAlertChannel: true })).toEqual({
      refused: 'Give `alert_channel` or `clear_alert_channel`, not both.',
    });
  });
});

describe('/config limits', () => {
  const none: LimitsGiven = { concurrentPerUser: null, dailyPerUser: null, dailyPerServer: null, keyConcurrency: null };
  const limited = (options: Partial<LimitsGiven>, settings: GuildSettings = defaultGuildSettings()) => {
    const request = limitsChange({ ...none, ...options });
    if (!request.ok) return { refused: word(ENGLISH, request.notice) };
    return { description: request.description, limits: request.change(settings).limits };
  };

  it('asks for at least one option, naming key_concurrency with the others', () => {
    expect(limited({})).toEqual({
      refused: 'Give at least one of `concurrent_per_user`, `daily_per_user`, `daily_per_server`, or `key_concurrency`.',
    });
  });

  it("states the key's concurrency, keeps the other limits, and takes it back with 0: learned from the gateway again", () => {
    const settings = defaultGuildSettings();
    settings.limits = { concurrentPerUser: 2, dailyPerUser: 5, dailyPerServer: 0 };
    const stated = limited({ keyConcurrency: 2 }, settings);
    expect(stated).toEqual({
      description: 'set limits: key concurrency 2 at once',
      limits: { concurrentPerUser: 2, dailyPerUser: 5, dailyPerServer: 0, keyConcurrency: 2 },
    });
    const withStated = { ...settings, limits: stated.limits! };
    expect(limited({ dailyPerServer: 40 }, withStated).limits).toEqual({ ...withStated.limits, dailyPerServer: 40 });
    const learned = limited({ keyConcurrency: 0 }, withStated);
    expect(learned.description).toBe('set limits: key concurrency learned from the gateway');
    expect(learned.limits).toEqual({ concurrentPerUser: 2, dailyPerUser: 5, dailyPerServer: 0 });
    expect(learned.limits).not.toHaveProperty('keyConcurrency');
  });

  it.each([101, -1, 2.5, Number.NaN])('refuses key_concurrency = %d naming the option and what 0 means', (keyConcurrency) => {
    expect(limited({ keyConcurrency, dailyPerUser: 3 })).toEqual({
      refused: '`key_concurrency` must be 0 (learn it from the gateway) to 100.',
    });
  });

  it("refuses in the admin's language", () => {
    const german = resolveLocale('de', undefined, 'member');
    const refused = limitsChange({ ...none, keyConcurrency: 500 });
    expect(refused.ok || word(german, refused.notice)).toBe('`key_concurrency` muss zwischen 0 (vom Gateway lernen) und 100 liegen.');
  });
});

describe('/config layer', () => {
  it("refuses a layer it does not know, naming the ones it does in the admin's language", () => {
    const german = resolveLocale('de', undefined, 'member');
    const refused = layerChange('sideways');
    expect(refused.ok || word(german, refused.notice)).toBe(
      t(german, 'config.must-be-one-of', { option: '`layer`', values: '`compat` oder `native`' }),
    );
  });

  it('says the layer was saved in words of its own', () => {
    const request = layerChange('native');
    expect(request.ok && request.note && word(ENGLISH, request.note)).toBe(t(ENGLISH, 'config.layer.saved', { layer: 'native' }));
  });
});

describe('a default model', () => {
  it("is refused when the key cannot use it, and accepted when the key's models could not be read", () => {
    expect(checkDefaultModel('m1', ['m2', 'm3'])).toEqual({ model: 'm1', available: ['m2', 'm3'] });
    expect(checkDefaultModel('m2', ['m2', 'm3'])).toBeUndefined();
    expect(checkDefaultModel('m1', undefined)).toBeUndefined();
    expect(checkDefaultModel('m1', [])).toBeUndefined();
  });
});

describe('/config defaults ping', () => {
  const none: DefaultsGiven = {
    model: undefined,
    resolution: undefined,
    duration: undefined,
    aspectRatio: undefined,
    buttons: undefined,
    reset: false,
  };

  it('turns the ping off and on again, keeping the other defaults, and names it in the history', () => {
    const settings = defaultGuildSettings();
    settings.defaults = { buttons: 'owner', variants: 2 };
    const off = defaultsChange({ ...none, ping: 'off' });
    if (!off.ok) throw new Error(word(ENGLISH, off.notice));
    expect(off.description).toBe('set video defaults: ping off');
    const turnedOff = off.change(settings);
    expect(turnedOff.defaults).toEqual({ buttons: 'owner', variants: 2, ping: 'off' });
    const on = defaultsChange({ ...none, ping: 'on' });
    expect(on.ok && on.change(turnedOff).defaults.ping).toBe('on');
  });

  it('refuses a value that is not on or off, naming the two', () => {
    const refused = defaultsChange({ ...none, ping: 'loud' });
    expect(refused.ok || word(ENGLISH, refused.notice)).toBe(
      t(ENGLISH, 'config.must-be-one-of', { option: '`ping`', values: '`on` or `off`' }),
    );
  });

  it('is forgotten with the other defaults by reset: back to on', () => {
    const settings = defaultGuildSettings();
    settings.defaults = { ping: 'off' };
    const reset = defaultsChange({ ...none, reset: true });
    expect(reset.ok && reset.change(settings).defaults.ping).toBeUndefined();
  });
});
