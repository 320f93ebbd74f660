import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

// A Redis server of the test's own, on a free port, for tests that stall it, drop its connections or stop
// it: the machine's shared Redis on 6379 is never touched by those.

export interface OwnRedis {
  url: string;
  /** Freezes the server (SIGSTOP): connections stay open and nothing is answered, as in a stall. */
  stall(): void;
  /** Lets a stalled server go on (SIGCONT). */
  resume(): void;
  /** Drops every client connection (CLIENT KILL); what the server holds stays. */
  dropConnections(): Promise<void>;
  /** Kills the server; every connection drops. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and settings (after kill()); what it held is gone unless it persisted it. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  return address.port;
}

/**
 * How the server runs, as redis-server's own options (`['--appendonly', 'yes']`), after the defaults: no
 * persistence, and a folder of its own for what it writes.
 */
export interface OwnRedisOptions {
  settings?: string[];
}

async function launch(port: number, directory: string, settings: string[]): Promise<ChildProcess> {
  const defaults = ['--port', String(port), '--bind', '127.0.0.1', '--dir', directory, '--save', '', '--appendonly', 'no'];
  const child = spawn('redis-server', [...defaults, ...settings], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const ready = new Promise<void>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
  });
  await ready;
  return child;
}

export async function startOwnRedis(options: OwnRedisOptions = {}): Promise<OwnRedis> {
  const port = await freePort();
  const directory = mkdtempSync(join(tmpdir(), 'own-redis-'));
  const settings = options.settings ?? [];
  let child = await launch(port, directory, settings);
  const stop = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGCONT');
    child.kill(signal);
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    stall: () => child.kill('SIGSTOP'),
    async dropConnections() {
      const cli = spawn('redis-cli', ['-p', String(port), 'CLIENT', 'KILL', 'TYPE', 'normal'], { stdio: 'ignore' });
      const [code] = (await once(cli, 'exit')) as [number | null];
      if (code !== 0) throw new Error(`redis-cli CLIENT KILL exited with ${code}`);
    },
    resume: () => child.kill('SIGCONT'),
    kill: () => stop('SIGKILL'),
    async restart() {
      await stop('SIGKILL');
      child = await launch(port, directory, settings);
    },
    async close() {
      await stop('SIGTERM');
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
