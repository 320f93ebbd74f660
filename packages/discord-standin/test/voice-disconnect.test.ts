// A server admin disconnects the bot from voice: the real discord.js and @discordjs/voice, in this process,
// against the whole stand-in (gateway and voice server). The bot learns it has no channel any more, and
// the voice websocket's 4014 leaves @discordjs/voice disconnected rather than rejoining.

import { once } from 'node:events';
import {
  VoiceConnectionDisconnectReason,
  VoiceConnectionStatus,
  entersState,
  joinVoiceChannel,
  type VoiceConnection,
} from '@discordjs/voice';
import { Client, Events, GatewayIntentBits, type VoiceState } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn, type TestGuild } from '../src/index.ts';
import { trustCertificateInThisProcess } from '../src/voice/tls-trust.ts';

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
let untrust: () => void;
let connection: VoiceConnection | undefined;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  untrust = trustCertificateInThisProcess(discord.voice.certPem);
  guild = discord.createGuild();
  client = new Client({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates], rest: { api: discord.apiUrl } });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
}, 30_000);

afterAll(async () => {
  if (connection && connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
  await client?.destroy();
  await discord?.close();
  untrust?.();
});

describe('disconnectBotFromVoice', () => {
  it('sends the bot a null voice state and closes its voice websocket with 4014, so it stays disconnected', async () => {
    const cached = client.guilds.cache.get(guild.id);
    if (!cached) throw new Error('the guild is not cached');
    connection = joinVoiceChannel({
      guildId: guild.id,
      channelId: guild.voiceChannelId,
      adapterCreator: cached.voiceAdapterCreator,
      selfDeaf: false,
    });
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    await discord.voice.waitForBotConnection(guild.id);
    expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);

    const botLeft = new Promise<VoiceState>((resolve) => {
      client.on(Events.VoiceStateUpdate, (_before, after) => {
        if (after.id === client.user?.id && after.channelId === null) resolve(after);
      });
    });
    discord.disconnectBotFromVoice(guild.id);

    expect((await botLeft).channelId).toBeNull();
    await entersState(connection, VoiceConnectionStatus.Disconnected, 5_000);
    expect(connection.state).toMatchObject({ reason: VoiceConnectionDisconnectReason.WebSocketClose, closeCode: 4014 });
    await discord.voice.waitForBotDisconnect(guild.id);
    expect(discord.voice.botSocketCloses(guild.id).at(-1)?.code).toBe(4014);
    expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
    expect(() => discord.disconnectBotFromVoice(guild.id)).toThrow(/no voice channel/);
  });
});
