// The conversation meter on its own: what it hands the ledger and when, and when a live conversation is
// warned and ended, with the clock and the ledger the test's (the heartbeat is 30 s; nothing waits it out).

import { notice, word, type Notice } from '../../src/wording/notice.ts';
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import type { VoiceBudgetLeft, VoiceSpending, VoiceUse } from '../../src/ports/voice-spend.ts';
import { BUDGET_WARNING_MS, ConversationMeter } from '../../src/voice/meter.ts';
import { budgetSpent, budgetWarning } from '../../src/voice/budget-notices.ts';
import { ChannelLines } from '../../src/voice/channel-lines.ts';
import { SpokenLines } from '../../src/voice/spoken-lines.ts';
import type { DiscordOutbox } from '../../src/discord/outbox.ts';
import type { Client } from 'discord.js';
import { ENGLISH, resolveLocale, t } from '../../src/i18n/index.ts';

const HEARTBEAT_MS = 30_000;
const REASON = 'Your daily budget on this server ($1.00) is used up; it starts over <t:2000:R>.';
/** What the spending port tells the meter: the budget that bounds the conversation. */
const REASON_NOTICE = notice('budget.used-up', { budget: 'member_daily_usd', amount: '$1.00', resets: '<t:2000:R>' });

/** A ledger with a budget of `budgetMs` of session time (undefined: none), that can be made to fail. */
class FakeLedger implements VoiceSpending {
  readonly uses: VoiceUse[] = [];
  down = false;
  budgetMs: number | undefined;
  constructor(budgetMs: number | undefined) {
    this.budgetMs = budgetMs;
  }
  checkStart() {
    return Promise.resolve({ ok: true as const });
  }
  meter(use: VoiceUse): Promise<VoiceBudgetLeft> {
    if (this.down) return Promise.reject(new Error('store down'));
    this.uses.push(use);
    const spent = this.uses.reduce((sum, each) => sum + each.ms, 0);
    return Promise.resolve({
      msLeft: this.budgetMs === undefined ? undefined : this.budgetMs - spent,
      reason: REASON_NOTICE,
    });
  }
  get counted(): number {
    return this.uses.reduce((sum, each) => sum + each.ms, 0);
  }
}

class FakeSession extends EventEmitter<{ close: [] }> {}

let ledger: FakeLedger;
let warnings: { msLeft: number; reason: Notice }[];
let spent: string[];
let meter: ConversationMeter;

function meterFor(budgetMs: number | undefined): ConversationMeter {
  ledger = new FakeLedger(budgetMs);
  warnings = [];
  spent = [];
  meter = new ConversationMeter({
    spending: ledger,
    guildId: 'g',
    userId: 'u',
    model: 'svc-voice',
    heartbeatMs: HEARTBEAT_MS,
    log: silentLogger,
    onWarning: (left) => warnings.push(left),
    onSpent: ({ reason }) => spent.push(word(ENGLISH, reason)),
  });
  return meter;
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(async () => {
  await meter?.end();
  vi.useRealTimers();
});

describe('the conversation meter', () => {
  it('counts each session from its opening to its close, once, overlaps of a renewal included', async () => {
    meterFor(undefined);
    const first = new FakeSession();
    meter.opened(first);
    await meter.start();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    expect(ledger.counted).toBe(30_000);
    // A renewal: the fresh session opens 10 s later, the old one closes 2 s after that.
    await vi.advanceTimersByTimeAsync(10_000);
    const renewed = new FakeSession();
    meter.opened(renewed);
    await vi.advanceTimersByTimeAsync(2_000);
    first.emit('close');
    first.emit('close');
    await vi.advanceTimersByTimeAsync(0);
    // The close is counted at once: the old session's 12 s, and the renewed one's 2 s so far.
    expect(ledger.counted).toBe(44_000);
    await vi.advanceTimersByTimeAsync(18_000);
    expect(ledger.counted).toBe(62_000);
    await vi.advanceTimersByTimeAsync(5_000);
    await meter.end();
    expect(ledger.counted).toBe(67_000);
    // Closed after the end: counted already.
    renewed.emit('close');
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    expect(ledger.counted).toBe(67_000);
    expect(ledger.uses.every((use) => use.guildId === 'g' && use.userId === 'u' && use.model === 'svc-voice')).toBe(true);
  });

  it('keeps the time of a reading the store could not take for the next one', async () => {
    meterFor(undefined);
    meter.opened(new FakeSession());
    await meter.start();
    ledger.down = true;
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    expect(ledger.counted).toBe(0);
    ledger.down = false;
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    expect(ledger.counted).toBe(60_000);
  });

  it('warns a minute before the budget runs out, once, and ends when a fresh reading says it is spent', async () => {
    meterFor(100_000);
    meter.opened(new FakeSession());
    await meter.start();
    await vi.advanceTimersByTimeAsync(40_000 - 1);
    expect(warnings).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(warnings).toEqual([{ msLeft: BUDGET_WARNING_MS, reason: REASON_NOTICE }]);
    await vi.advanceTimersByTimeAsync(BUDGET_WARNING_MS - 1);
    expect(spent).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(spent).toEqual([REASON]);
    expect(ledger.counted).toBe(100_000);
    expect(warnings).toHaveLength(1);
  });

  it('moves the deadline with what each reading says is left (a video spent meanwhile, a budget raised)', async () => {
    meterFor(100_000);
    meter.opened(new FakeSession());
    await meter.start();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    ledger.budgetMs = 50_000;
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    // Read at 60 s with 50 s of budget: spent; warned first, since it had not been.
    expect(warnings).toEqual([{ msLeft: expect.any(Number), reason: REASON_NOTICE }]);
    expect(spent).toEqual([REASON]);
  });

  it('goes on when the deadline comes but a fresh reading finds the budget raised', async () => {
    meterFor(70_000);
    meter.opened(new FakeSession());
    await meter.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(warnings).toHaveLength(1);
    ledger.budgetMs = 10 * 60_000;
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS * 3);
    expect(spent).toEqual([]);
    expect(warnings).toHaveLength(1);
  });

  it('warns at once when the conversation starts with under a minute left, and ends on the last reading when the store is down', async () => {
    meterFor(20_000);
    meter.opened(new FakeSession());
    await meter.start();
    expect(warnings).toEqual([{ msLeft: 20_000, reason: REASON_NOTICE }]);
    ledger.down = true;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(spent).toEqual([REASON]);
  });

  it('counts nothing and warns of nothing without a budget and without a session open', async () => {
    meterFor(undefined);
    await meter.start();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS * 2);
    expect(ledger.counted).toBe(0);
    expect(warnings).toEqual([]);
  });
});

describe('budget notices', () => {
  /** A server (its preferred language `server`) whose conversation speaks `spoken` (the server's when undefined). */
  function renderers(server: string, spoken?: string): { channel: ChannelLines; say: (told: Notice, now: number) => string } {
    const client = { guilds: { cache: new Map([['g', { preferredLocale: server }]]) } } as unknown as Client;
    const channel = new ChannelLines({ client, outbox: {} as DiscordOutbox, log: silentLogger });
    const spokenLines = new SpokenLines(channel);
    return { channel, say: (told, now) => spokenLines.line('g', { language: spoken }, told, now) };
  }

  it('show the reset time in the channel and say it in words aloud', () => {
    const now = 2000_000 - 3 * 3600_000;
    const { channel, say } = renderers('en-US');
    const warning = budgetWarning(12_000, REASON_NOTICE);
    expect(channel.word('g', warning)).toBe(
      '⏳ 12 seconds of this conversation is left, then I leave: Your daily budget on this server ($1.00) is used up; it starts over <t:2000:R>.',
    );
    expect(say(warning, now)).toBe(
      '12 seconds of this conversation is left, then I leave: Your daily budget on this server ($1.00) is used up; it starts over in 3 hours.',
    );
    expect(channel.word('g', budgetWarning(60_000, REASON_NOTICE))).toMatch(
      /^⏳ About a minute of this conversation is left, then I leave/,
    );
    expect(say(budgetSpent(REASON_NOTICE), now)).toBe(
      'Your daily budget on this server ($1.00) is used up; it starts over in 3 hours. I am leaving now. Goodbye.',
    );
  });

  it("are said aloud in the conversation's language when it is not the server's, and shown in the server's", () => {
    const now = 2000_000 - 3 * 3600_000;
    const german = resolveLocale('de', undefined, 'member');
    const { channel, say } = renderers('en-US', 'de');
    const spokenReason = word(german, REASON_NOTICE).replace('<t:2000:R>', 'in 3 Stunden');
    const warning = budgetWarning(12_000, REASON_NOTICE);
    expect(channel.word('g', warning)).toBe(`⏳ ${t(ENGLISH, 'voice.budget.warning', { left: '12 seconds', reason: REASON })}`);
    expect(say(warning, now)).toBe(t(german, 'voice.budget.warning', { left: '12 Sekunden', reason: spokenReason }));
    expect(say(budgetSpent(REASON_NOTICE), now)).toBe(t(german, 'voice.budget.spent', { reason: spokenReason }));
  });
});
