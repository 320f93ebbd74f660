import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isRecord, readNumber } from '../../src/lib/json.ts';
import { waitUntil } from '../../src/lib/wait-until.ts';

// Starts the emulator in a child process (emulator-child.ts) and talks to it over IPC: its port, its
// heap after a full collection, and whether it is still alive.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface EmulatorProcess {
  readonly port: number;
  readonly baseUrl: string;
  readonly wsUrl: string;
  /** The exit code or signal, once the process has ended (it must not, until stop()). */
  exited(): string | undefined;
  /** Bytes of heap in use after two full collections. */
  heapUsed(): Promise<number>;
  /** Everything the process wrote to stderr (a crash's stack lands there). */
  stderr(): string;
  stop(): Promise<void>;
}

function nextMessage(child: ChildProcess, type: string, timeoutMs: number): Promise<Readonly<Record<string, unknown>>> {
  let found: Readonly<Record<string, unknown>> | undefined;
  const onMessage = (message: unknown) => {
    if (isRecord(message) && message.type === type) found = message;
  };
  child.on('message', onMessage);
  return waitUntil({
    check: () => found,
    subscribe: (wake, fail) => {
      const onExit = () => fail(new Error(`the emulator process ended before sending ${type}`));
      child.on('message', wake);
      child.once('exit', onExit);
      return () => {
        child.off('message', wake);
        child.off('exit', onExit);
      };
    },
    timeoutMs,
    timeoutError: () => new Error(`the emulator process sent no ${type} within ${timeoutMs} ms`),
  }).finally(() => child.off('message', onMessage));
}

export async function startEmulatorProcess(): Promise<EmulatorProcess> {
  const child = spawn(join(ROOT, 'scripts', 'node'), ['--expose-gc', join(ROOT, 'test', 'emulator', 'emulator-child.ts')], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exit: string | undefined;
  child.once('exit', (code, signal) => (exit = signal ?? `code ${code}`));
  const listening = await nextMessage(child, 'listening', 30_000);
  const port = readNumber(listening, 'port');
  if (port === undefined) throw new Error('the emulator process sent no port');
  return {
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    exited: () => exit,
    async heapUsed() {
      const answer = nextMessage(child, 'memory', 10_000);
      child.send({ type: 'memory' });
      const heap = readNumber(await answer, 'heapUsed');
      if (heap === undefined) throw new Error('the emulator process sent no heap size');
      return heap;
    },
    stderr: () => stderr,
    async stop() {
      if (exit !== undefined) return;
      const ended = once(child, 'exit');
      child.send({ type: 'close' });
      await ended;
    },
  };
}
