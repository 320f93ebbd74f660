import { DiscordjsErrorCodes, Events, type Client } from 'discord.js';
import type { BotConfig } from './config.ts';
import { createDiscordClient } from './discord/client.ts';
import { createDispatcher } from './discord/dispatcher.ts';
import { loadCommands, registerCommands } from './discord/registry.ts';
import type { Logger } from './log.ts';
import type { Services } from './services.ts';
import { openStore } from './store.ts';

export interface App {
  client: Client;
  /** Stops taking commands, lets those in flight finish, then closes Discord and the store. */
  stop(): Promise<void>;
}

const LOGIN_RETRY_MAX_MS = 60_000;

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
  const services: Services = { config, log, store };
  const client = createDiscordClient(config.discordApiUrl);
  const dispatcher = createDispatcher(commands, services);

  client.on(Events.Error, (error) => log.error('discord client error', { error }));
  client.on(Events.Warn, (message) => log.warn('discord client warning', { detail: message }));
  client.on(Events.InteractionCreate, (interaction) => {
    void dispatcher.handle(interaction);
  });
  client.once(Events.ClientReady, (ready) => {
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
    await store.close();
    throw error;
  }

  return {
    client,
    async stop() {
      log.info('shutting down: finishing what is in flight');
      await dispatcher.drain();
      await client.destroy();
      await store.close();
      log.info('stopped');
    },
  };
}
