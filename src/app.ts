import { DiscordjsErrorCodes, Events, type Client } from 'discord.js';
import type { BotConfig } from './config.ts';
import { createDiscordClient } from './discord/client.ts';
import { createDispatcher } from './discord/dispatcher.ts';
import { loadCommands, registerCommands } from './discord/registry.ts';
import { DiscordOutbox } from './discord/outbox.ts';
import { GatewayClientPool } from './gateway/pool.ts';
import type { Logger } from './log.ts';
import type { Services } from './services.ts';
import { SettingsService } from './settings/service.ts';
import { openStore } from './store.ts';
import { VideoDelivery } from './tasks/delivery.ts';
import { pollPolicyWithInterval } from './tasks/poll-policy.ts';
import { TaskRepository } from './tasks/repository.ts';
import { VideoService } from './tasks/service.ts';
import { PolicyGatewayResolver } from './tasks/gateway-resolver.ts';
import { TaskTracker } from './tasks/tracker.ts';
import { VoiceService } from './voice/service.ts';
import { VoiceSettingsStore } from './voice/settings.ts';

export interface App {
  client: Client;
  /** Stops taking commands, lets those in flight finish, then closes Discord and the store. */
  stop(): Promise<void>;
}

const LOGIN_RETRY_MAX_MS = 60_000;
/** Polls in flight at once: enough to follow thousands of tasks, few enough to be gentle on the gateway. */
const MAX_POLLS_IN_FLIGHT = 16;
const CARD_EDIT_INTERVAL_MS = 4_000;

export class LoginRefusedError extends Error {
  constructor() {
    super('Discord refused DISCORD_TOKEN: check the token in the Discord developer portal (Bot > Reset Token).');
    this.name = 'LoginRefusedError';
  }
}

function isTokenRefusal(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === DiscordjsErrorCodes.TokenInvalid;
}

/** Discord may be briefly unreachable or answer 5xx/429 at start: keep trying, but not a refused token. */
async function loginWithRetry(client: Client, token: string, log: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.login(token);
      return;
    } catch (error) {
      if (isTokenRefusal(error)) throw new LoginRefusedError();
      const delay = Math.min(LOGIN_RETRY_MAX_MS, 1000 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      log.warn('could not reach Discord; retrying', { attempt, retryInMs: Math.round(delay), error });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

export async function startApp(config: BotConfig, log: Logger): Promise<App> {
  const commands = await loadCommands();
  const store = await openStore(config.storeUrl, log);
  const client = createDiscordClient(config.discordApiUrl);
  const outbox = new DiscordOutbox(client.rest);
  const clients = new GatewayClientPool({
    baseUrl: config.gatewayBaseUrl,
    vendor: config.gatewayVendor,
    paths: { edits: config.gatewayEditPath, extensions: config.gatewayExtensionPath },
    log,
  });
  const repository = new TaskRepository(store);
  const delivery = new VideoDelivery({ repository, outbox, log, cardEditIntervalMs: CARD_EDIT_INTERVAL_MS });
  const policy = new SettingsService({
    store,
    clients,
    log,
    operatorKey: config.gatewayApiKey,
    defaultLayer: config.gatewayLayer,
    encryptionSecret: config.keyEncryptionSecret,
    previousEncryptionSecret: config.keyEncryptionSecretPrevious,
  });
  const tracker = new TaskTracker(repository, new PolicyGatewayResolver(policy, clients, log), delivery, log, {
    policy: pollPolicyWithInterval(config.taskPollIntervalMs),
    maxInFlight: MAX_POLLS_IN_FLIGHT,
  });
  const video = new VideoService({
    repository,
    tracker,
    delivery,
    clients,
    policy,
    store,
    vendor: config.gatewayVendor,
    log,
    attachmentUrl: (channelId, messageId) => outbox.attachmentUrl(channelId, messageId),
  });
  const voiceSettings = new VoiceSettingsStore(store, config.gatewayVendor);
  const voice = new VoiceService({ client, outbox, policy, settings: voiceSettings, wsBaseUrl: config.gatewayWsUrl, log });
  tracker.onFinished((task) => {
    void policy.recordCost(task).catch((error: unknown) => log.error('could not record a task cost', { task: task.id, error }));
    if (task.state === 'succeeded' && !task.outcome.moderated) {
      voice.announce(task.guildId, `A video is ready in the text channel: ${task.prompt.slice(0, 80) || task.operation}.`);
    }
  });
  const services: Services = { config, log, store, settings: policy, video, voice, voiceSettings };
  const dispatcher = createDispatcher(commands, services);

  client.on(Events.Error, (error) => log.error('discord client error', { error }));
  client.on(Events.Warn, (message) => log.warn('discord client warning', { detail: message }));
  client.on(Events.InteractionCreate, (interaction) => {
    void dispatcher.handle(interaction);
  });
  client.once(Events.ClientReady, (ready) => {
    tracker.resume().then(
      (count) => log.info('following unfinished video tasks', { count }),
      (error: unknown) => log.error('could not resume unfinished video tasks', { error }),
    );
    registerCommands(ready.application, commands.values(), config.devGuildId).then(
      (count) =>
        log.info('ready', {
          user: ready.user.id,
          guilds: ready.guilds.cache.size,
          commands: count,
          scope: config.devGuildId ? `guild ${config.devGuildId}` : 'global',
        }),
      (error: unknown) => log.error('could not register commands', { error }),
    );
  });

  try {
    await loginWithRetry(client, config.discordToken, log);
  } catch (error) {
    await client.destroy();
    await clients.close();
    await store.close();
    throw error;
  }

  return {
    client,
    async stop() {
      log.info('shutting down: finishing what is in flight');
      await dispatcher.drain();
      await voice.stopAll();
      await tracker.stop();
      await client.destroy();
      await clients.close();
      await store.close();
      log.info('stopped');
    },
  };
}
