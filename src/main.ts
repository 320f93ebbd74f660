import { startApp } from './app.ts';
import { loadConfig, readEnvironment } from './config.ts';
import { createLogger, registerSecret } from './lib/log.ts';
import { createShutdown, EXIT_FAILURE } from './shutdown.ts';

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
registerSecret(config.discordToken, true);
registerSecret(config.gatewayApiKey, true);
registerSecret(config.keyEncryptionSecret, true);
registerSecret(config.keyEncryptionSecretPrevious, true);
const log = createLogger({ level: config.logLevel });

process.on('unhandledRejection', (reason) => log.error('unhandled rejection', { error: reason }));

const startup = new AbortController();
const starting = startApp(config, log, startup.signal);
starting.catch((error: unknown) => {
  // A start cancelled by a signal is the shutdown's to finish.
  if (startup.signal.aborted) return;
  log.error('the bot could not start', { error });
  process.exit(EXIT_FAILURE);
});

const shutdown = createShutdown({
  log,
  async stop() {
    startup.abort(new Error('shutting down before the bot was up'));
    // A cancelled start closes what it opened before it rejects.
    const app = await starting.catch(() => undefined);
    await app?.stop();
  },
  exit: (code) => process.exit(code),
});
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
