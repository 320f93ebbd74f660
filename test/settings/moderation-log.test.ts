import { DiscordAPIError, MessageFlags, type REST } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { resolveLocale } from '../../src/i18n/index.ts';
import { createLogger, type Logger } from '../../src/lib/log.ts';
import type { LoggedJob, LoggedRefusal } from '../../src/ports/moderation-log.ts';
import { userInstallScope } from '../../src/ports/user-install.ts';
import { LOG_BATCH_MS, ModerationLog, isLoggedRefusal, type ModerationLogOptions } from '../../src/settings/moderation-log.ts';
import { notice, type Notice } from '../../src/wording/notice.ts';
import englishCatalog from '../../src/i18n/catalogs/en.json' with { type: 'json' };

// A server's moderation log as its own part: the lines it writes, how it gathers them into few messages,
// and what it does when Discord will not take them. Its outbox is a fake that records what it is given.

const GUILD = '100000000000000001';
const LOG_CHANNEL = '300000000000000003';
const CARD_CHANNEL = '300000000000000004';
const MEMBER = '200000000000000002';

interface Posted {
  channelId: string;
  content: string;
}

let posted: Posted[];
/** Called at each post, after it is recorded. */
let onPost: () => void;
let logLines: string[];
let log: Logger;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  posted = [];
  onPost = () => undefined;
  logLines = [];
  log = createLogger({ level: 'debug', write: (line) => logLines.push(line) });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A log for one server whose log channel is LOG_CHANNEL, posting into `posted`. */
function moderationLog(options: Partial<ModerationLogOptions> = {}): ModerationLog {
  return new ModerationLog({
    logChannel: (guildId) => Promise.resolve(guildId === GUILD ? LOG_CHANNEL : undefined),
    post: (channelId, content) => {
      posted.push({ channelId, content });
      onPost();
      return Promise.resolve();
    },
    log,
    ...options,
  });
}

function job(overrides: Partial<LoggedJob> = {}): LoggedJob {
  return {
    guildId: GUILD,
    channelId: CARD_CHANNEL,
    messageId: '400000000000000005',
    userId: MEMBER,
    prompt: 'a red fox in the snow',
    videos: 1,
    estimateUsdTicks: 0.4 * USD_TICKS,
    ...overrides,
  };
}

/** Every line posted, in order. */
function linesPosted(): string[] {
  return posted.flatMap((message) => message.content.split('\n'));
}

describe('the lines', () => {
  it('name a job’s member, prompt, estimate and card', async () => {
    const logged = moderationLog();
    logged.job(job());
    logged.job(job({ messageId: undefined, videos: 3, estimateUsdTicks: 3 * 0.4 * USD_TICKS }));
    await logged.flush();
    expect(linesPosted()).toEqual([
      `🎬 <@${MEMBER}> asked for a video, about $0.40: “a red fox in the snow” https://discord.com/channels/${GUILD}/${CARD_CHANNEL}/400000000000000005`,
      // The card's message not known yet: its channel.
      `🎬 <@${MEMBER}> asked for 3 videos, about $1.20: “a red fox in the snow” <#${CARD_CHANNEL}>`,
    ]);
    expect(posted.map((message) => message.channelId)).toEqual([LOG_CHANNEL]);
  });

  it('cut a prompt to 200 characters, on one line, its Markdown shown as typed', async () => {
    const logged = moderationLog();
    const prompt = `**bold** fox\n\n${'a'.repeat(300)}`;
    logged.job(job({ prompt }));
    await logged.flush();
    const [line] = linesPosted();
    const quoted = /“(.*)”/.exec(line ?? '')?.[1] ?? '';
    expect(quoted.replaceAll('\\', '')).toBe(`**bold** fox ${'a'.repeat(186)}…`);
    expect(quoted.replaceAll('\\', '')).toHaveLength(200);
    expect(quoted.startsWith('\\*\\*bold\\*\\* fox a')).toBe(true);
    expect(linesPosted()).toHaveLength(1);
  });

  it('say a refusal by a limit, a budget or a rule, with its reason, and leave other refusals out', async () => {
    const logged = moderationLog();
    logged.refused({
      guildId: GUILD,
      userId: MEMBER,
      what: 'video',
      why: notice('limits.member-daily', { count: 5, retry: '<t:1700000000:R>' }),
      prompt: 'a dragon',
    });
    logged.refused({ guildId: GUILD, userId: MEMBER, what: 'video', why: notice('video.refusal.not-mp4', { file: 'x.mov' }) });
    logged.refused({
      guildId: GUILD,
      userId: MEMBER,
      what: 'voice',
      why: notice('voice.budget.cannot-start', { budgetName: "this server's daily budget ($5.00)", resets: '<t:1700000000:R>' }),
    });
    await logged.flush();
    expect(linesPosted()).toEqual([
      `🚫 <@${MEMBER}> was refused a video: You reached this server's limit of 5 videos a day. Try again <t:1700000000:R>. — “a dragon”`,
      `🚫 <@${MEMBER}> was refused a voice conversation: I cannot start a conversation: this server's daily budget ($5.00) is used up; it starts over <t:1700000000:R>.`,
    ]);
  });

  it('say every refusal by a moderators’ rule: a blocked word typed or asked for again, a denied member, a channel, by voice', async () => {
    const logged = moderationLog();
    const refused = (what: LoggedRefusal['what'], why: LoggedRefusal['why'], extra: Partial<LoggedRefusal> = {}) =>
      logged.refused({ guildId: GUILD, userId: MEMBER, what, why, ...extra });
    refused('video', notice('video.refusal.blocked-word', { option: 'prompt', word: 'dragon' }));
    refused('video', notice('video.refusal.blocked-word-again', { word: 'dragon*' }));
    refused('command', notice('rules.refusal.denied'), { command: '`/video list`' });
    refused('command', notice('rules.refusal.video-channels', { what: '**Animate image**', channels: '<#1>' }), {
      command: '**Animate image**',
    });
    refused('voice-tool', notice('video.voice.blocked-word', { word: 'dragon' }), { prompt: 'a DRAGON!' });
    refused('voice-tool', notice('video.voice.member-denied', { member: '<@9>' }));
    await logged.flush();
    expect(linesPosted()).toEqual([
      `🚫 <@${MEMBER}> was refused a video: \`prompt\`: this server's rules do not allow "dragon".`,
      `🚫 <@${MEMBER}> was refused a video: This video's prompt contains "dragon*", which this server's rules do not allow, so it cannot be made again.`,
      `🚫 <@${MEMBER}> was refused \`/video list\`: You may not use this bot on this server: a moderator has denied it.`,
      `🚫 <@${MEMBER}> was refused **Animate image**: **Animate image** is used in <#1> on this server.`,
      `🚫 <@${MEMBER}> was refused a request made by voice: Refused by this server's rules: the request contains "dragon", which its moderators do not allow. No video was made. — “a DRAGON!”`,
      `🚫 <@${MEMBER}> was refused a request made by voice: Nothing was done: <@9> spoke in this request, and this server's moderators do not let them use this bot.`,
    ]);
  });

  it('say each task the provider’s content moderation refused or withheld, with its card', async () => {
    const logged = moderationLog();
    const moderation = { guildId: GUILD, channelId: CARD_CHANNEL, messageId: '400000000000000005', userId: MEMBER, prompt: 'a dragon' };
    logged.moderated({ ...moderation, outcome: 'refused', charged: false });
    logged.moderated({ ...moderation, outcome: 'refused', charged: true });
    logged.moderated({ ...moderation, messageId: undefined, outcome: 'withheld', charged: true });
    await logged.flush();
    const card = `https://discord.com/channels/${GUILD}/${CARD_CHANNEL}/400000000000000005`;
    expect(linesPosted()).toEqual([
      `🛡️ The provider's content moderation refused the prompt of <@${MEMBER}> (nothing was charged): “a dragon” ${card}`,
      `🛡️ The provider's content moderation refused the prompt of <@${MEMBER}>: “a dragon” ${card}`,
      `🛡️ The provider's content moderation withheld the video <@${MEMBER}> asked for (not posted): “a dragon” <#${CARD_CHANNEL}>`,
    ]);
  });

  it('keep every refusal a moderators’ rule words, whatever its key: a new one under rules. is kept without a change here', () => {
    const keys = Object.keys(englishCatalog);
    const byRule = keys.filter(
      (key) =>
        key.startsWith('rules.refusal.') ||
        key.startsWith('video.refusal.blocked-word') ||
        key.startsWith('video.voice.member-') ||
        key === 'video.voice.blocked-word' ||
        key === 'gateway-error.moderated',
    );
    expect(byRule.length).toBeGreaterThanOrEqual(8);
    for (const key of byRule) expect(isLoggedRefusal({ key } as Notice), key).toBe(true);
    // A member's own mistakes are theirs, not the moderators'.
    for (const key of ['video.refusal.not-mp4', 'video.refusal.task-unknown', 'config.key.no-key'])
      expect(isLoggedRefusal({ key } as Notice), key).toBe(false);
  });

  it('say who changed the settings and what, and each voice conversation’s start and end with its length and cost', async () => {
    const logged = moderationLog();
    logged.configChanged({ guildId: GUILD, by: MEMBER, change: 'set the log channel to <#300000000000000003>' });
    logged.voiceStarted({ guildId: GUILD, userId: MEMBER, voiceChannelId: '500', resumed: false });
    logged.voiceEnded({ guildId: GUILD, userId: MEMBER, voiceChannelId: '500', ms: 754_400, usdTicks: 1.26 * USD_TICKS, restarting: true });
    logged.voiceStarted({ guildId: GUILD, userId: MEMBER, voiceChannelId: '500', resumed: true });
    logged.voiceEnded({ guildId: GUILD, userId: MEMBER, voiceChannelId: '500', ms: 60_000, usdTicks: 0.1 * USD_TICKS, restarting: false });
    await logged.flush();
    expect(linesPosted()).toEqual([
      `⚙️ <@${MEMBER}> changed the settings: set the log channel to <#300000000000000003>`,
      `🎙️ <@${MEMBER}> started a voice conversation in <#500>.`,
      `🎙️ The voice conversation <@${MEMBER}> started in <#500> paused for a restart after 12 minutes, 34 seconds; it cost $1.26 so far.`,
      `🎙️ The voice conversation <@${MEMBER}> started in <#500> is back after a restart.`,
      `🎙️ The voice conversation <@${MEMBER}> started in <#500> ended after 1 minute; it cost $0.10.`,
    ]);
  });

  it('are in the server’s language', async () => {
    const french = resolveLocale('fr', undefined, 'channel');
    const logged = moderationLog({ serverLocale: () => french });
    logged.job(job({ videos: 2, estimateUsdTicks: 0.8 * USD_TICKS }));
    await logged.flush();
    expect(linesPosted()[0]).toMatch(/^🎬 <@\d+> a demandé 2 vidéos, environ 0,80\s\$(US)?\s?: « a red fox in the snow » https:/);
  });

  it('go nowhere for a server without a log channel, or a member’s own install', async () => {
    const logged = moderationLog();
    logged.job(job({ guildId: '999' }));
    logged.job(job({ guildId: userInstallScope(MEMBER) }));
    await logged.flush();
    expect(posted).toEqual([]);
  });
});

describe('batching', () => {
  it('gathers a burst of jobs into as few messages as hold them, every line once, in order', async () => {
    const logged = moderationLog();
    const prompts = Array.from({ length: 30 }, (_, index) => `a red fox number ${index + 1} in the snow`);
    for (const prompt of prompts) logged.job(job({ prompt }));
    await vi.advanceTimersByTimeAsync(LOG_BATCH_MS - 1);
    // Before the 2 s are up, only messages as full as they get.
    const early = posted.length;
    await vi.advanceTimersByTimeAsync(1);
    const lines = linesPosted();
    expect(lines).toHaveLength(30);
    expect(lines.map((line) => /“(.*)”/.exec(line)?.[1])).toEqual(prompts);
    expect(posted).toHaveLength(3);
    expect(early).toBe(2);
    for (const [index, message] of posted.entries()) {
      expect(message.content.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
      // Each message but the last had no room for the next line.
      const next = posted[index + 1]?.content.split('\n')[0];
      if (next !== undefined) expect(`${message.content}\n${next}`.length).toBeGreaterThan(MESSAGE_LIMITS.content);
    }
  });

  it('posts a full message at once, and the rest when the 2 s are up', async () => {
    const logged = moderationLog();
    const long = 'a fox '.repeat(30);
    const first = new Promise<void>((resolve) => {
      onPost = resolve;
    });
    for (let index = 0; index < 12; index++) logged.job(job({ prompt: `${index} ${long}` }));
    // No time passes: the lines that fill a message go without waiting.
    await first;
    expect(posted.length).toBe(1);
    expect(posted[0]!.content.length).toBeGreaterThan(MESSAGE_LIMITS.content - 300);
    await vi.advanceTimersByTimeAsync(LOG_BATCH_MS);
    expect(linesPosted()).toHaveLength(12);
    expect(posted.length).toBe(2);
  });

  it('keeps at most its limit of lines waiting, dropping the oldest and saying how many', async () => {
    const logged = moderationLog({ maxWaitingLines: 5 });
    for (let index = 1; index <= 8; index++) logged.job(job({ prompt: `fox ${index}` }));
    await vi.advanceTimersByTimeAsync(LOG_BATCH_MS);
    const [note, ...kept] = linesPosted();
    expect(note).toBe('⚠️ 3 lines of this log were dropped: more came at once than it can keep.');
    expect(kept.map((line) => /“(.*)”/.exec(line)?.[1])).toEqual(['fox 4', 'fox 5', 'fox 6', 'fox 7', 'fox 8']);
  });
});

describe('when Discord will not take a message', () => {
  /** Discord's refusal with `code`, as discord.js throws it. */
  function discordError(code: number, status: number): DiscordAPIError {
    return new DiscordAPIError({ code, message: 'refused' }, code, status, 'POST', `/channels/${LOG_CHANNEL}/messages`, {});
  }

  it('logs a channel that is gone once, drops its lines, and posts again once it can', async () => {
    let failing = true;
    const logged = moderationLog({
      post: (channelId, content) => {
        if (failing) return Promise.reject(discordError(10003, 404));
        posted.push({ channelId, content });
        return Promise.resolve();
      },
    });
    logged.job(job({ prompt: 'first' }));
    await logged.flush();
    logged.job(job({ prompt: 'second' }));
    await logged.flush();
    expect(logLines.filter((line) => line.includes('moderation log channel is gone'))).toHaveLength(1);
    failing = false;
    logged.job(job({ prompt: 'third' }));
    await logged.flush();
    expect(linesPosted()).toEqual([expect.stringContaining('“third”')]);
  });

  it('logs any other failure and goes on with the next lines; nothing reaches the caller', async () => {
    let calls = 0;
    const logged = moderationLog({
      post: (channelId, content) => {
        calls++;
        if (calls === 1) return Promise.reject(new Error('socket hang up'));
        posted.push({ channelId, content });
        return Promise.resolve();
      },
      logChannel: (guildId) => (guildId === 'broken' ? Promise.reject(new Error('store down')) : Promise.resolve(LOG_CHANNEL)),
    });
    logged.job(job({ prompt: 'first' }));
    expect(() => logged.job(job({ guildId: 'broken' }))).not.toThrow();
    await logged.flush();
    logged.job(job({ prompt: 'second' }));
    await logged.flush();
    expect(linesPosted()).toEqual([expect.stringContaining('“second”')]);
    expect(logLines.filter((line) => line.includes('could not post in a moderation log'))).toHaveLength(1);
    expect(logLines.filter((line) => line.includes('could not write a line of a moderation log'))).toHaveLength(1);
  });
});

describe('through the outbox', () => {
  it('mentions members without pinging anyone, and shows no link previews', async () => {
    const bodies: unknown[] = [];
    const rest = {
      post: (_route: string, options: { body: unknown }) => {
        bodies.push(options.body);
        return Promise.resolve({ id: '600000000000000006' });
      },
    };
    const outbox = new DiscordOutbox(rest as unknown as REST);
    const logged = moderationLog({ post: (channelId, content) => outbox.say(channelId, content, { linkPreviews: false }) });
    logged.job(job({ prompt: '@everyone look at https://example.com/fox <@&700>' }));
    await logged.flush();
    expect(bodies).toEqual([
      {
        content: expect.stringContaining(`<@${MEMBER}>`),
        allowed_mentions: { parse: [] },
        flags: MessageFlags.SuppressEmbeds,
      },
    ]);
  });
});
