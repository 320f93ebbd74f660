import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/server.ts';
import type { Logger } from '../../src/lib/log.ts';
import { cleanupBotDirectories, makeDataDirectory, startBot, type BotProcess, type StartBotOptions } from './bot-process.ts';
import { type DiscordStandIn, type StandInOptions, startDiscordStandIn, type TestGuild } from 'discord-standin';

// Everything an end-to-end test needs: the gateway emulator, the Discord stand-in with one server, and the
// bot as a child process started the way `npm start` starts it, configured through its environment.

export interface World {
  emulator: Emulator;
  discord: DiscordStandIn;
  guild: TestGuild;
  bot: BotProcess;
  dataDirectory: string;
  /** Starts the bot again on the same store (after a kill or stop). */
  restartBot(env?: Record<string, string>): Promise<BotProcess>;
  stop(): Promise<void>;
}

export interface WorldOptions {
  emulator?: EmulatorOptions['config'];
  /** Where the emulator logs (silent by default). */
  emulatorLog?: Logger;
  /** The base of the emulator's URLs when clients reach it through something else (a proxy in front of it). */
  emulatorPublicUrl?: string;
  standIn?: StandInOptions;
  guild?: { attachmentSizeLimit?: number };
  env?: Record<string, string>;
  /** How the bot is started, each time (default: scripts/bot in its data directory, in the test's process group). */
  start?: Pick<StartBotOptions, 'command' | 'cwd' | 'ownProcessGroup'>;
}

export function botEnvironment(discord: DiscordStandIn, emulator: Emulator, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DISCORD_TOKEN: discord.botToken,
    DISCORD_API_URL: discord.apiUrl,
    GATEWAY_BASE_URL: emulator.baseUrl,
    GATEWAY_API_KEY: 'emulator-key',
    NODE_EXTRA_CA_CERTS: discord.caCertPath,
    TASK_POLL_INTERVAL_MS: '200',
    ...extra,
  };
}

export async function startWorld(options: WorldOptions = {}): Promise<World> {
  const emulator = await startEmulator({
    config: { timing: { generation_ms: 300 }, limits: { rate_per_minute: 100_000, concurrent_tasks: 100 }, ...options.emulator },
    ...(options.emulatorLog ? { log: options.emulatorLog } : {}),
    ...(options.emulatorPublicUrl ? { publicUrl: options.emulatorPublicUrl } : {}),
  });
  const discord = await startDiscordStandIn(options.standIn);
  const guild = discord.createGuild(options.guild);
  const dataDirectory = makeDataDirectory();
  const env = botEnvironment(discord, emulator, options.env);
  let bot = startBot({ env, dataDirectory, ...options.start });
  await bot.waitForLog((line) => line.msg === 'ready', 30_000);

  return {
    emulator,
    discord,
    guild,
    get bot() {
      return bot;
    },
    dataDirectory,
    async restartBot(extra = {}) {
      bot = startBot({ env: { ...env, ...extra }, dataDirectory, ...options.start });
      await bot.waitForLog((line) => line.msg === 'ready', 30_000);
      return bot;
    },
    async stop() {
      await bot.stop();
      // Whatever of the bot's process group outlived it.
      if (options.start?.ownProcessGroup === true) bot.signalGroup('SIGKILL');
      await discord.close();
      await emulator.close();
      cleanupBotDirectories();
    },
  };
}
