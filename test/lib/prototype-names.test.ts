import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MalformedResponseError } from '../../src/gateway/errors.ts';
import { parseServerEvent } from '../../src/gateway/realtime/events.ts';
import { parseTaskResult } from '../../src/gateway/task-result.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { DEFAULT_PRICES, estimateVideoUsdTicks, parsePrices, voiceUsdTicksPerSecond } from '../../src/settings/prices.ts';
import { UsageLedger } from '../../src/settings/usage.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { parseVideoActionId } from '../../src/video/actions.ts';
import { TaskRepository } from '../../src/video/repository.ts';
import { taskRecord } from '../support/task-result.ts';

// Every lookup keyed by a word from outside (a gateway's status, an event type, a model, a custom id, a
// stored member id) finds only its own keys: the names a plain object's prototype lends are just words.

const BUILT_IN_NAMES = ['toString', '__proto__', 'constructor', 'hasOwnProperty', 'valueOf'];

describe('words that name an object built-in', () => {
  it.each(BUILT_IN_NAMES)('a task status "%s" is an unknown status, not a state', (status) => {
    for (const layer of ['compat', 'native'] as const) {
      expect(() =>
        parseTaskResult({
          id: 't1',
          layer,
          requestId: 'req_1',
          httpStatus: 200,
          body: JSON.parse(`{"status": ${JSON.stringify(status)}}`),
        }),
      ).toThrow(MalformedResponseError);
    }
  });

  it.each(BUILT_IN_NAMES)('a realtime event of type "%s" is an event the client does not know', (type) => {
    expect(parseServerEvent(JSON.stringify({ type }))).toMatchObject({ type: 'other', name: type });
  });

  it.each(BUILT_IN_NAMES)('a model or resolution "%s" is priced as any other unknown one', (name) => {
    const ordinary = estimateVideoUsdTicks(DEFAULT_PRICES, { model: 'some-model', operation: 'generate', duration: 8 });
    expect(estimateVideoUsdTicks(DEFAULT_PRICES, { model: name, operation: 'generate', duration: 8, resolution: name })).toBe(ordinary);
    expect(voiceUsdTicksPerSecond(DEFAULT_PRICES, name)).toBe(voiceUsdTicksPerSecond(DEFAULT_PRICES, 'some-model'));
  });

  it('a prices file may name a model "__proto__" or "constructor": they are models like any other', () => {
    const parsed = parsePrices(
      '{"video": {"__proto__": {"per_second_usd": {"480p": 1}}}, "voice": {"constructor": {"per_minute_usd": 6}}}',
    );
    if (!parsed.ok) throw new Error(parsed.message);
    expect(estimateVideoUsdTicks(parsed.prices, { model: '__proto__', operation: 'generate', duration: 1, resolution: '480p' })).toBe(1e10);
    expect(estimateVideoUsdTicks(parsed.prices, { model: 'other', operation: 'generate', duration: 1, resolution: '480p' })).toBe(5e8);
    expect(voiceUsdTicksPerSecond(parsed.prices, 'constructor')).toBe(1e9);
  });

  it.each(BUILT_IN_NAMES)('a button id with the action "%s" is no button of the bot', (action) => {
    expect(parseVideoActionId(`video:${action}:v123`)).toBeUndefined();
  });
});

describe('stored records keyed by words from outside', () => {
  let directory: string | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  async function open(): Promise<Store> {
    directory ??= mkdtempSync(join(tmpdir(), 'prototype-names-'));
    store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
    return store;
  }

  /** Writes a record as something else than the bot (a damaged store, an older version), then opens the store again. */
  async function writeRaw(collection: string, id: string, value: unknown): Promise<Store> {
    await (await open()).collection(collection, (raw) => raw).set(id, value);
    await store!.close();
    return open();
  }

  it('a day record with a member key "__proto__" reads as that member, and other members as themselves', async () => {
    const day = Date.UTC(2026, 10, 28, 12);
    const opened = await writeRaw('usage_days', 'g:2026-11-28', JSON.parse('{"users": {"__proto__": {"tasks": 2, "costTicks": 7}}}'));
    const ledger = new UsageLedger(opened, silentLogger);
    const usage = await ledger.day('g', day);
    expect(Object.getPrototypeOf(usage.users)).toBe(Object.prototype);
    expect(Object.hasOwn(usage.users, '__proto__')).toBe(true);
    expect((await ledger.spent('g', 'toString', day, true)).memberToday).toBe(0);
    await ledger.meterVoice('g', 'constructor', day, 1000, 5);
    expect((await ledger.spent('g', 'constructor', day, true)).memberToday).toBe(5);
    expect((await ledger.month('g', day)).__proto__).toMatchObject({ tasks: 2, costUsdTicks: 7 });
  });

  it("one unreadable task leaves the member's list and limits working, and is logged once with its key", async () => {
    const lines: { message: string; fields: Record<string, unknown> }[] = [];
    const log = { ...silentLogger, error: (message: string, fields: Record<string, unknown> = {}) => lines.push({ message, fields }) };
    const good = taskRecord({ id: 'v1good00000000000000', guildId: 'g', userId: 'alice', state: 'running' });
    const bad = taskRecord({ id: 'v1bad000000000000000', guildId: 'g', userId: 'alice', state: 'running' });
    const writer = new TaskRepository(await open(), silentLogger);
    await writer.create(good);
    await writer.create(bad);
    await store!.close();
    // What a broken record looks like in the store: a state that is no state.
    const repository = new TaskRepository(await writeRaw('tasks', bad.id, { ...bad, state: 'toString' }), log);
    expect((await repository.recentForUser('g', 'alice')).map((task) => task.id)).toEqual([good.id]);
    expect((await repository.recentForUser('g', 'alice')).map((task) => task.id)).toEqual([good.id]);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.fields.task).toBe(bad.id);
  });
});
