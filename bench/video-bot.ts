import { REST } from 'discord.js';
import { DiscordOutbox } from '../src/discord/outbox.ts';
import { GatewayClientPool } from '../src/gateway/pool.ts';
import { silentLogger } from '../src/lib/log.ts';
import type { InteractionContext } from '../src/ports/interaction-context.ts';
import { DEFAULT_PRICES } from '../src/settings/prices.ts';
import { SettingsService } from '../src/settings/service.ts';
import type { Store } from '../src/store/index.ts';
import { createVideo, type Video } from '../src/video/index.ts';
import type { PollPolicy } from '../src/video/poll-policy.ts';
import { generationInput, memberContext, type GenerationAsked } from '../test/support/video-request.ts';
import type { Interaction, ServerInfo } from './video-protocol.ts';

// The video part and the settings it runs on, put together as src/app.ts puts them (without discord.js's
// gateway connection: a benchmark hands the bot its interactions), on the benchmark servers of
// bench/servers.ts. Shared by the video benchmark's workers and the spend benchmark.

export interface VideoBot {
  video: Video;
  settings: SettingsService;
  rest: REST;
  /** Stops the tracker and the gateway clients; the store is the caller's to close. */
  stop(): Promise<void>;
}

export interface VideoBotOptions {
  /** Posts budget alerts through the outbox, as src/app.ts does; default off. */
  postAlerts?: boolean;
  /** When tasks are polled; default the production policy. */
  pollPolicy?: PollPolicy;
  downloadDirectory?: string;
}

export function contextOf(info: ServerInfo, interaction: Interaction): InteractionContext {
  const { guildId, channelId, userId, token } = interaction;
  return memberContext({ guildId, channelId, userId }, { applicationId: info.applicationId, interactionToken: token });
}

export function startVideoBot(info: ServerInfo, store: Store, options: VideoBotOptions = {}): VideoBot {
  // The stand-in has no global rate limit, so the bench lifts discord.js's 50 requests/s (real Discord
  // would pace posts at that rate).
  const rest = new REST({ api: info.apiUrl, globalRequestsPerSecond: 100_000 }).setToken(info.botToken);
  const outbox = new DiscordOutbox(rest);
  const clients = new GatewayClientPool({ baseUrl: info.gatewayUrl, log: silentLogger });
  const settings = new SettingsService({
    store,
    clients,
    log: silentLogger,
    operatorKey: 'emulator-key',
    defaultLayer: 'compat',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: DEFAULT_PRICES,
    ...(options.postAlerts ? { postAlert: (channelId: string, content: string) => outbox.say(channelId, content) } : {}),
  });
  const video = createVideo({
    store,
    clients,
    policy: settings,
    outbox,
    vendor: 'svc',
    log: silentLogger,
    ...(options.pollPolicy ? { pollPolicy: options.pollPolicy } : {}),
    ...(options.downloadDirectory ? { downloadDirectory: options.downloadDirectory } : {}),
  });
  return {
    video,
    settings,
    rest,
    async stop() {
      await video.tracker.stop();
      await clients.close();
    },
  };
}

/** /video generate's input as the benchmarks send it: a short prompt, everything else the server's defaults. */
export function benchGeneration(): GenerationAsked {
  return generationInput('benchmark', { duration: 4 });
}
