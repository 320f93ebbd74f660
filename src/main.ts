import { startApp, type App } from './app.ts';
import { loadConfig, readEnvironment } from './config.ts';
import { createLogger, registerSecret } from './log.ts';

// `npm start`: configuration from the environment (and .env), then the bot until SIGINT or SIGTERM.

const EXIT_CONFIG = 2;

const result = loadConfig(readEnvironment());
if (!result.ok) {
  process.stderr.write(
    `The bot cannot start; fix these variables (in the environment or .env):\n${result.problems.map((problem) => `  - ${problem}`).join('\n')}\n`,
  );
  process.exit(EXIT_CONFIG);
}

const { config } = result;
registerSecret(config.discordToken);
registerSecret(config.gatewayApiKey);
registerSecret(config.keyEncryptionSecret);
registerSecret(config.keyEncryptionSecretPrevious);
const log = createLogger({ level: config.logLevel });

process.on('unhandledRejection', (reason) => log.error('unhandled rejection', { error: reason }));

let app: App | undefined;
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info('signal received', { signal });
  await app?.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));

try {
  app = await startApp(config, log);
} catch (error) {
  log.error('the bot could not start', { error });
  process.exit(1);
}
