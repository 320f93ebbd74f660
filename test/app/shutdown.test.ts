import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { readString } from '../../src/lib/json.ts';
import { createLogger } from '../../src/lib/log.ts';
import { createShutdown, SHUTDOWN_DEADLINE_MS } from '../../src/shutdown.ts';

// What a signal does to the process: the exit code after a clean, failed or hung stop, a second signal,
// and the same stop asked for twice (a worker's).

let messages: string[];
let exits: number[];

function shutdownWith(stop: () => Promise<void>) {
  const log = createLogger({ write: (line) => messages.push(readString(JSON.parse(line), 'msg') ?? '') });
  return createShutdown({ log, stop, exit: (code) => exits.push(code) });
}

beforeEach(() => {
  messages = [];
  exits = [];
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('shutdown on a signal', () => {
  it('exits 0 once the stop has finished', async () => {
    await shutdownWith(async () => {})('SIGINT');
    expect(exits).toEqual([0]);
  });

  it('exits 1 when the stop fails, and says why', async () => {
    await shutdownWith(() => Promise.reject(new Error('store would not close')))('SIGTERM');
    expect(exits).toEqual([1]);
    expect(messages).toContain('shutdown failed');
  });

  it('exits 1 with a log line when the stop hangs past the deadline', async () => {
    void shutdownWith(() => new Promise<void>(() => {}))('SIGTERM');
    await vi.advanceTimersByTimeAsync(SHUTDOWN_DEADLINE_MS - 1);
    expect(exits).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(exits).toEqual([1]);
    expect(messages).toContain('shutdown did not finish in time; exiting without finishing what is in flight');
  });

  it('exits at once on a second signal, and stops only once', async () => {
    let stops = 0;
    const shutdown = shutdownWith(() => {
      stops++;
      return new Promise<void>(() => {});
    });
    void shutdown('SIGINT');
    await shutdown('SIGINT');
    expect(exits).toEqual([1]);
    expect(stops).toBe(1);
    expect(messages).toContain('second signal: exiting without finishing what is in flight');
  });

  it("takes a signal repeated as 'same stop' (a worker's, from its group and its supervisor) as the one stop under way: exits 0 once it ends", async () => {
    let finish!: () => void;
    let stops = 0;
    const shutdown = shutdownWith(() => {
      stops++;
      return new Promise<void>((resolve) => (finish = resolve));
    });
    const stopping = shutdown('SIGINT', 'same stop');
    await shutdown('SIGTERM', 'same stop');
    expect(exits).toEqual([]);
    finish();
    await stopping;
    expect(exits).toEqual([0]);
    expect(stops).toBe(1);
    expect(messages).not.toContain('second signal: exiting without finishing what is in flight');
  });

  it("still exits at once on an 'exit now' request during a stop that signals repeat (a worker whose supervisor went away)", async () => {
    const shutdown = shutdownWith(() => new Promise<void>(() => {}));
    void shutdown('SIGINT', 'same stop');
    await shutdown('supervisor gone', 'exit now');
    expect(exits).toEqual([1]);
  });
});
