// Voice metering and budgets with the real libraries: the voice service in this process, with discord.js
// and @discordjs/voice on the Discord stand-in, its realtime sessions on the emulator, and its time counted
// by the real Spending into a ledger on SQLite. Voice costs $60 a minute here ($1 a second), so that a
// budget of a few dollars runs out in seconds.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeTone, audible, type BotAudioFrame, type DiscordStandIn, type TestGuild } from 'discord-standin';
import { FORCE_MESSAGE_TONE_HZ, type RealtimeSession } from '../../src/emulator/realtime/session.ts';
import type { Emulator } from '../../src/emulator/server.ts';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { parsePrices } from '../../src/settings/prices.ts';
import type { SettingsService } from '../../src/settings/service.ts';
import type { VoiceService } from '../../src/voice/service.ts';
import type { LoggedVoiceEnd, LoggedVoiceStart } from '../../src/ports/moderation-log.ts';
import { pollUntil } from '../support/poll.ts';
import { worded } from '../support/worded.ts';
import { startVoiceServiceRig, type VoiceServiceRig } from '../support/voice-service-rig.ts';

/** Each realtime session lasts at most this long at the emulator: the bot reopens it, and both are counted. */
const SESSION_LIMIT_MS = 2_500;
const HEARTBEAT_MS = 200;
/** Session time as the emulator saw it and the bot counts it may differ by a websocket round trip and a busy event loop, per session. */
const SLACK_PER_SESSION_MS = 150;

let rig: VoiceServiceRig;
let emulator: Emulator;
let discord: DiscordStandIn;
let metered: TestGuild;
let budgeted: TestGuild;
let settings: SettingsService;
let service: VoiceService;

beforeAll(async () => {
  const prices = parsePrices(JSON.stringify({ voice: { '*': { per_minute_usd: 60 } } }));
  if (!prices.ok) throw new Error(prices.message);
  rig = await startVoiceServiceRig({
    emulator: { config: { timing: { realtime_session_max_ms: SESSION_LIMIT_MS } } },
    prices: prices.prices,
  });
  ({ emulator, discord, settings } = rig);
  // A short goodbye: the force_message tone lasts 5 ms per character.
  emulator.realtime.options.toneMsPerCharacter = 5;
  metered = discord.createGuild();
  budgeted = discord.createGuild();
  service = rig.voiceService({ spending: settings.spending, meterHeartbeatMs: HEARTBEAT_MS });
}, 60_000);

afterAll(async () => {
  await service?.stopAll();
  await rig?.close();
});

function memberInVoice(guild: TestGuild, user: TestGuild['member']): Promise<void> {
  return rig.memberInVoice(guild, user);
}

/** Until `ask` says yes: for what tells nothing unless asked (the ledger, an emulator session's close). */
function asked(ask: () => Promise<boolean>): Promise<true> {
  return pollUntil({
    ask,
    found: (yes) => (yes ? true : undefined),
    intervalMs: 25,
    timeoutMs: 15_000,
    timeoutError: () => new Error('not so within 15 s'),
  });
}

/** How long the emulator held each session of these open, from its configuration to its close. */
function openMs(sessions: readonly RealtimeSession[]): number {
  return sessions.reduce((sum, session) => {
    const opened = session.serverEvents.find((entry) => entry.event.type === 'session.updated')?.at;
    if (opened === undefined || session.closedAt === undefined) throw new Error(`session ${session.id} was not opened and closed`);
    return sum + (session.closedAt - opened);
  }, 0);
}

describe('a metered conversation', () => {
  it("counts each realtime session's time once, a reconnect included, for the member who brought the bot in and the server", async () => {
    const { id: guildId, member, admin } = metered;
    await memberInVoice(metered, member);
    const before = emulator.realtime.sessions.length;
    expect(await service.join(guildId, metered.voiceChannelId, metered.textChannelId, member.id)).toMatchObject({ ok: true });
    // The gateway ends the first session at its limit; the bot reopens one at once.
    await emulator.realtime.waitForClientEvent(
      (event, session) => event.type === 'session.update' && emulator.realtime.sessions.indexOf(session) > before,
      10_000,
    );
    // The heartbeat counts while the conversation goes on, not only at its end: here until the session
    // that replaced the first has run a good while too.
    await asked(
      async () => ((await settings.spending.ledger.day(guildId, Date.now())).users[member.id]?.voiceMs ?? 0) >= SESSION_LIMIT_MS + 1_500,
    );
    expect(await service.leave(guildId, { why: 'asked', by: 'test' })).toBe(true);
    const first = emulator.realtime.sessions.slice(before);
    expect(first.length).toBeGreaterThanOrEqual(2);
    await asked(() => Promise.resolve(first.every((session) => session.closedAt !== undefined)));

    // A second conversation, brought in by another member.
    await memberInVoice(metered, admin);
    const second = emulator.realtime.sessions.length;
    expect(await service.join(guildId, metered.voiceChannelId, metered.textChannelId, admin.id)).toMatchObject({ ok: true });
    expect(await service.leave(guildId, { why: 'asked', by: 'test' })).toBe(true);
    const other = emulator.realtime.sessions.slice(second);
    await asked(() => Promise.resolve(other.every((session) => session.closedAt !== undefined)));

    const day = (await settings.spending.ledger.day(guildId, Date.now())).users;
    const counted = { member: day[member.id]!.voiceMs, admin: day[admin.id]!.voiceMs };
    expect(Math.abs(counted.member - openMs(first))).toBeLessThanOrEqual(SLACK_PER_SESSION_MS * first.length);
    expect(Math.abs(counted.admin - openMs(other))).toBeLessThanOrEqual(SLACK_PER_SESSION_MS * other.length);
    // $1 a second, by the millisecond.
    expect(Math.abs(day[member.id]!.voiceUsdTicks - (counted.member / 1000) * USD_TICKS)).toBeLessThanOrEqual(1);
    // The server's view (/usage with Manage Server): both members, and the day's voice spend.
    const view = await settings.spending.usage(guildId, admin.id, true);
    expect(view.member.today.voiceMs).toBe(counted.admin);
    expect(view.server?.today[member.id]?.voiceMs).toBe(counted.member);
    const today = view.server?.days.at(-1);
    expect(today?.voiceUsd).toBeCloseTo((counted.member + counted.admin) / 1000, 2);
    expect(today?.videoUsd).toBe(0);
  });

  it("is told to the server's moderation log as it starts and ends, with how long it lasted and what it cost", async () => {
    const logged = discord.createGuild();
    const starts: LoggedVoiceStart[] = [];
    const ends: LoggedVoiceEnd[] = [];
    const withLog = rig.voiceService({
      spending: settings.spending,
      meterHeartbeatMs: HEARTBEAT_MS,
      moderationLog: { voiceStarted: (start) => starts.push(start), voiceEnded: (end) => ends.push(end) },
    });
    const { id: guildId, member } = logged;
    await memberInVoice(logged, member);
    const joinedAt = Date.now();
    expect(await withLog.join(guildId, logged.voiceChannelId, logged.textChannelId, member.id)).toMatchObject({ ok: true });
    expect(starts).toEqual([{ guildId, userId: member.id, voiceChannelId: logged.voiceChannelId, resumed: false }]);
    await asked(async () => ((await settings.spending.ledger.day(guildId, Date.now())).users[member.id]?.voiceMs ?? 0) >= 500);
    expect(await withLog.leave(guildId, { why: 'asked', by: member.id })).toBe(true);
    const lasted = Date.now() - joinedAt;
    const day = (await settings.spending.ledger.day(guildId, Date.now())).users[member.id]!;
    expect(ends).toEqual([
      {
        guildId,
        userId: member.id,
        voiceChannelId: logged.voiceChannelId,
        ms: expect.any(Number),
        usdTicks: day.voiceUsdTicks,
        restarting: false,
      },
    ]);
    expect(ends[0]!.ms).toBeGreaterThanOrEqual(day.voiceMs);
    expect(ends[0]!.ms).toBeLessThanOrEqual(lasted);
    expect(day.voiceUsdTicks).toBeGreaterThan(0);
  });

  it('warns when its budget is nearly spent, says why aloud and in the channel, leaves, and is refused again', async () => {
    const { id: guildId, member, admin } = budgeted;
    await settings.update(guildId, admin.id, 'budget', (current) => ({
      ...current,
      spending: { ...current.spending, budgets: { ...current.spending.budgets, member_daily_usd: 4 } },
    }));
    await memberInVoice(budgeted, member);
    const joined = await service.join(guildId, budgeted.voiceChannelId, budgeted.textChannelId, member.id);
    expect(joined).toMatchObject({ ok: true });

    // Under a minute left from the start: warned at once, in the channel and aloud.
    const warning = await discord.waitForMessage(budgeted.textChannelId, (message) => message.content.startsWith('⏳'));
    expect(warning.content).toMatch(
      /^⏳ \d seconds? of this conversation is left, then I leave: Your daily budget on this server \(\$4\.00\) is used up; it starts over <t:\d+:R>\.$/,
    );
    const spoken = (text: RegExp) =>
      emulator.realtime.waitForClientEvent((event) => {
        if (event.type !== 'conversation.item.create') return false;
        const item = event.item as { type?: unknown; content?: { text?: unknown }[] } | undefined;
        return item?.type === 'force_message' && text.test(String(item.content?.[0]?.text));
      }, 15_000);
    await spoken(
      /of this conversation is left, then I leave: Your daily budget on this server \(\$4\.00\) is used up; it starts over in \d+ hours?\./,
    );

    // Spent: the reason is said aloud, heard to its end, and only then does the bot leave.
    const goodbye = await spoken(
      /^Your daily budget on this server \(\$4\.00\) is used up; it starts over in \d+ hours?\. I am leaving now\. Goodbye\.$/,
    );
    const heard: readonly BotAudioFrame[] = await discord.voice.waitForBotAudio(
      guildId,
      (frames) => audible(frames.filter((frame) => frame.receivedAt >= goodbye.event.at)).length >= 10,
      15_000,
    );
    const tone = analyzeTone(joinedPcm(audible(heard.filter((frame) => frame.receivedAt >= goodbye.event.at))));
    expect(tone.dominantHz).toBeCloseTo(FORCE_MESSAGE_TONE_HZ, -1);
    await discord.waitForMessage(budgeted.textChannelId, (message) =>
      message.content.startsWith(
        `Stopped listening in <#${budgeted.voiceChannelId}>. Your daily budget on this server ($4.00) is used up;`,
      ),
    );
    await discord.voice.waitForBotDisconnect(guildId);
    expect(service.isIn(guildId)).toBe(false);
    const spent = (await settings.spending.ledger.day(guildId, Date.now())).users[member.id]!;
    expect(spent.voiceUsdTicks).toBeGreaterThanOrEqual(4 * USD_TICKS);

    // Worded for the server (an English one here), whoever asked.
    expect(worded(await service.join(guildId, budgeted.voiceChannelId, budgeted.textChannelId, member.id))).toEqual({
      ok: false,
      audience: 'channel',
      message: expect.stringMatching(/^I cannot start a conversation: your daily budget on this server \(\$4\.00\) is used up;/),
    });
    expect(discord.botVoiceChannel(guildId)).toBeUndefined();
  });
});

function joinedPcm(frames: readonly BotAudioFrame[]): Int16Array {
  const out = new Int16Array(frames.reduce((sum, frame) => sum + frame.pcm.length, 0));
  let offset = 0;
  for (const frame of frames) {
    out.set(frame.pcm, offset);
    offset += frame.pcm.length;
  }
  return out;
}
