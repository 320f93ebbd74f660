import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitUntil } from '../../src/lib/wait-until.ts';

// The bot as a real child process, started exactly like `npm start` (scripts/bot) unless a test names
// another command line (the Dockerfile's CMD), with its JSON log lines parsed and awaitable.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface BotProcess {
  readonly child: ChildProcess;
  /** Every parsed log line so far. */
  readonly logs: LogLine[];
  /** Everything the process wrote, raw (stdout and stderr), for secret checks and failures. */
  output(): string;
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  readonly exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
  kill(): Promise<number | string>;
  /**
   * Sends `signal` to the bot's whole process group (the start script's process and every worker), as
   * Ctrl-C in a terminal or systemd does; only for a bot started with `ownProcessGroup`. Nothing when the
   * group is gone.
   */
  signalGroup(signal: NodeJS.Signals): void;
}

export interface StartBotOptions {
  env: Record<string, string>;
  /** Directory for the SQLite store when STORE_URL is not given; removed by `cleanupBotDirectories()`. */
  dataDirectory?: string;
  /** The command line that starts it (default scripts/bot), run in `cwd` (default the data directory). */
  command?: readonly [string, ...string[]];
  cwd?: string;
  /**
   * Starts it as the leader of a process group of its own, for `signalGroup()`. A test that uses it ends
   * with `signalGroup('SIGKILL')`: a worker or a child that outlived the start script is in the group.
   */
  ownProcessGroup?: boolean;
}

const directories: string[] = [];

export function makeDataDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'bot-data-'));
  directories.push(directory);
  return directory;
}

/**
 * What starts the bot with its clock `aheadMs` ahead of the machine's (test/support/bot-clock.ts): for a
 * restart that finds the minutes it measures from stored times passed.
 */
export function botClockAhead(aheadMs: number): Record<string, string> {
  return { NODE_OPTIONS: `--import=${new URL('./bot-clock.ts', import.meta.url).href}`, BOT_CLOCK_AHEAD_MS: String(aheadMs) };
}

export function cleanupBotDirectories(): void {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
}

function parseLine(text: string): LogLine | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const level: unknown = Reflect.get(value, 'level');
    const msg: unknown = Reflect.get(value, 'msg');
    if (typeof level !== 'string' || typeof msg !== 'string') return undefined;
    return { ...(value as Record<string, unknown>), level, msg };
  } catch {
    return undefined;
  }
}

/** Nothing listens here: a bot started with it never reaches a gateway (for tests that never call one). */
export const UNUSED_GATEWAY = 'http://127.0.0.1:9';

/** Where a Discord stand-in is, as the bot needs it (discord-standin's DiscordStandIn has these). */
export interface DiscordAddress {
  botToken: string;
  apiUrl: string;
  caCertPath: string;
}

/** The bot on `discord`, with a gateway it never calls (UNUSED_GATEWAY); `env` adds to that or overrides it. */
export function startBotOn(discord: DiscordAddress, env: Record<string, string> = {}): BotProcess {
  return startBot({
    env: {
      DISCORD_TOKEN: discord.botToken,
      DISCORD_API_URL: discord.apiUrl,
      GATEWAY_BASE_URL: UNUSED_GATEWAY,
      NODE_EXTRA_CA_CERTS: discord.caCertPath,
      ...env,
    },
  });
}

export function startBot(options: StartBotOptions): BotProcess {
  const dataDirectory = options.dataDirectory ?? makeDataDirectory();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    LOG_LEVEL: 'debug',
    STORE_URL: `sqlite://${join(dataDirectory, 'bot.sqlite')}`,
    ...options.env,
  };
  // The bot must not read the developer's own .env: run it from an empty directory.
  const [command, ...args] = options.command ?? [join(ROOT, 'scripts', 'bot')];
  const child = spawn(command, args, {
    cwd: options.cwd ?? dataDirectory,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownProcessGroup === true,
  });

  const logs: LogLine[] = [];
  const lines = new EventEmitter();
  let raw = '';
  let pending = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    raw += chunk;
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = parseLine(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      if (line) {
        logs.push(line);
        lines.emit('line', line);
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    raw += chunk;
  });

  const exited = once(child, 'exit').then(([code, signal]: unknown[]) => (typeof code === 'number' ? code : String(signal)));

  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> => {
    // Every line once; after that, each new line alone.
    let newest: LogLine | undefined;
    return waitUntil({
      check: () => (newest === undefined ? logs.find(predicate) : predicate(newest) ? newest : undefined),
      subscribe: (wake, fail) => {
        const onLine = (line: LogLine) => {
          newest = line;
          wake();
        };
        const onExit = () => fail(new Error(`bot exited before the awaited log line; output:\n${raw.slice(-4000)}`));
        lines.on('line', onLine);
        child.once('exit', onExit);
        return () => {
          lines.off('line', onLine);
          child.off('exit', onExit);
        };
      },
      timeoutMs,
      timeoutError: () => new Error(`timed out waiting for a bot log line; output:\n${raw.slice(-4000)}`),
    });
  };

  const signalAndWait = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };

  const signalGroup = (signal: NodeJS.Signals) => {
    if (options.ownProcessGroup !== true || child.pid === undefined)
      throw new Error('signalGroup() needs a bot started with ownProcessGroup');
    try {
      process.kill(-child.pid, signal);
    } catch (error) {
      // ESRCH: every process of the group has exited.
      if (!(error instanceof Error && 'code' in error && error.code === 'ESRCH')) throw error;
    }
  };

  return {
    child,
    logs,
    output: () => raw,
    waitForLog,
    exited,
    stop: (signal = 'SIGTERM') => signalAndWait(signal),
    kill: () => signalAndWait('SIGKILL'),
    signalGroup,
  };
}
