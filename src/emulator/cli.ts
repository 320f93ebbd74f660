import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createLogger } from '../lib/log.ts';
import { DEFAULT_KEY, EmulatorConfigError, parseEmulatorConfig, type EmulatorConfig } from './config.ts';
import { parsePublicUrl, type EmulatorTls } from './hosting.ts';
import { startEmulator, type Emulator } from './server.ts';

// `npm run emulator -- --port N --config FILE --host ADDR --public-url URL --tls` (or `--cert FILE --key
// FILE` instead of --tls), or through EMULATOR_PORT, EMULATOR_CONFIG, EMULATOR_HOST, EMULATOR_PUBLIC_URL,
// EMULATOR_TLS=1, EMULATOR_TLS_CERT and EMULATOR_TLS_KEY. Default port 8787, host 127.0.0.1, plain HTTP.

const EXIT_USAGE = 2;
const EXIT_START_FAILED = 1;
const DEFAULT_PORT = 8787;
const USAGE = '--port N --config FILE --host ADDR --public-url URL --tls --cert FILE --key FILE';

function fail(message: string): never {
  process.stderr.write(`emulator: ${message}\n`);
  process.exit(EXIT_USAGE);
}

interface CliOptions {
  port: number;
  config: EmulatorConfig | undefined;
  host: string | undefined;
  publicUrl: string | undefined;
  tls: EmulatorTls | undefined;
}

/** An environment variable, unset when empty. */
function env(name: string): string | undefined {
  return process.env[name] || undefined;
}

function readFlag(name: string): boolean {
  const text = env(name);
  if (text === undefined || text === '0' || text === 'false') return false;
  if (text === '1' || text === 'true') return true;
  fail(`${name} must be 1 or 0 (got "${text}")`);
}

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    fail(`cannot read the ${what} file ${file}`);
  }
}

function readTls(values: { tls?: boolean; cert?: string; key?: string }): EmulatorTls | undefined {
  const certFile = values.cert ?? env('EMULATOR_TLS_CERT');
  const keyFile = values.key ?? env('EMULATOR_TLS_KEY');
  if ((certFile === undefined) !== (keyFile === undefined)) fail('--cert and --key (EMULATOR_TLS_CERT and EMULATOR_TLS_KEY) go together');
  if (certFile !== undefined && keyFile !== undefined) return { cert: readPem(certFile, 'certificate'), key: readPem(keyFile, 'key') };
  return values.tls === true || readFlag('EMULATOR_TLS') ? true : undefined;
}

function readOptions(): CliOptions {
  let values: { port?: string; config?: string; host?: string; 'public-url'?: string; tls?: boolean; cert?: string; key?: string };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        config: { type: 'string' },
        host: { type: 'string' },
        'public-url': { type: 'string' },
        tls: { type: 'boolean' },
        cert: { type: 'string' },
        key: { type: 'string' },
      },
      strict: true,
    }));
  } catch (error) {
    fail(`${error instanceof Error ? error.message : String(error)} (usage: ${USAGE})`);
  }
  const portText = values.port ?? process.env.EMULATOR_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) fail(`--port must be a port number from 0 to 65535 (got "${portText}")`);
  const host = values.host ?? env('EMULATOR_HOST');
  const publicUrl = values['public-url'] ?? env('EMULATOR_PUBLIC_URL');
  if (publicUrl !== undefined) {
    try {
      parsePublicUrl(publicUrl);
    } catch (error) {
      if (error instanceof EmulatorConfigError) fail(`--public-url: ${error.message}`);
      throw error;
    }
  }
  const hosting = { host, publicUrl, tls: readTls(values) };

  const file = values.config ?? process.env.EMULATOR_CONFIG;
  if (!file) return { port, config: undefined, ...hosting };
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
    return { port, config: parseEmulatorConfig(raw), ...hosting };
  } catch (error) {
    if (error instanceof EmulatorConfigError) fail(`${file}: ${error.message}`);
    throw error;
  }
}

const { port, config, host, publicUrl, tls } = readOptions();
const log = createLogger({ fields: { service: 'emulator' } });
let emulator: Emulator;
try {
  emulator = await startEmulator({ port, host, publicUrl, tls, log, ...(config ? { config, onlyGivenKeys: true } : {}) });
} catch (error) {
  // A port in use, an address not on this machine, a certificate that does not fit its key.
  process.stderr.write(`emulator: cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(EXIT_START_FAILED);
}
// Before the start-up line: a stop signalled as soon as it is read still closes the emulator (and
// removes the certificate file it made).
const stop = () => {
  void emulator.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
log.info('gateway emulator listening', {
  url: emulator.baseUrl,
  ...(emulator.listenUrl === emulator.baseUrl ? {} : { listening: emulator.listenUrl }),
  realtime: `${emulator.wsUrl}/native/v1/realtime?model=${emulator.config.vendor}-voice-latest`,
  // The certificate made at start: clients trust it with NODE_EXTRA_CA_CERTS=<caFile>.
  ...(emulator.caCertPath === undefined ? {} : { caFile: emulator.caCertPath }),
  keys: Object.keys(emulator.config.keys).length,
  ...(config ? {} : { key: DEFAULT_KEY }),
});
