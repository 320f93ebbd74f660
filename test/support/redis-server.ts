import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
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
  /** Starts the server again on the same port (after kill()); what it held is gone. */
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

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child = await launch(port);
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
      child = await launch(port);
    },
    close: () => stop('SIGTERM'),
  };
}
