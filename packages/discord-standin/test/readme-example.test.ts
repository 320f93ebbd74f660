// The example of README.md, "Using it in another discord.js project", as it is written there: it must run.

import { Client, Events, GatewayIntentBits, REST, Routes } from 'discord.js';
import { expect, it } from 'vitest';
import { startDiscordStandIn } from '../src/index.ts';

it("runs the README's example: a slash command answered by a discord.js bot", async () => {
  const discord = await startDiscordStandIn();
  const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  try {
    const guild = discord.createGuild();
    client.on(Events.InteractionCreate, (interaction) => {
      if (interaction.isChatInputCommand() && interaction.commandName === 'ping') void interaction.reply('pong');
    });
    await client.login(discord.botToken);
    await new REST({ api: discord.apiUrl })
      .setToken(discord.botToken)
      .put(Routes.applicationGuildCommands(discord.applicationId, guild.id), { body: [{ name: 'ping', description: 'Answers pong' }] });

    const user = discord.createUser({ guildId: guild.id, name: 'alice' });
    const reply = await discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'ping' }).reply();
    expect(reply.content).toBe('pong');
  } finally {
    await client.destroy();
    await discord.close();
  }
});
