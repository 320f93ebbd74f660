import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createLogger } from '../lib/log.ts';
import { DEFAULT_KEY, EmulatorConfigError, parseEmulatorConfig, type EmulatorConfig } from './config.ts';
import { startEmulator } from './server.ts';

// `npm run emulator -- --port N --config FILE` (or EMULATOR_PORT / EMULATOR_CONFIG). Default port 8787.

const EXIT_USAGE = 2;
const DEFAULT_PORT = 8787;

function fail(message: string): never {
  process.stderr.write(`emulator: ${message}\n`);
  process.exit(EXIT_USAGE);
}

function readOptions(): { port: number; config: EmulatorConfig | undefined } {
  let values: { port?: string; config?: string };
  try {
    ({ values } = parseArgs({ options: { port: { type: 'string' }, config: { type: 'string' } }, strict: true }));
  } catch (error) {
    fail(`${error instanceof Error ? error.message : String(error)} (usage: --port N --config FILE)`);
  }
  const portText = values.port ?? process.env.EMULATOR_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) fail(`--port must be a port number from 0 to 65535 (got "${portText}")`);

  const file = values.config ?? process.env.EMULATOR_CONFIG;
  if (!file) return { port, config: undefined };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    fail(`cannot read the config file ${file}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    fail(`the config file ${file} is not valid JSON`);
  }
  try {
    return { port, config: parseEmulatorConfig(raw) };
  } catch (error) {
    if (error instanceof EmulatorConfigError) fail(`${file}: ${error.message}`);
    throw error;
  }
}

const { port, config } = readOptions();
const log = createLogger({ fields: { service: 'emulator' } });
const emulator = await startEmulator({ port, log, ...(config ? { config, onlyGivenKeys: true } : {}) });
log.info('gateway emulator listening', {
  url: emulator.baseUrl,
  realtime: `${emulator.wsUrl}/native/v1/realtime?model=${emulator.config.vendor}-voice-latest`,
  keys: Object.keys(emulator.config.keys).length,
  ...(config ? {} : { key: DEFAULT_KEY }),
});

const stop = () => {
  void emulator.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
