import { Events, type Client } from 'discord.js';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild, trustCertificateInThisProcess } from 'discord-standin';
import { createDiscordClient } from '../../src/discord/client.ts';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/server.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { DEFAULT_PRICES, type PriceTable } from '../../src/settings/prices.ts';
import { SettingsService } from '../../src/settings/service.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { VoiceService, type VoiceServiceDeps } from '../../src/voice/service.ts';

// The voice service in this process with the real libraries: discord.js and @discordjs/voice on the
// Discord stand-in, realtime sessions on the emulator, settings and spending on a real SQLite store. What
// the voice tests under test/voice share; each builds the voice service it needs with voiceService().

export interface VoiceServiceRig {
  emulator: Emulator;
  discord: DiscordStandIn;
  client: Client;
  store: Store;
  clients: GatewayClientPool;
  settings: SettingsService;
  /** A voice service as the bot builds one, on this rig; `options` add to (or replace) what the bot gives it. */
  voiceService(options?: Partial<VoiceServiceDeps>): VoiceService;
  /** Until discord.js has seen `user` (default the guild's member) in the guild's voice channel. */
  memberInVoice(guild: TestGuild, user?: TestGuild['member']): Promise<void>;
  close(): Promise<void>;
}

export async function startVoiceServiceRig(options: { emulator?: EmulatorOptions; prices?: PriceTable } = {}): Promise<VoiceServiceRig> {
  const emulator = await startEmulator(options.emulator);
  const discord = await startDiscordStandIn();
  const untrust = trustCertificateInThisProcess(discord.voice.certPem);
  const client = createDiscordClient(discord.apiUrl);
  const ready = new Promise((resolve) => client.once(Events.ClientReady, resolve));
  await client.login(discord.botToken);
  await ready;
  const store = await openStore('sqlite://:memory:', silentLogger);
  const clients = new GatewayClientPool({ baseUrl: emulator.baseUrl, log: silentLogger });
  const settings = new SettingsService({
    store,
    clients,
    log: silentLogger,
    operatorKey: 'emulator-key',
    defaultLayer: 'native',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: options.prices ?? DEFAULT_PRICES,
  });
  return {
    emulator,
    discord,
    client,
    store,
    clients,
    settings,
    voiceService: (extra = {}) =>
      new VoiceService({
        client,
        outbox: new DiscordOutbox(client.rest),
        access: { resolveGatewayAccess: () => Promise.resolve({ ok: true, apiKey: 'emulator-key', layer: 'native', keyId: 'emulator' }) },
        settings,
        wsBaseUrl: emulator.wsUrl,
        log: silentLogger,
        ...extra,
      }),
    async memberInVoice(guild, user = guild.member) {
      const seen = new Promise((resolve) => client.once(Events.VoiceStateUpdate, resolve));
      discord.joinVoice(user, guild.id, guild.voiceChannelId);
      await seen;
    },
    async close() {
      await client.destroy();
      await clients.close();
      await store.close();
      await discord.close();
      await emulator.close();
      untrust();
    },
  };
}
