import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { settledWithin, waitUntil } from '../../src/lib/wait-until.ts';

function waitForWord(events: EventEmitter, seen: string[], word: string, timeoutMs = 1_000) {
  return waitUntil({
    check: () => seen.find((entry) => entry === word),
    subscribe: (wake, fail) => {
      events.on('word', wake);
      events.on('gone', fail);
      return () => {
        events.off('word', wake);
        events.off('gone', fail);
      };
    },
    timeoutMs,
    timeoutError: () => new Error(`no "${word}"`),
  });
}

describe('waitUntil', () => {
  it('finds what is already there without waiting', async () => {
    await expect(waitForWord(new EventEmitter(), ['hello'], 'hello')).resolves.toBe('hello');
  });

  it('finds what arrives later, and stops listening', async () => {
    const events = new EventEmitter();
    const seen: string[] = [];
    const waiting = waitForWord(events, seen, 'ready');
    seen.push('starting');
    events.emit('word');
    seen.push('ready');
    events.emit('word');
    await expect(waiting).resolves.toBe('ready');
    expect(events.listenerCount('word') + events.listenerCount('gone')).toBe(0);
  });

  it('gives up when told to, or when the time is up, and stops listening', async () => {
    const events = new EventEmitter();
    const failed = waitForWord(events, [], 'ready');
    events.emit('gone', new Error('the process exited'));
    await expect(failed).rejects.toThrow('the process exited');
    await expect(waitForWord(events, [], 'ready', 10)).rejects.toThrow('no "ready"');
    expect(events.listenerCount('word') + events.listenerCount('gone')).toBe(0);
  });
});

describe('settledWithin', () => {
  it('gives what a promise comes to in time, undefined when it is late, and passes a rejection in time on', async () => {
    expect(await settledWithin(Promise.resolve('at once'), 1_000)).toBe('at once');
    expect(await settledWithin(new Promise<string>(() => undefined), 10)).toBeUndefined();
    await expect(settledWithin(Promise.reject(new Error('refused')), 1_000)).rejects.toThrow('refused');
  });
});
