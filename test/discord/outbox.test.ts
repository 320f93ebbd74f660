import { REST } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordOutbox, MAX_CONTENT_LENGTH } from '../../src/discord/outbox.ts';
import { startDiscordStandIn, type DiscordStandIn, type TestGuild } from '../support/discord/index.ts';

// What the background services send to Discord, through discord.js's own REST client against the
// stand-in, which refuses what Discord refuses.

let discord: DiscordStandIn;
let guild: TestGuild;
let outbox: DiscordOutbox;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  outbox = new DiscordOutbox(new REST({ api: discord.apiUrl }).setToken(discord.botToken));
}, 30_000);

afterAll(async () => {
  await discord?.close();
});

describe('say', () => {
  it('sends text longer than one Discord message as several, in order, cut between words', async () => {
    const channel = guild.textChannelId;
    const before = discord.messages(channel).length;
    const words = Array.from({ length: 900 }, (_, index) => `word${index}`);
    const firstId = await outbox.say(channel, `**Bot**: ${words.join(' ')}`);
    const sent = discord.messages(channel).slice(before);
    expect(sent.length).toBeGreaterThan(1);
    expect(sent[0]?.id).toBe(firstId);
    for (const message of sent) expect(message.content.length).toBeLessThanOrEqual(MAX_CONTENT_LENGTH);
    expect(sent.map((message) => message.content).join(' ')).toBe(`**Bot**: ${words.join(' ')}`);
  });

  it('sends a message that fits as one', async () => {
    const channel = guild.textChannelId;
    const before = discord.messages(channel).length;
    const text = 'y'.repeat(MAX_CONTENT_LENGTH);
    await outbox.say(channel, text);
    expect(discord.messages(channel).slice(before).map((message) => message.content)).toEqual([text]);
  });
});
