// The voice service in this process, with the real discord.js client and @discordjs/voice on the
// Discord stand-in and its realtime sessions on the emulator; only the clock that measures idleness is
// the test's, so that "ten minutes without a word" takes no ten minutes.

import { Events, type Client } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDiscordClient } from '../../src/discord/client.ts';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { VoiceService } from '../../src/voice/service.ts';
import { SettingsService } from '../../src/settings/service.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild, trustCertificateInThisProcess } from 'discord-standin';

let emulator: Emulator;
let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
let store: Store;
let settings: SettingsService;
let clients: GatewayClientPool;
let service: VoiceService;
let untrust: () => void;

let clock = Date.now();
const lookers: (() => void)[] = [];
/** The service's clock: it resolves the waits of nextLook() each time the service reads it. */
function now(): number {
  for (const resolve of lookers.splice(0)) resolve();
  return clock;
}
function nextLook(): Promise<void> {
  return new Promise((resolve) => lookers.push(resolve));
}

beforeAll(async () => {
  emulator = await startEmulator();
  discord = await startDiscordStandIn();
  untrust = trustCertificateInThisProcess(discord.voice.certPem);
  guild = discord.createGuild();
  client = createDiscordClient(discord.apiUrl);
  const ready = new Promise((resolve) => client.once(Events.ClientReady, resolve));
  await client.login(discord.botToken);
  await ready;
  store = await openStore('sqlite://:memory:', silentLogger);
  clients = new GatewayClientPool({ baseUrl: emulator.baseUrl, log: silentLogger });
  settings = new SettingsService({
    store,
    clients,
    log: silentLogger,
    operatorKey: 'emulator-key',
    defaultLayer: 'native',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: DEFAULT_PRICES,
  });
  service = new VoiceService({
    client,
    outbox: new DiscordOutbox(client.rest),
    access: { resolveGatewayAccess: () => Promise.resolve({ ok: true, apiKey: 'emulator-key', layer: 'native', keyId: 'emulator' }) },
    settings,
    wsBaseUrl: emulator.wsUrl,
    log: silentLogger,
    idle: { now, checkMs: 20 },
  });
}, 60_000);

afterAll(async () => {
  await service?.stopAll();
  await client?.destroy();
  await clients?.close();
  await store?.close();
  await discord?.close();
  await emulator?.close();
  untrust?.();
});

describe('the voice service', () => {
  it('leaves after the configured time without anyone speaking, and not before', async () => {
    await settings.changeVoiceSettings(guild.id, { idleMinutes: 2 }, guild.admin.id);
    const seen = new Promise((resolve) => client.once(Events.VoiceStateUpdate, resolve));
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    await seen;
    expect(await service.join(guild.id, guild.voiceChannelId, guild.textChannelId, guild.member.id)).toMatchObject({
      ok: true,
      encryption: { encrypted: true, ready: true },
    });

    clock += 119_000;
    await nextLook();
    expect(service.isIn(guild.id)).toBe(true);

    clock += 2_000;
    await discord.waitForMessage(
      guild.textChannelId,
      (message) => message.content === `Stopped listening in <#${guild.voiceChannelId}> (nobody spoke for 2 minutes).`,
    );
    expect(service.isIn(guild.id)).toBe(false);
    await discord.voice.waitForBotDisconnect(guild.id);
  });
});
