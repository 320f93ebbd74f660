import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandRun, TestGuild } from 'discord-standin';
import { resolveLocale, t } from '../../src/i18n/index.ts';
import { budgetName, spentBudgetNotice, usdToUsdTicks } from '../../src/settings/budgets.ts';
import { word } from '../../src/wording/notice.ts';
import { discordRelativeTime, nextUtcMidnight } from '../../src/settings/limits.ts';
import { formatCostIn } from '../../src/wording/cost.ts';
import { makeDataDirectory } from '../support/bot-process.ts';
import { startWorld, type World } from '../support/world.ts';

// A server whose language is French (Discord's preferred_locale, which GUILD_CREATE carries): what the bot
// posts in its channels (the conversation's notices, budget alerts) is French, while the admin who asked,
// whose own Discord is in English, is answered in English. Its conversation was set to German (`/voice
// settings language`): what the bot says aloud there, and the language the model falls back to, is German.
// The expected words are the catalog's, not copies of them. Voice costs $1 a second here, so a $3 budget
// runs out in seconds.

const PRICES = { voice: { '*': { per_minute_usd: 60 } } };
const BUDGET_USD = 3;

let world: World;
beforeAll(async () => {
  const prices = join(makeDataDirectory(), 'prices.json');
  writeFileSync(prices, JSON.stringify(PRICES));
  world = await startWorld({ env: { PRICES_FILE: prices } });
  // A short goodbye: the emulator speaks a force_message as a tone of 5 ms per character.
  world.emulator.realtime.options.toneMsPerCharacter = 5;
}, 60_000);
afterAll(async () => {
  await world?.stop();
});

function run(guild: TestGuild, user: CommandRun['user'], command: string, subcommand?: string, options?: CommandRun['options']) {
  return world.discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command, subcommand, options });
}

describe('a server in French', () => {
  it('posts its voice notices and budget alerts in French, says its goodbye in the German the conversation speaks', async () => {
    const { discord, emulator } = world;
    const guild = discord.createGuild({ name: 'serveur français', locale: 'fr' });
    const french = resolveLocale(undefined, 'fr', 'channel');
    expect(french).toBe('fr');
    const channel = `<#${guild.voiceChannelId}>`;
    const budget = await run(guild, guild.admin, 'config', 'budget', {
      server_daily_usd: BUDGET_USD,
      alert_channel: guild.textChannelId,
    }).reply();
    // The admin's own Discord is in English: their private answer is English.
    expect(budget.content).toContain('$3.00 for the server a day');
    await run(guild, guild.admin, 'voice', 'settings', { language: 'de' }).reply();
    const german = resolveLocale('de', undefined, 'member');

    const sessionsBefore = emulator.realtime.sessions.length;
    discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
    try {
      expect((await run(guild, guild.admin, 'voice', 'join').reply()).content).toMatch(/^Joined/);
      const joined = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('🎙️'));
      // Each command it names is a mention of the id the stand-in gave it.
      const mentions = { ignoreMe: '</voice ignore-me:ID>', listenToMe: '</voice listen-to-me:ID>' };
      const shown = joined.content.replace(/<\/voice ([a-z-]+):\d+>/g, '</voice $1:ID>');
      expect(shown.startsWith(t(french, 'voice.joined', { channel, mode: 'open', ...mentions }))).toBe(true);
      const instructions = JSON.stringify(emulator.realtime.sessions.slice(sessionsBefore).map((session) => session.serverEvents));
      expect(instructions).toContain("If the speaker's language is unclear, answer in German.");

      const room = { budget: 'server_daily_usd', limitUsdTicks: usdToUsdTicks(BUDGET_USD) } as const;
      const resetsAt = nextUtcMidnight(Date.now());
      const reason = word(french, spentBudgetNotice({ ...room, leftUsdTicks: 0, resetsAt }));
      const warning = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('⏳'), 15_000);
      expect(warning.content).toContain(reason);
      const used = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('🛑'), 15_000);
      expect(used.content).toBe(
        t(french, 'budget.alert.used-all', { budgetName: word(french, budgetName(room)), resets: discordRelativeTime(resetsAt) }),
      );
      // Said aloud in German, the budget named in German, its reset time in words.
      const goodbye = t(german, 'voice.budget.spent', { reason: '' }).trim();
      const spokenBudget = `Das Tagesbudget dieses Servers (${formatCostIn(german, room.limitUsdTicks)})`;
      await emulator.realtime.waitForClientEvent(
        (event) =>
          event.type === 'conversation.item.create' &&
          JSON.stringify(event.item).includes(goodbye) &&
          JSON.stringify(event.item).includes(spokenBudget),
        15_000,
      );
      const stopped = await discord.waitForMessage(
        guild.textChannelId,
        (message) => message.content === t(french, 'voice.stopped', { channel, reason }),
        15_000,
      );
      expect(stopped.content).not.toContain('Stopped listening');
    } finally {
      discord.leaveVoice(guild.admin, guild.id);
    }
  });
});
