import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextUtcMonth } from '../../src/settings/budgets.ts';
import { nextUtcMidnight } from '../../src/settings/limits.ts';
import { SPEND_CHART_COLORS, SPEND_CHART_GEOMETRY } from '../../src/settings/usage-chart.ts';
import { usageTableFilename } from '../../src/settings/usage-report.ts';
import type { InteractionHandle, Message, TestGuild, User } from 'discord-standin';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { startWorld, type World } from '../support/world.ts';
import { cardText } from '../support/cards.ts';

// What a server's key spends, as admins and members meet it on the stand-ins, with the bot as a process:
// budgets in dollars that refuse a video before anything reaches the gateway, reservations that two
// members cannot both take, refunds, counts that survive a SIGKILL, alerts posted once, /usage and its
// chart read from its pixels, and a PRICES_FILE. On both stores. The emulator charges its documented
// prices ($0.05, $0.08, $0.14 a second at 480p, 720p, 1080p), the bot's defaults, so estimates are exact.
//
// The Redis is one of the file's own, as for every bot process on Redis (test/e2e/faults, sharding): a bot
// resumes every active task of its store at each start and keeps installation-wide records (the end-user
// salt), so on the machine's shared Redis it would take over another run's tasks.

const EPHEMERAL = 64;
const LOADING = 128;
const CARD_REF = /ref (v[0-9a-z]+)/;
const { width, height, gridLeft, gridRight, gridTop, gridBottom } = SPEND_CHART_GEOMETRY;
const CHART_DAYS = 30;

type Outcome = { kind: 'card'; message: Message } | { kind: 'refused'; message: Message };

describe.each(['sqlite', 'redis'] as const)('spend on %s', (storeKind) => {
  let redis: OwnRedis | undefined;
  let world: World;

  beforeAll(async () => {
    redis = storeKind === 'redis' ? await startOwnRedis() : undefined;
    world = await startWorld(redis ? { env: { STORE_URL: redis.url } } : {});
  }, 60_000);
  afterAll(async () => {
    await world?.stop();
    await redis?.close();
  });

  function run(guild: TestGuild, user: User, command: string, subcommand: string | undefined, options = {}): InteractionHandle {
    return world.discord.runCommand({
      user,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command,
      ...(subcommand === undefined ? {} : { subcommand }),
      options,
    });
  }

  async function budget(guild: TestGuild, options: Record<string, number | string>): Promise<void> {
    const reply = await run(guild, guild.admin, 'config', 'budget', options).reply();
    expect(reply.content).toContain('set budgets');
  }

  function generate(guild: TestGuild, user: User, prompt: string, resolution: string, duration: number): InteractionHandle {
    return run(guild, user, 'video', 'generate', { prompt, resolution, duration });
  }

  /** The status card, or the private refusal (the first answer, or a follow-up once the reply was deferred). */
  function outcome(handle: InteractionHandle): Promise<Outcome> {
    return world.discord.waitFor(
      (): Outcome | undefined => {
        const original = handle.record.original;
        if (original && !original.deleted && (original.flags & LOADING) === 0) {
          if (CARD_REF.test(cardText(original))) return { kind: 'card', message: original };
          if (original.flags & EPHEMERAL) return { kind: 'refused', message: original };
        }
        const followUp = handle.followUps.find((message) => !message.deleted && (message.flags & EPHEMERAL) !== 0);
        return followUp ? { kind: 'refused', message: followUp } : undefined;
      },
      20_000,
      `a status card or a private refusal for /${handle.record.name}`,
    );
  }

  async function refusal(handle: InteractionHandle): Promise<string> {
    const answer = await outcome(handle);
    expect(answer.kind, JSON.stringify(answer.message)).toBe('refused');
    expect(answer.message.flags & EPHEMERAL).toBe(EPHEMERAL);
    return answer.message.content;
  }

  /** Waits for the video to be made and posted: its cost is counted before it is posted. */
  async function delivered(handle: InteractionHandle): Promise<void> {
    const answer = await outcome(handle);
    expect(answer.kind, answer.message.content).toBe('card');
    await handle.waitForReply((message) => cardText(message).includes('**Done**'), 20_000);
  }

  const requestsSince = (since: number, method: string) => world.emulator.requests.slice(since).filter((entry) => entry.method === method);
  const midnight = () => `<t:${Math.floor(nextUtcMidnight(Date.now()) / 1000)}:R>`;
  const monthEnd = () => `<t:${Math.floor(nextUtcMonth(Date.now()) / 1000)}:R>`;

  async function usage(guild: TestGuild, user: User, command: 'usage' | 'video' = 'usage'): Promise<Message> {
    const answer = await run(guild, user, command, command === 'video' ? 'usage' : undefined).reply();
    expect(answer.flags & EPHEMERAL).toBe(EPHEMERAL);
    return answer;
  }

  it('refuses a video over a member budget privately, naming it, before any request; exactly the budget is allowed', async () => {
    const guild = world.discord.createGuild({ name: 'member budget' });
    await budget(guild, { member_daily_usd: 1 });
    // $0.40 and $0.40 (480p, 8 s twice): $0.20 is left of the member's dollar.
    await delivered(generate(guild, guild.member, 'a first lantern', '480p', 8));
    await delivered(generate(guild, guild.member, 'a second lantern', '480p', 8));

    const before = world.emulator.requests.length;
    const over = await refusal(generate(guild, guild.member, 'one too many', '480p', 6));
    expect(over).toBe(
      `This video (about $0.30) would pass your daily budget on this server ($1.00): $0.20 is left today. It starts over ${midnight()}.`,
    );
    expect(requestsSince(before, 'POST')).toEqual([]);
    expect(JSON.stringify(world.emulator.requests.slice(before))).not.toContain('one too many');

    // Another member's day is their own.
    const other = world.discord.createUser({ guildId: guild.id, name: 'other' });
    await delivered(generate(guild, other, 'not my budget', '480p', 6));

    // $0.20 brings the member to exactly $1.00: allowed, and then nothing more is.
    await delivered(generate(guild, guild.member, 'the last twenty cents', '480p', 4));
    const spent = await refusal(generate(guild, guild.member, 'not even a second', '480p', 1));
    expect(spent).toBe(
      `This video (about $0.05) would pass your daily budget on this server ($1.00): $0.00 is left today. It starts over ${midnight()}.`,
    );
    const own = (await usage(guild, guild.member)).content;
    expect(own).toMatch(/^\*\*Your usage today\*\* \([^)]* UTC\): 3 videos, \$1\.00; no voice\n/);
    expect(own).toContain(`**Budgets:** your daily budget on this server ($1.00): $0.00 left, starts over ${midnight()}`);
  });

  it('lets only one of two members have the last dollar of a monthly budget when both submit at once', async () => {
    const guild = world.discord.createGuild({ name: 'last dollar' });
    await budget(guild, { server_monthly_usd: 1 });
    const second = world.discord.createUser({ guildId: guild.id, name: 'second' });
    const before = world.emulator.requests.length;
    // 720p for 10 s: $0.80 each, and one dollar for the month.
    const runs = [
      generate(guild, guild.member, 'race for the dollar A', '720p', 10),
      generate(guild, second, 'race for the dollar B', '720p', 10),
    ];
    const answers = await Promise.all(runs.map(outcome));
    expect(answers.map((answer) => answer.kind).sort()).toEqual(['card', 'refused']);
    const refused = answers.find((answer) => answer.kind === 'refused')!.message;
    expect(refused.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(refused.content).toBe(
      `This video (about $0.80) would pass this server's monthly budget ($1.00): $0.20 is left this month. It starts over ${monthEnd()}.`,
    );
    expect(requestsSince(before, 'POST').filter((entry) => entry.path.endsWith('/videos/generations'))).toHaveLength(1);
    await delivered(runs[answers.findIndex((answer) => answer.kind === 'card')]!);
  });

  it('gives a refunded task its estimate back', async () => {
    const { emulator } = world;
    const guild = world.discord.createGuild({ name: 'refund' });
    await budget(guild, { member_daily_usd: 0.4 });
    // The task hangs at the gateway until its timeout is lowered: it holds its $0.40 meanwhile.
    const hanging = generate(guild, guild.member, 'never finishes [[hang]]', '480p', 8);
    expect((await outcome(hanging)).kind).toBe('card');
    expect(await refusal(generate(guild, guild.member, 'waits for the refund', '480p', 8))).toContain('$0.00 is left today');

    const timeout = emulator.config.timing.task_timeout_ms;
    emulator.config.timing.task_timeout_ms = 1;
    try {
      await hanging.waitForReply((message) => /Failed/.test(cardText(message)), 20_000);
    } finally {
      emulator.config.timing.task_timeout_ms = timeout;
    }
    expect((await usage(guild, guild.member)).content).toContain('your daily budget on this server ($0.40): $0.40 left');
    await delivered(generate(guild, guild.member, 'fits after the refund', '480p', 8));
    // Only the video made is paid for (the failed one counts against the count limits, at no cost).
    const own = (await usage(guild, guild.member)).content;
    expect(own).toMatch(/\*\*Your usage today\*\* \([^)]*\): \d videos?, \$0\.40; no voice\n/);
    expect(own).toContain('your daily budget on this server ($0.40): $0.00 left');
  });

  describe('a server budget with an alert channel', () => {
    let guild: TestGuild;
    const alerts = () => world.discord.messages(guild.textChannelId).filter((message) => /^(⚠️|🛑)/u.test(message.content));

    it('posts 80% and 100% once each, keeps its counts across a SIGKILL, and does not post again after the restart', async () => {
      const { discord } = world;
      guild = discord.createGuild({ name: 'alerted' });
      await budget(guild, { server_daily_usd: 1, alert_channel: guild.textChannelId });
      const second = discord.createUser({ guildId: guild.id, name: 'second' });

      await delivered(generate(guild, guild.member, 'forty cents', '480p', 8));
      expect(alerts()).toEqual([]);
      await delivered(generate(guild, second, 'eighty cents', '480p', 8));
      const warning = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('⚠️'), 10_000);
      expect(warning.content).toBe(
        `⚠️ This server has spent $0.80, 80% of this server's daily budget ($1.00). It starts over ${midnight()}.`,
      );

      const counted = (await usage(guild, guild.admin)).content;
      await world.bot.kill();
      await world.restartBot();
      const afterRestart = (await usage(guild, guild.admin)).content;
      expect(afterRestart).toBe(counted);
      expect(afterRestart).toMatch(/\*\*Server today \([^)]*\)\*\*: 2 videos, \$0\.80; no voice\n/);
      expect(afterRestart).toContain(`<@${guild.member.id}>: 1 video, $0.40; no voice`);
      expect(afterRestart).toContain(`<@${second.id}>: 1 video, $0.40; no voice`);
      expect(afterRestart).toContain(`this server's daily budget ($1.00): $0.20 left, starts over ${midnight()}`);

      // The last twenty cents: 100%, posted once; 80% is not posted again, though the spend passed it again.
      await delivered(generate(guild, guild.member, 'the last twenty cents', '480p', 4));
      const stop = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('🛑'), 10_000);
      expect(stop.content).toBe(
        `🛑 This server has used all of this server's daily budget ($1.00): new videos and voice conversations are refused until it starts over ${midnight()}.`,
      );
      expect(await refusal(generate(guild, second, 'over the top', '480p', 1))).toContain(
        "this server's daily budget ($1.00): $0.00 is left",
      );
      // Its reservation and its cost each reached 80% and 100% again: still one alert of each.
      expect((await usage(guild, guild.admin)).content).toMatch(/\*\*Server today \([^)]*\)\*\*: 3 videos, \$1\.00; no voice\n/);
      expect(alerts().map((message) => message.content.split(' ')[0])).toEqual(['⚠️', '🛑']);
    }, 60_000);

    it('/usage shows a manager the server and a chart whose only bar is today; a member sees only their own', async () => {
      const answer = await usage(guild, guild.admin);
      expect(answer.content).toContain('**Server this month');
      expect(answer.attachments.map((attachment) => attachment.filename)).toEqual([
        'spend-last-30-days.png',
        usageTableFilename(Date.now()),
      ]);
      const image = PNG.sync.read(answer.attachments[0]!.bytes);
      expect([image.width, image.height]).toEqual([width, height]);
      const colored = (color: string) => {
        const value = Number.parseInt(color.slice(1), 16);
        const band = (width - gridLeft - gridRight) / CHART_DAYS;
        // Per day (oldest first, today last), the pixels of the color down the middle of its column.
        return Array.from({ length: CHART_DAYS }, (_, day) => {
          const x = Math.floor(gridLeft + (day + 0.5) * band);
          let pixels = 0;
          for (let y = gridTop; y < height - gridBottom; y++) {
            const at = (y * image.width + x) * 4;
            if (((image.data[at]! << 16) | (image.data[at + 1]! << 8) | image.data[at + 2]!) === value) pixels++;
          }
          return pixels;
        });
      };
      const video = colored(SPEND_CHART_COLORS.video);
      expect(video.slice(0, CHART_DAYS - 1)).toEqual(Array(CHART_DAYS - 1).fill(0));
      // Today's $1.00 is the tallest day: its bar stands most of the plot area's height.
      expect(video[CHART_DAYS - 1]).toBeGreaterThan((height - gridTop - gridBottom) / 2);
      expect(colored(SPEND_CHART_COLORS.voice)).toEqual(Array(CHART_DAYS).fill(0));

      const same = await usage(guild, guild.admin, 'video');
      expect(same.content).toBe(answer.content);
      expect(same.attachments[0]?.bytes).toEqual(answer.attachments[0]?.bytes);

      for (const command of ['usage', 'video'] as const) {
        const own = await usage(guild, guild.member, command);
        expect(own.attachments).toEqual([]);
        expect(own.content).toMatch(/^\*\*Your usage today\*\* \([^)]*\): 2 videos, \$0\.60; no voice\n/);
        expect(own.content).not.toContain('Server');
      }
    });
  });

  it("answers a manager's /usage on a busy day within Discord's 2,000 characters, with every member in its CSV", async () => {
    const guild = world.discord.createGuild({ name: 'busy day' });
    const members = Array.from({ length: 24 }, (_, index) => world.discord.createUser({ guildId: guild.id, name: `member-${index}` }));
    // The cheapest video there is ($0.05), one each, all at once.
    await Promise.all(members.map((member, index) => delivered(generate(guild, member, `lantern ${index}`, '480p', 1))));

    const answer = await usage(guild, guild.admin);
    const file = usageTableFilename(Date.now());
    expect(answer.content.length).toBeLessThanOrEqual(2000);
    expect(answer.content).toMatch(/\*\*Server today \([^)]*\)\*\*: 24 videos, \$1\.20; no voice\n/);
    expect(answer.content).toMatch(/\*\*Server this month \([^)]*\)\*\*: 24 videos, \$1\.20; no voice\n/);
    // Each period shows whom it can, and counts the others, who are all in the file.
    for (const part of answer.content.split('\n\n').slice(1)) {
      const shown = part.match(/<@\d+>: 1 video, \$0\.05; no voice/g)?.length ?? 0;
      const rest = 24 - shown;
      expect(part.split('\n').at(-1)).toBe(`…and ${rest} more member${rest === 1 ? '' : 's'} (every member is in ${file})`);
    }
    expect(answer.attachments.map((attachment) => attachment.filename)).toEqual(['spend-last-30-days.png', file]);
    const [header, ...rows] = answer.attachments[1]!.bytes.toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimEnd()
      .split('\r\n');
    const periods = (period: string) => [
      `Videos ${period}`,
      `Reported cost ${period} (USD)`,
      `Estimated cost of unreported videos ${period} (USD)`,
      `Reserved for videos in progress ${period} (USD)`,
      `Voice minutes ${period}`,
      `Estimated voice cost ${period} (USD)`,
    ];
    expect(header).toBe(['Member ID', 'Name', ...periods('today'), ...periods('this month')].join(','));
    const oneVideo = '1,0.0500,0.0000,0.0000,0.00,0.0000';
    expect(rows.sort()).toEqual(members.map((member) => `${member.id},${member.username},${oneVideo},${oneVideo}`).sort());
  }, 60_000);

  // Last, as it restarts the bot with prices of its own. A restart is a Node process loading discord.js:
  // 5-7 s beside two busy loops, so the tests that restart have 60 s.
  it('estimates with a PRICES_FILE, and names its estimate in a refusal', async () => {
    const prices = join(world.dataDirectory, 'prices.json');
    writeFileSync(prices, JSON.stringify({ video: { '*': { per_second_usd: { '480p': 0.1 } } } }));
    await world.bot.stop();
    await world.restartBot({ PRICES_FILE: prices });
    const guild = world.discord.createGuild({ name: 'priced' });
    await budget(guild, { member_daily_usd: 0.5 });
    expect((await run(guild, guild.admin, 'config', 'show').reply()).content).toContain(
      'video, any model: $0.10/s at 480p, $0.08/s at 720p, $0.14/s at 1080p',
    );
    const before = world.emulator.requests.length;
    expect(await refusal(generate(guild, guild.member, 'dearer now', '480p', 8))).toBe(
      `This video (about $0.80) would pass your daily budget on this server ($0.50): $0.50 is left today. It starts over ${midnight()}.`,
    );
    // What the file does not name keeps its default: 720p for 7 s is $0.56.
    expect(await refusal(generate(guild, guild.member, 'as before', '720p', 7))).toContain('This video (about $0.56) would pass');
    expect(requestsSince(before, 'POST')).toEqual([]);
  }, 60_000);
});
