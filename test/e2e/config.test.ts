import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import type { BotProcess } from '../support/bot-process.ts';
import type { InteractionHandle, Message, TestGuild, User } from '../support/discord/index.ts';
import { startWorld, type World } from '../support/world.ts';

// Server admins on the stand-ins: their own key through a private form, kept encrypted; defaults,
// storage, access, limits and usage.

const SERVER_KEY = 'server-own-key-7f3a9c2e51';
const WRONG_KEY = 'wrong-key-0000000000';
const SECRET = 'first-encryption-secret-0123456789';

let world: World;
/** Every bot process of the file (each restart is a new one), and everything the stand-ins logged or were sent. */
const bots: BotProcess[] = [];
const emulatorLog: string[] = [];
const standInLog: string[] = [];
const transcript: string[] = [];

beforeAll(async () => {
  world = await startWorld({
    emulator: { keys: { [SERVER_KEY]: { group: 'default', quota_usd: 20 } } },
    emulatorLog: createLogger({ level: 'debug', write: (line) => emulatorLog.push(line) }),
    standIn: { log: createLogger({ level: 'debug', write: (line) => standInLog.push(line) }) },
    env: { GATEWAY_API_KEY: '', KEY_ENCRYPTION_SECRET: SECRET },
  });
  bots.push(world.bot);
  const events = world.discord.events;
  for (const name of ['message', 'messageUpdate']) events.on(name, (message: unknown) => transcript.push(JSON.stringify(message)));
  events.on('callback', (_interaction: unknown, callback: unknown) => transcript.push(JSON.stringify(callback)));
}, 60_000);
afterAll(() => world?.stop());

function config(user: User, subcommand: string, options: Record<string, string | number | boolean> = {}): InteractionHandle {
  const { discord, guild } = world;
  return discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand, options });
}

function video(user: User, prompt: string, options: Record<string, string | number> = {}): InteractionHandle {
  const { discord, guild } = world;
  return discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'video', subcommand: 'generate', options: { prompt, ...options } });
}

async function setKey(key: string, guild: TestGuild = world.guild): Promise<Message> {
  const { discord } = world;
  const form = await discord.runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand: 'key' }).modal();
  expect(form).toEqual({ customId: 'config:key-modal', inputs: ['key'] });
  const submit = discord.submitModal({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, customId: form.customId, fields: { key } });
  return submit.reply();
}

async function restart(env: Record<string, string>): Promise<void> {
  await world.bot.stop();
  bots.push(await world.restartBot(env));
}

describe('a server\'s own gateway key', () => {
  it('is asked for before anything can be generated', async () => {
    const reply = (await video(world.guild.member, 'no key yet').response()).data;
    expect(reply).toMatchObject({ flags: 64, content: expect.stringContaining('/config key') });
  });

  it('is for Manage Server only: hidden by default and refused by the handler', async () => {
    const definition = world.discord.commands().find((command) => command.name === 'config');
    expect(definition?.default_member_permissions).toBe('32');
    const refused = (await config(world.guild.member, 'show').response()).data;
    expect(refused).toMatchObject({ flags: 64, content: expect.stringContaining('Manage Server') });
  });

  it('refuses a key the gateway rejects, saying why, and stores nothing', async () => {
    const reply = await setKey(WRONG_KEY);
    expect(reply.content).toContain('refused this key (401 invalid_api_key)');
    expect((await config(world.guild.admin, 'show').reply()).content).toContain('**Gateway key in use:** none: `/video` and `/voice` cannot work until a server admin sets a key');
  });

  it('is checked, stored, shown only by its last four characters, and then used by /video', async () => {
    const { discord, emulator, guild } = world;
    const reply = await setKey(SERVER_KEY);
    expect(reply.content).toContain('Key saved (…2e51)');
    expect(reply.content).not.toContain(SERVER_KEY);
    expect(reply.flags & 64).toBe(64);
    const shown = (await config(guild.admin, 'show').reply()).content;
    expect(shown).toMatch(new RegExp(`\\*\\*Gateway key in use:\\*\\* this server's own key \\(…2e51, set by <@${guild.admin.id}> <t:\\d+:R>\\)`));
    expect(shown).toContain('set the gateway key');

    const run = video(guild.member, 'with the server key');
    await run.response();
    const submission = await emulator.waitForRequest((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('with the server key'));
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
  });

  it('is refused when the operator set no KEY_ENCRYPTION_SECRET, telling the admin what the operator must set, and in the log', async () => {
    const { discord, guild } = world;
    await restart({ KEY_ENCRYPTION_SECRET: '', GATEWAY_API_KEY: 'emulator-key' });
    const reply = (await config(guild.admin, 'key').response()).data;
    expect(reply).toMatchObject({ flags: 64, content: expect.stringContaining('its operator must set the environment variable KEY_ENCRYPTION_SECRET (a random string of at least 16 characters') });
    await world.bot.waitForLog((line) => line.level === 'warn' && line.msg.includes('KEY_ENCRYPTION_SECRET is not set'));
    // The server's own key is stored but cannot be opened: never silently replaced by the operator's.
    expect((await config(guild.admin, 'show').reply()).content).toMatch(/\*\*Gateway key in use:\*\* none: this server's own key \(…2e51, .*set it back to the same secret/);
    const lent = discord.createGuild({ name: 'without a key of its own' });
    const shown = await discord.runCommand({ user: lent.admin, guildId: lent.id, channelId: lent.textChannelId, command: 'config', subcommand: 'show' }).reply();
    expect(shown.content).toContain("**Gateway key in use:** the operator's default key");
    await restart({ KEY_ENCRYPTION_SECRET: 'the-rotated-secret-value-0042' });
  });
});

describe('settings', () => {
  it('applies storage defaults to new videos, and tells when storage fails', async () => {
    const { discord, emulator, guild } = world;
    expect((await config(guild.admin, 'storage', { keep_days: 7, public_link: true }).reply()).content).toContain('kept 7 days, with a public link');
    const run = video(guild.member, 'keep this one [[storage-fail]]');
    await run.response();
    const submission = await emulator.waitForRequest((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('keep this one'));
    expect(submission.body).toMatchObject({ storage_options: { filename: expect.stringMatching(/\.mp4$/), expires_after: 604_800, public_url: true } });
    const posted = await discord.waitForMessage(guild.textChannelId, (message) => message.attachments.length > 0 && message.content.includes('storage'), 20_000);
    expect(posted.content).toContain('Long-term storage of this video failed');
  });

  it('switches new tasks to another layer while running tasks keep theirs', async () => {
    const { emulator, guild } = world;
    emulator.config.timing.generation_ms = 1500;
    const before = video(guild.member, 'started on compat');
    await before.response();
    await config(guild.admin, 'layer', { layer: 'native' }).reply();
    const after = video(guild.member, 'started on native');
    await after.response();
    await emulator.waitForRequest((entry) => entry.method === 'POST' && entry.path === '/native/v1/videos/generations' && JSON.stringify(entry.body).includes('started on native'));
    const compatTask = emulator.requests.find((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes('started on compat'));
    expect(compatTask?.path).toBe('/v1/videos/generations');
    await before.waitForReply((message) => JSON.stringify(message.embeds).includes('posted below'), 20_000);
    expect(emulator.requests.some((entry) => entry.method === 'GET' && /^\/v1\/videos\/task_/.test(entry.path))).toBe(true);
    await after.waitForReply((message) => JSON.stringify(message.embeds).includes('posted below'), 20_000);
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
    await first.waitForReply((message) => JSON.stringify(message.embeds).includes('`task_'));
    const second = (await video(limited, 'second of the day').response()).data;
    expect(second).toMatchObject({ flags: 64, content: expect.stringMatching(/limit of 1 video a day\. Try again <t:\d+:R>/) });

    await config(guild.admin, 'limits', { daily_per_user: 0, concurrent_per_user: 1 }).reply();
    world.emulator.config.timing.generation_ms = 5000;
    const busy = discord.createUser({ guildId: guild.id, name: 'busy' });
    const long = video(busy, 'long one');
    await long.waitForReply((message) => JSON.stringify(message.embeds).includes('`task_'));
    const refused = (await video(busy, 'another').response()).data;
    expect(refused).toMatchObject({ flags: 64, content: expect.stringMatching(/videos in progress .*\. Try again when one of your videos finishes\.$/) });
    world.emulator.config.timing.generation_ms = 300;
    await config(guild.admin, 'limits', { concurrent_per_user: 0 }).reply();
  });

  it('holds a server-wide daily cap when several members ask at the same moment', async () => {
    const { discord } = world;
    const crowded = discord.createGuild({ name: 'crowded' });
    const inCrowded = (user: User, command: string, subcommand: string, options: Record<string, string | number> = {}) =>
      discord.runCommand({ user, guildId: crowded.id, channelId: crowded.textChannelId, command, subcommand, options });
    await setKey(SERVER_KEY, crowded);
    await inCrowded(crowded.admin, 'config', 'limits', { daily_per_server: 2 }).reply();

    const members = Array.from({ length: 5 }, (_, index) => discord.createUser({ guildId: crowded.id, name: `crowd-${index}` }));
    const runs = members.map((member) => inCrowded(member, 'video', 'generate', { prompt: 'all at once' }));
    const isCard = (message: Message) => JSON.stringify(message.embeds).includes('`task_');
    const answers = await Promise.all(runs.map((run) => run.waitForReply((message) => isCard(message) || message.content.includes('reached its'))));
    expect(answers.filter(isCard)).toHaveLength(2);
    const refusals = answers.filter((message) => !isCard(message));
    expect(refusals).toHaveLength(3);
    for (const refusal of refusals) expect(refusal.content).toMatch(/^This server reached its 2 videos for today; try again <t:\d+:R>\.$/);
  });

  it('records every change with who and when', async () => {
    const shown = (await config(world.guild.admin, 'show').reply()).content;
    expect(shown).toContain('Recent changes');
    expect(shown).toMatch(new RegExp(`<t:\\d+:R> <@${world.guild.admin.id}> set limits`));
  });

  it('shows admins today\'s and this month\'s videos and cost per member', async () => {
    const { discord, guild } = world;
    await discord.waitFor(() => (discord.messages(guild.textChannelId).filter((message) => message.attachments.length > 0).length >= 3 ? true : undefined), 20_000, 'finished videos');
    const run = discord.runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'video', subcommand: 'usage' });
    const report = (await run.reply()).content;
    expect(report).toMatch(/\*\*Today \(\d{4}-\d{2}-\d{2} UTC\)\*\*: \d+ videos, \$\d+\.\d{2}/);
    expect(report).toContain(`<@${guild.member.id}>`);
    expect(report).toContain('This month');
    const refused = discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'video', subcommand: 'usage' });
    expect((await refused.reply()).content).toContain('Manage Server');
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
    const answers = discord.interactions.map((interaction) => JSON.stringify({ callbacks: interaction.callbacks, original: interaction.original, followUps: interaction.followUps }));
    const channelMessages = [...new Set(discord.interactions.map((interaction) => interaction.channelId))].flatMap((channel) => discord.messages(channel).map((message) => JSON.stringify(message)));
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
