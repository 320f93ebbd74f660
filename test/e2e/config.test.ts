import { existsSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { formatDate, resolveLocale, t } from '../../src/i18n/index.ts';
import { describeUsage } from '../../src/settings/usage-report.ts';
import { noUsage } from '../../src/settings/usage.ts';
import { usdToUsdTicks } from '../../src/settings/budgets.ts';
import { formatCostIn } from '../../src/wording/cost.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRecord, parseJsonText } from '../../src/lib/json.ts';
import { createLogger } from '../../src/lib/log.ts';
import type { BotProcess } from '../support/bot-process.ts';
import type { InteractionHandle, Message, TestGuild, User } from 'discord-standin';
import { startWorld, type World } from '../support/world.ts';
import { cardText } from '../support/cards.ts';

// Server admins on the stand-ins: their own key through a private form, kept encrypted; defaults,
// storage, access, limits and usage.

const SERVER_KEY = 'server-own-key-7f3a9c2e51';
const WRONG_KEY = 'wrong-key-0000000000';
/** A key of its own for the server whose key's line is watched: no other test's video holds a slot of it. */
const LINE_KEY = 'line-own-key-4c8e1b7d93';
const SECRET = 'first-encryption-secret-0123456789';

/**
 * Between the bot and the emulator: passes everything through, but can withhold `usage` from
 * compatibility-layer query answers, as a real gateway may (the spec lists their other fields as "not shown").
 */
interface GatewayProxy {
  readonly url: string;
  target: string;
  withholdCompatCost: boolean;
  close(): Promise<void>;
}

async function startGatewayProxy(): Promise<GatewayProxy> {
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    const upstream = httpRequest(new URL(path, proxy.target), { method: request.method, headers: request.headers }, (answer) => {
      const status = answer.statusCode ?? 502;
      const isCompatQuery = request.method === 'GET' && /^\/v1\/videos\/[^/]+$/.test(new URL(path, proxy.target).pathname);
      if (!(proxy.withholdCompatCost && isCompatQuery)) {
        response.writeHead(status, answer.headers);
        answer.pipe(response);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const parsed = parseJsonText(Buffer.concat(chunks).toString('utf8'));
        const body =
          parsed.ok && isRecord(parsed.value)
            ? JSON.stringify(Object.fromEntries(Object.entries(parsed.value).filter(([field]) => field !== 'usage')))
            : Buffer.concat(chunks);
        const headers: IncomingHttpHeaders = { ...answer.headers, 'content-length': String(Buffer.byteLength(body)) };
        delete headers['transfer-encoding'];
        response.writeHead(status, headers);
        response.end(body);
      });
    });
    upstream.on('error', () => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
    });
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  const proxy: GatewayProxy = {
    url: `http://127.0.0.1:${address.port}`,
    target: '',
    withholdCompatCost: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return proxy;
}

let world: World;
let proxy: GatewayProxy | undefined;
/** Every bot process of the file (each restart is a new one), and everything the stand-ins logged or were sent. */
const bots: BotProcess[] = [];
const emulatorLog: string[] = [];
const standInLog: string[] = [];
const transcript: string[] = [];

beforeAll(async () => {
  proxy = await startGatewayProxy();
  world = await startWorld({
    emulator: { keys: { [SERVER_KEY]: { group: 'default', quota_usd: 20 }, [LINE_KEY]: { group: 'default', quota_usd: 20 } } },
    emulatorLog: createLogger({ level: 'debug', write: (line) => emulatorLog.push(line) }),
    // The video addresses it gives out go through the proxy too: the gateway's own host and port.
    emulatorPublicUrl: proxy.url,
    standIn: { log: createLogger({ level: 'debug', write: (line) => standInLog.push(line) }) },
    // No operator key: members' own installs, allowed, have none to use.
    env: { GATEWAY_API_KEY: '', KEY_ENCRYPTION_SECRET: SECRET, GATEWAY_BASE_URL: proxy.url, USER_INSTALLS: 'on' },
  });
  // The bot calls the gateway only once commands arrive, so the target can be set after it started.
  proxy.target = world.emulator.listenUrl;
  bots.push(world.bot);
  const events = world.discord.events;
  for (const name of ['message', 'messageUpdate']) events.on(name, (message: unknown) => transcript.push(JSON.stringify(message)));
  events.on('callback', (_interaction: unknown, callback: unknown) => transcript.push(JSON.stringify(callback)));
}, 60_000);
afterAll(async () => {
  await world?.stop();
  await proxy?.close();
});

function config(user: User, subcommand: string, options: Record<string, string | number | boolean> = {}): InteractionHandle {
  const { discord, guild } = world;
  return discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand, options });
}

function video(user: User, prompt: string, options: Record<string, string | number> = {}): InteractionHandle {
  const { discord, guild } = world;
  return discord.runCommand({
    user,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'video',
    subcommand: 'generate',
    options: { prompt, ...options },
  });
}

async function setKey(key: string, guild: TestGuild = world.guild): Promise<Message> {
  const { discord } = world;
  const form = await discord
    .runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand: 'key' })
    .modal();
  expect(form).toEqual({ customId: 'config:key-modal', inputs: ['key'] });
  const submit = discord.submitModal({
    user: guild.admin,
    guildId: guild.id,
    channelId: guild.textChannelId,
    customId: form.customId,
    fields: { key },
  });
  return submit.reply();
}

/**
 * Each restart is a Node process loading discord.js, CPU-bound: 5-7 s with two busy loops beside the
 * suite, so a test that restarts the bot more than once has 90 s (the default 30 s cut one of three).
 */
async function restart(env: Record<string, string>): Promise<void> {
  await world.bot.stop();
  bots.push(await world.restartBot(env));
}

describe("a server's own gateway key", () => {
  it('is asked for before anything can be generated', async () => {
    const reply = (await video(world.guild.member, 'no key yet').response()).data;
    expect(reply).toMatchObject({ flags: 64, content: expect.stringContaining('/config key') });
  });

  it("is not there for a member's own install either, which is refused naming the operator's GATEWAY_API_KEY", async () => {
    const { discord } = world;
    const elsewhere = discord.createGuild({ withBot: false });
    const member = discord.createUser({ guildId: elsewhere.id, locale: 'fr' });
    discord.installAppForUser(member);
    const refused = await discord
      .runCommand({
        user: member,
        channelId: elsewhere.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'mine' },
      })
      .response();
    const noKey = t(resolveLocale('fr', undefined, 'member'), 'user-install.no-key');
    expect(noKey).toContain('`GATEWAY_API_KEY`');
    expect(refused.data).toMatchObject({ flags: 64, content: noKey });
  });

  it('is for Manage Server only: hidden by default and refused by the handler', async () => {
    const definition = world.discord.commands().find((command) => command.name === 'config');
    expect(definition?.default_member_permissions).toBe('32');
    const refused = (await config(world.guild.member, 'show').response()).data;
    expect(refused).toMatchObject({ flags: 64, content: expect.stringContaining('Manage Server') });
  });

  it("refuses a member in the member's own language, whatever the server's", async () => {
    const { discord, guild } = world;
    const germanMember = discord.createUser({ guildId: guild.id, locale: 'de' });
    const refused = (await config(germanMember, 'show').response()).data;
    expect(refused).toMatchObject({
      flags: 64,
      content: t(resolveLocale('de', 'en-US', 'member'), 'requirement.manage-server', { what: '`/config show`' }),
    });
    // And their own usage report, in German words, dates and plurals.
    const german = resolveLocale('de', 'en-US', 'member');
    const usage = (
      await discord.runCommand({ user: germanMember, guildId: guild.id, channelId: guild.textChannelId, command: 'usage' }).reply()
    ).content;
    expect(usage.split('\n')[0]).toBe(
      t(german, 'usage.own-today', {
        date: formatDate(german, Date.now(), { dateStyle: 'medium' }),
        usage: describeUsage(german, noUsage()),
      }),
    );
  });

  it('refuses a key the gateway rejects, saying why, and stores nothing', async () => {
    const reply = await setKey(WRONG_KEY);
    expect(reply.content).toContain('refused this key (401 invalid_api_key)');
    expect((await config(world.guild.admin, 'show').reply()).content).toContain(
      '**Gateway key in use:** none: `/video` and `/voice` cannot work until a server admin sets a key',
    );
  });

  it('is checked, stored, shown only by its last four characters, and then used by /video', async () => {
    const { discord, emulator, guild } = world;
    const reply = await setKey(SERVER_KEY);
    expect(reply.content).toContain('Key saved (…2e51)');
    expect(reply.content).not.toContain(SERVER_KEY);
    expect(reply.flags & 64).toBe(64);
    const shown = (await config(guild.admin, 'show').reply()).content;
    expect(shown).toMatch(
      new RegExp(`\\*\\*Gateway key in use:\\*\\* this server's own key \\(…2e51, set by <@${guild.admin.id}> <t:\\d+:R>\\)`),
    );
    expect(shown).toContain('set the gateway key');

    const run = video(guild.member, 'with the server key');
    await run.response();
    const submission = await emulator.waitForRequest(
      (entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('with the server key'),
    );
    expect(submission.keyId).toBe(emulator.keyIdOf(SERVER_KEY));
    await discord.waitForMessage(guild.textChannelId, (message) => message.attachments.length > 0, 20_000);
  });

  it('asks to be set again when KEY_ENCRYPTION_SECRET changed, and survives a rotation', async () => {
    await restart({ KEY_ENCRYPTION_SECRET: 'a-completely-different-secret-42' });
    const lost = (await video(world.guild.member, 'after the secret changed').response()).data;
    expect(lost).toMatchObject({ flags: 64, content: expect.stringContaining('set it again with `/config key`') });

    await restart({ KEY_ENCRYPTION_SECRET: 'the-rotated-secret-value-0042', KEY_ENCRYPTION_SECRET_PREVIOUS: SECRET });
    expect((await video(world.guild.member, 'during the rotation').response()).type).toBe(5);
    await restart({ KEY_ENCRYPTION_SECRET: 'the-rotated-secret-value-0042' });
    expect((await video(world.guild.member, 'after the rotation').response()).type).toBe(5);
  }, 90_000);

  it('is refused when the operator set no KEY_ENCRYPTION_SECRET, telling the admin what the operator must set, and in the log', async () => {
    const { discord, guild } = world;
    await restart({ KEY_ENCRYPTION_SECRET: '', GATEWAY_API_KEY: 'emulator-key' });
    const reply = (await config(guild.admin, 'key').response()).data;
    expect(reply).toMatchObject({
      flags: 64,
      content: expect.stringContaining(
        'its operator must set the environment variable KEY_ENCRYPTION_SECRET (a random string of at least 16 characters',
      ),
    });
    await world.bot.waitForLog((line) => line.level === 'warn' && line.msg.includes('KEY_ENCRYPTION_SECRET is not set'));
    // The server's own key is stored but cannot be opened: never silently replaced by the operator's.
    expect((await config(guild.admin, 'show').reply()).content).toMatch(
      /\*\*Gateway key in use:\*\* none: this server's own key \(…2e51, .*set it back to the same secret/,
    );
    const lent = discord.createGuild({ name: 'without a key of its own' });
    const shown = await discord
      .runCommand({ user: lent.admin, guildId: lent.id, channelId: lent.textChannelId, command: 'config', subcommand: 'show' })
      .reply();
    expect(shown.content).toContain("**Gateway key in use:** the operator's default key");
    await restart({ KEY_ENCRYPTION_SECRET: 'the-rotated-secret-value-0042' });
  }, 90_000);
});

describe('settings', () => {
  it('applies storage defaults to new videos, and tells when storage fails', async () => {
    const { discord, emulator, guild } = world;
    expect((await config(guild.admin, 'storage', { keep_days: 7, public_link: true }).reply()).content).toContain(
      'kept 7 days, with a public link',
    );
    const run = video(guild.member, 'keep this one [[storage-fail]]');
    await run.response();
    const submission = await emulator.waitForRequest(
      (entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('keep this one'),
    );
    expect(submission.body).toMatchObject({
      storage_options: { filename: expect.stringMatching(/\.mp4$/), expires_after: 604_800, public_url: true },
    });
    const posted = await discord.waitForMessage(
      guild.textChannelId,
      (message) => message.attachments.length > 0 && cardText(message).includes('storage'),
      20_000,
    );
    expect(cardText(posted)).toContain('Long-term storage of this video failed');
  });

  it('switches new tasks to another layer while running tasks keep theirs', async () => {
    const { emulator, guild } = world;
    emulator.config.timing.generation_ms = 1500;
    const before = video(guild.member, 'started on compat');
    await before.response();
    await config(guild.admin, 'layer', { layer: 'native' }).reply();
    const after = video(guild.member, 'started on native');
    await after.response();
    await emulator.waitForRequest(
      (entry) =>
        entry.method === 'POST' &&
        entry.path === '/native/v1/videos/generations' &&
        JSON.stringify(entry.body).includes('started on native'),
    );
    const compatTask = emulator.requests.find(
      (entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('started on compat'),
    );
    expect(compatTask?.path).toBe('/v1/videos/generations');
    await before.waitForReply((message) => cardText(message).includes('**Done**'), 20_000);
    expect(emulator.requests.some((entry) => entry.method === 'GET' && /^\/v1\/videos\/task_/.test(entry.path))).toBe(true);
    await after.waitForReply((message) => cardText(message).includes('**Done**'), 20_000);
    emulator.config.timing.generation_ms = 300;
    await config(guild.admin, 'layer', { layer: 'compat' }).reply();
  });

  it('lets only the allowed roles use /video, and admins always', async () => {
    const { discord, guild } = world;
    await config(guild.admin, 'roles', { feature: 'video', action: 'add', role: guild.memberRoleId }).reply();
    const outsider = discord.createUser({ guildId: guild.id, name: 'outsider' });
    const refused = (await video(outsider, 'not for me').response()).data;
    expect(refused).toMatchObject({ flags: 64, content: expect.stringContaining(`<@&${guild.memberRoleId}>`) });
    expect((await video(guild.member, 'allowed by role').response()).type).toBe(5);
    await config(guild.admin, 'roles', { feature: 'video', action: 'clear' }).reply();
    expect((await video(outsider, 'everyone again').response()).type).toBe(5);
  });

  it('enforces daily and concurrent limits, saying when to try again', async () => {
    const { discord, guild } = world;
    const limited = discord.createUser({ guildId: guild.id, name: 'limited' });
    await config(guild.admin, 'limits', { daily_per_user: 1 }).reply();
    const first = video(limited, 'first of the day');
    await first.waitForReply((message) => cardText(message).includes('`task_'));
    const second = (await video(limited, 'second of the day').response()).data;
    expect(second).toMatchObject({ flags: 64, content: expect.stringMatching(/limit of 1 video a day\. Try again <t:\d+:R>/) });

    await config(guild.admin, 'limits', { daily_per_user: 0, concurrent_per_user: 1 }).reply();
    world.emulator.config.timing.generation_ms = 5000;
    const busy = discord.createUser({ guildId: guild.id, name: 'busy' });
    const long = video(busy, 'long one');
    await long.waitForReply((message) => cardText(message).includes('`task_'));
    const refused = (await video(busy, 'another').response()).data;
    expect(refused).toMatchObject({
      flags: 64,
      content: expect.stringMatching(/videos in progress .*\. Try again when one of your videos finishes\.$/),
    });
    world.emulator.config.timing.generation_ms = 300;
    await config(guild.admin, 'limits', { concurrent_per_user: 0 }).reply();
  });

  it('sends no more videos at once than the key_concurrency an admin states, shows it, and learns it again once cleared', async () => {
    const { discord, emulator } = world;
    const server = discord.createGuild({ name: 'one at a time' });
    const run = (user: User, command: string, subcommand: string, options: Record<string, string | number> = {}) =>
      discord.runCommand({ user, guildId: server.id, channelId: server.textChannelId, command, subcommand, options });
    const limits = async (options: Record<string, number>) => (await run(server.admin, 'config', 'limits', options).reply()).content;
    const shown = async () => (await run(server.admin, 'config', 'show').reply()).content;
    const optionsOf = (node: unknown) => (isRecord(node) && Array.isArray(node.options) ? node.options.filter(isRecord) : []);
    const configCommand = discord.commands().find((command) => command.name === 'config');
    const limitsSubcommand = optionsOf(configCommand).find((option) => option.name === 'limits');
    // Discord keeps the option to 0-100 (0: learn it again), as for the other limits.
    expect(optionsOf(limitsSubcommand).find((option) => option.name === 'key_concurrency')).toMatchObject({
      type: 4,
      min_value: 0,
      max_value: 100,
    });
    await setKey(LINE_KEY, server);
    expect(await shown()).toContain('**Key concurrency:** learned from the gateway');

    expect(await limits({ key_concurrency: 2 })).toContain('**Key concurrency:** 2 at once (stated)');
    const stated = await shown();
    expect(stated).toContain('**Key concurrency:** 2 at once (stated)');
    expect(stated).toMatch(new RegExp(`<t:\\d+:R> <@${server.admin.id}> set limits: key concurrency 2 at once`));

    // Out of bounds (Discord's own check bypassed): refused privately, naming the option, nothing changed.
    const refused = await run(server.admin, 'config', 'limits', { key_concurrency: 101 }).reply();
    expect(refused.content).toBe('`key_concurrency` must be 0 (learn it from the gateway) to 100.');
    expect(refused.flags & 64).toBe(64);
    expect(await shown()).toContain('**Key concurrency:** 2 at once (stated)');

    // One at a time: the second video waits its turn, unsent, while the first is made (a new key's line alone would send both).
    await limits({ key_concurrency: 1 });
    const second = discord.createUser({ guildId: server.id, name: 'second in line' });
    emulator.config.timing.generation_ms = 3000;
    try {
      const first = run(server.member, 'video', 'generate', { prompt: 'first through the line' });
      await first.waitForReply((message) => cardText(message).includes('`task_'));
      const waiting = run(second, 'video', 'generate', { prompt: 'waits for the first' });
      await waiting.waitForReply((message) => cardText(message).includes('**Waiting**'));
      expect(emulator.requests.some((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('waits for the first'))).toBe(
        false,
      );
      await first.waitForReply((message) => cardText(message).includes('**Done**'), 20_000);
      await waiting.waitForReply((message) => cardText(message).includes('**Done**'), 20_000);
    } finally {
      emulator.config.timing.generation_ms = 300;
    }

    const cleared = await limits({ key_concurrency: 0 });
    expect(cleared).toContain('**Key concurrency:** learned from the gateway');
    expect(cleared).toMatch(new RegExp(`<@${server.admin.id}> set limits: key concurrency learned from the gateway`));
  }, 60_000);

  it('holds a server-wide daily cap when several members ask at the same moment', async () => {
    const { discord } = world;
    const crowded = discord.createGuild({ name: 'crowded' });
    const inCrowded = (user: User, command: string, subcommand: string, options: Record<string, string | number> = {}) =>
      discord.runCommand({ user, guildId: crowded.id, channelId: crowded.textChannelId, command, subcommand, options });
    await setKey(SERVER_KEY, crowded);
    await inCrowded(crowded.admin, 'config', 'limits', { daily_per_server: 2 }).reply();

    const members = Array.from({ length: 5 }, (_, index) => discord.createUser({ guildId: crowded.id, name: `crowd-${index}` }));
    const runs = members.map((member) => inCrowded(member, 'video', 'generate', { prompt: 'all at once' }));
    const isCard = (message: Message) => cardText(message).includes('`task_');
    // The cap is counted after the deferral: a refusal replaces the public "thinking…" with a private follow-up.
    const answers = await Promise.all(
      runs.map((run) =>
        discord.waitFor(
          () =>
            run.record.original && isCard(run.record.original)
              ? run.record.original
              : run.followUps.find((message) => message.content.includes('reached its')),
          10_000,
          'a status card or a refusal',
        ),
      ),
    );
    expect(answers.filter(isCard)).toHaveLength(2);
    const refusals = answers.filter((message) => !isCard(message));
    expect(refusals).toHaveLength(3);
    for (const refusal of refusals) {
      expect(refusal.content).toMatch(/^This server reached its 2 videos for today; try again <t:\d+:R>\.$/);
      expect(refusal.flags & 64).toBe(64);
    }
  });

  it("refuses a member's video past a budget in the member's language, naming the budget", async () => {
    const { discord, emulator, guild } = world;
    const german = resolveLocale('de', 'en-US', 'member');
    const germanMember = discord.createUser({ guildId: guild.id, locale: 'de' });
    await config(guild.admin, 'budget', { member_daily_usd: 0.01 }).reply();
    try {
      const refused = (await video(germanMember, 'too dear for a cent').response()).data;
      expect(refused).toMatchObject({
        flags: 64,
        content: expect.stringContaining(
          t(german, 'budget.name', { budget: 'member_daily_usd', amount: formatCostIn(german, usdToUsdTicks(0.01)) }),
        ),
      });
      expect(emulator.requests.some((entry) => JSON.stringify(entry.body ?? null).includes('too dear for a cent'))).toBe(false);
    } finally {
      await config(guild.admin, 'budget', { member_daily_usd: 0 }).reply();
    }
  });

  it('records every change with who and when', async () => {
    const shown = (await config(world.guild.admin, 'show').reply()).content;
    expect(shown).toContain('Recent changes');
    expect(shown).toMatch(new RegExp(`<t:\\d+:R> <@${world.guild.admin.id}> set limits`));
  });

  it("shows admins each member's videos and their exact cost, today and this month, on both layers", async () => {
    const { discord, emulator } = world;
    const ledger = discord.createGuild({ name: 'ledger' });
    const spender = discord.createUser({ guildId: ledger.id, name: 'spender' });
    const run = (user: User, command: string, subcommand: string, options: Record<string, string | number> = {}) =>
      discord.runCommand({ user, guildId: ledger.id, channelId: ledger.textChannelId, command, subcommand, options });
    await setKey(SERVER_KEY, ledger);
    const posted = () =>
      discord
        .messages(ledger.textChannelId)
        // The videos, not the usage reports (which carry a chart and name the spender too).
        .filter((message) => message.attachments.length > 0 && cardText(message).includes(`Requested by <@${spender.id}>`));
    const generate = async (prompt: string, resolution: string, duration: number) => {
      await run(spender, 'video', 'generate', { prompt, resolution, duration }).response();
      return emulator.waitForRequest((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes(prompt));
    };
    // The cost is recorded as the task finishes, before its video is posted.
    const usage = async () => (await run(ledger.admin, 'video', 'usage').reply()).content;

    // The emulator's prices: $0.05, $0.08, $0.14 a second at 480p, 720p, 1080p; both layers report them.
    expect((await generate('priced on compat', '1080p', 3)).path).toBe('/v1/videos/generations');
    await run(ledger.admin, 'config', 'layer', { layer: 'native' }).reply();
    expect((await generate('priced on native', '720p', 5)).path).toBe('/native/v1/videos/generations');
    await discord.waitFor(() => (posted().length === 2 ? true : undefined), 20_000, 'both videos posted');
    const priced = await usage();
    expect(priced).toMatch(/\n\*\*Server today \([^)]* UTC\)\*\*: 2 videos, \$0\.82; no voice\n/);
    expect(priced).toContain(`<@${spender.id}>: 2 videos, $0.82; no voice`);
    expect(priced).toMatch(/\n\*\*Server this month \([^)]*\)\*\*: 2 videos, \$0\.82; no voice\n/);

    // A gateway that reports no cost on the compatibility layer: counted at its estimate (2 s at 480p), marked, never as $0.00.
    await run(ledger.admin, 'config', 'layer', { layer: 'compat' }).reply();
    if (!proxy) throw new Error('the gateway proxy is not running');
    proxy.withholdCompatCost = true;
    try {
      await generate('cost not reported', '480p', 2);
      await discord.waitFor(() => (posted().length === 3 ? true : undefined), 20_000, 'the third video posted');
      const partly = await usage();
      expect(partly).toContain(`<@${spender.id}>: 3 videos, $0.82 + about $0.10 estimated (1 without a reported cost); no voice`);
    } finally {
      proxy.withholdCompatCost = false;
    }

    // A member without Manage Server sees their own usage, not the server's.
    const own = (await run(spender, 'video', 'usage').reply()).content;
    expect(own).toMatch(
      /^\*\*Your usage today\*\* \([^)]* UTC\): 3 videos, \$0\.82 \+ about \$0\.10 estimated \(1 without a reported cost\); no voice\n/,
    );
    expect(own).not.toContain('**Server');
  });
});

describe('the gateway key, at the end of everything', () => {
  it('never appears in any bot process output, message, interaction answer, stand-in log, or the SQLite file', async () => {
    const { discord, emulator } = world;
    await world.bot.stop();
    const store = ['bot.sqlite', 'bot.sqlite-wal'].map((file) => join(world.dataDirectory, file)).filter((file) => existsSync(file));
    expect(store[0]).toBe(join(world.dataDirectory, 'bot.sqlite'));
    const storeBytes = Buffer.concat(store.map((file) => readFileSync(file)));
    // Every answer to every interaction (the modal's own payload is what the admin typed, so it is left out).
    const answers = discord.interactions.map((interaction) =>
      JSON.stringify({ callbacks: interaction.callbacks, original: interaction.original, followUps: interaction.followUps }),
    );
    const channelMessages = [...new Set(discord.interactions.map((interaction) => interaction.channelId))].flatMap((channel) =>
      discord.messages(channel).map((message) => JSON.stringify(message)),
    );
    const sources: Record<string, string> = {
      'bot output': bots.map((bot) => bot.output()).join('\n'),
      'messages and edits as sent': transcript.join('\n'),
      'interaction answers': answers.join('\n'),
      'channel messages': channelMessages.join('\n'),
      'emulator log': emulatorLog.join('\n'),
      'emulator journal': JSON.stringify(emulator.requests),
      'Discord stand-in log': standInLog.join('\n'),
    };
    // Each source really holds what it should, so an empty capture cannot pass for a clean one.
    expect(bots.length).toBeGreaterThanOrEqual(6);
    expect(sources['bot output']).toContain('"msg":"a server set its gateway key"');
    expect(sources['messages and edits as sent']).toContain('Key saved (…2e51)');
    expect(sources['interaction answers']).toContain('refused this key (401 invalid_api_key)');
    expect(sources['emulator journal']).toContain('/v1/models');
    expect(sources['Discord stand-in log']).toContain('discord stand-in request');
    expect(storeBytes.length).toBeGreaterThan(0);
    for (const key of [SERVER_KEY, WRONG_KEY]) {
      for (const [source, text] of Object.entries(sources)) expect(text.includes(key), `${source} holds a key`).toBe(false);
      expect(storeBytes.includes(key), 'the SQLite file holds a key').toBe(false);
    }
  });
});
