import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InteractionHandle, TestGuild, User } from 'discord-standin';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { resolveLocale, t, type Locale } from '../../src/i18n/index.ts';
import { usdToUsdTicks } from '../../src/settings/budgets.ts';
import { formatCostIn } from '../../src/wording/cost.ts';
import { makeDataDirectory } from '../support/bot-process.ts';
import { refuseNextAnswer } from '../support/refused-answer.ts';
import { startWorld, type World } from '../support/world.ts';

// An operator's PRICES_FILE naming 30 video models, which every /config answer lists with the server's
// settings: /config show and a change answer within one Discord message (the prices Discord would not take
// are counted, and the file named), and a change is saved and said to be, even when Discord refuses its
// first answer. The expected words are the catalogs'.

const MODELS = Array.from({ length: 30 }, (_, index) => `provider-video-model-${String(index + 1).padStart(2, '0')}`);
const PRICES = {
  video: Object.fromEntries(MODELS.map((model) => [model, { per_second_usd: { '480p': 0.03, '720p': 0.06, '1080p': 0.12 } }])),
};
/** Every price line: the 30 models, the defaults' video and voice for any model. */
const PRICE_COUNT = MODELS.length + 2;
const ENGLISH_ADMIN = resolveLocale('en-US', undefined, 'member');

let world: World;
beforeAll(async () => {
  const prices = join(makeDataDirectory(), 'prices.json');
  writeFileSync(prices, JSON.stringify(PRICES));
  world = await startWorld({ env: { PRICES_FILE: prices } });
}, 60_000);
afterAll(async () => {
  await world?.stop();
});

function config(
  guild: TestGuild,
  user: User,
  subcommand: string,
  options: Record<string, string | number | boolean> = {},
): InteractionHandle {
  return world.discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand, options });
}

/** How many prices the answer names, and how many more it says the PRICES_FILE has. */
function pricesShown(locale: Locale, content: string): { named: number; more: number | undefined } {
  const named = (content.match(/`provider-video-model-\d+`/g) ?? []).length + content.split(t(locale, 'prices.any-model')).length - 1;
  const more = [...Array(PRICE_COUNT + 1).keys()].find((count) => count > 0 && content.includes(t(locale, 'prices.more', { count })));
  return { named, more };
}

describe('/config with 30 priced models', () => {
  it.each([
    ['en-US', 'English'],
    ['de', 'German'],
    ['ja', 'Japanese'],
  ])('shows the settings and as many prices as fit, counting the rest (%s, an admin reading %s)', async (discordLocale) => {
    const guild = world.discord.createGuild({ name: `priced ${discordLocale}` });
    world.discord.setUserLocale(guild.admin.id, discordLocale);
    const locale = resolveLocale(discordLocale, undefined, 'member');
    const { content } = await config(guild, guild.admin, 'show').reply();
    expect(content.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    expect(content).toContain(t(locale, 'config.show.key', { key: t(locale, 'config.key.in-use.operator') }));
    const { named, more } = pricesShown(locale, content);
    expect(named).toBeGreaterThan(5);
    expect(named + (more ?? 0)).toBe(PRICE_COUNT);
  });

  it('saves a budget and answers with it, the prices cut to fit', async () => {
    const guild = world.discord.createGuild({ name: 'budgeted' });
    const answer = await config(guild, guild.admin, 'budget', { server_daily_usd: 12.5 }).reply();
    expect(answer.content.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    expect(answer.content.split('\n')[0]).toBe(t(ENGLISH_ADMIN, 'config.saved'));
    const budget = `${formatCostIn(ENGLISH_ADMIN, usdToUsdTicks(12.5))} for the server a day`;
    expect(answer.content).toContain(budget);
    expect(pricesShown(ENGLISH_ADMIN, answer.content).more).toBeGreaterThan(0);
    // Saved: what /config show reads from the store.
    expect((await config(guild, guild.admin, 'show').reply()).content).toContain(budget);
  });

  it('tells the admin a change was saved when Discord refuses its answer, and the change holds', async () => {
    const guild = world.discord.createGuild({ name: 'refused answer' });
    refuseNextAnswer(world.discord);
    const answer = await config(guild, guild.admin, 'budget', { member_daily_usd: 7 }).reply();
    expect(answer.content).toBe(t(ENGLISH_ADMIN, 'config.saved-unshown', { change: 'set budgets: $7.00 per member a day' }));
    expect((await config(guild, guild.admin, 'show').reply()).content).toContain(
      `${formatCostIn(ENGLISH_ADMIN, usdToUsdTicks(7))} per member a day`,
    );
    expect(
      world.bot.logs.some((line) => line.msg === 'a settings change was saved, but its answer failed; telling the admin it was saved'),
    ).toBe(true);
  });
});
