import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGuild, User } from 'discord-standin';
import { ENGLISH, resolveLocale, t } from '../../src/i18n/index.ts';
import { tokenUsableUntil } from '../../src/ports/interaction-context.ts';
import { nextUtcMidnight } from '../../src/settings/limits.ts';
import { HANDOFF_LEAD_MS } from '../../src/video/record.ts';
import { botClockAhead } from '../support/bot-process.ts';
import { cardButtons, cardText } from '../support/cards.ts';
import { PNG_HEADER, SAMPLE_MP4 } from '../support/media.ts';
import { pollUntil } from '../support/poll.ts';
import { startWorld, type World } from '../support/world.ts';

// A member's own install of the app (USER_INSTALLS=on), with the bot as a process on the stand-ins: the
// commands registered for it, a video made in the bot's DM on the operator's key, one that finishes after
// the interaction's token ended reaching the member by DM, and the operator's daily limit, in the member's
// language; a member whose DMs are closed, the message commands in a group DM, and the card's last edit
// before its token ends. One bot for the file (restarted once, at the end, with its clock ahead).

const EPHEMERAL = 64;
const OPERATOR_KEY = 'emulator-key';
/** The emulator's usual pace, and one slow enough that the token can end while the video is made. */
const QUICK_MS = 300;
const SLOW_MS = 60_000;

let world: World;
/** A server that has not added the bot. */
let elsewhere: TestGuild;
/** A member who installed the app, in a server without the bot only, and reads German. */
let mira: User;
/** A member whose DMs are closed to the bot, who reads Spanish. */
let ivo: User;
const GERMAN = resolveLocale('de', undefined, 'member');
const SPANISH = resolveLocale('es-ES', undefined, 'member');

beforeAll(async () => {
  world = await startWorld({ env: { USER_INSTALLS: 'on', USER_INSTALL_DAILY_VIDEOS: '2' } });
  elsewhere = world.discord.createGuild({ withBot: false, locale: 'fr' });
  mira = world.discord.createUser({ guildId: elsewhere.id, name: 'mira', locale: 'de' });
  world.discord.installAppForUser(mira);
  ivo = world.discord.createUser({ guildId: elsewhere.id, name: 'ivo', locale: 'es-ES' });
  world.discord.installAppForUser(ivo);
  world.discord.closeDirectMessages(ivo.id);
}, 60_000);
afterAll(() => world?.stop());

/** What her cards say of whose key paid: in German, hers, where no server's language applies (the bot's DM, her DMs). */
const madeWithOperatorKey = () => t(GERMAN, 'user-install.card.operator-key', { member: `<@${mira.id}>` });
const FRENCH = resolveLocale('fr', undefined, 'channel');

/** The gateway key that submitted the video of `prompt` (the emulator knows keys by their id). */
function keyOf(prompt: string): string | undefined {
  return world.emulator.requests.findLast((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes(prompt))?.keyId;
}

describe("a member's own install", () => {
  it('is offered /video, /usage and the message commands everywhere; /config and /voice stay on servers', () => {
    const offered = Object.fromEntries(
      world.discord.commands().map((command) => [command.name, { types: command.integration_types, contexts: command.contexts }]),
    );
    const everywhere = { types: [0, 1], contexts: [0, 1, 2] };
    const serversOnly = { types: [0], contexts: [0] };
    expect(offered).toEqual({
      'Animate image': everywhere,
      config: serversOnly,
      'Edit video': everywhere,
      'Extend video': everywhere,
      usage: everywhere,
      video: everywhere,
      voice: serversOnly,
    });
  });

  it("makes a video in the bot's DM on the operator's key, shown in the interaction's card", async () => {
    const run = world.discord.runCommand({
      user: mira,
      channelId: world.discord.botDmChannel(mira),
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'a paper boat on a pond', duration: 4 },
    });
    expect((await run.response()).type).toBe(5);
    const card = await run.waitForReply((message) => cardText(message).includes(t(GERMAN, 'video.card.status.done')), 20_000);
    expect(card.attachments.map((file) => file.bytes.subarray(4, 8).toString('latin1'))).toEqual(['ftyp']);
    expect(cardText(card)).toContain(madeWithOperatorKey());
    // Its buttons would need the server's install.
    expect(cardButtons(card)).toEqual([]);
    expect(keyOf('a paper boat on a pond')).toBe(world.emulator.keyIdOf(OPERATOR_KEY));
    // Asked in the bot's DM: the message that pings her replies to the card there.
    const ping = await world.discord.waitForDirectMessage(mira.id, (message) => message.messageReference?.message_id === card.id);
    expect(ping.content).toBe(t(GERMAN, 'video.ping.ready', { member: `<@${mira.id}>`, count: 1 }));
  });

  it('sends a video that finishes after the interaction token ended to the member by DM, once, linking where they asked', async () => {
    const { discord, emulator, bot } = world;
    // The bot's DM holds the cards of her earlier interactions: only a message new from here counts.
    const before = new Set(discord.directMessages(mira.id).map((message) => message.id));
    emulator.config.timing.generation_ms = SLOW_MS;
    let restored = false;
    try {
      const run = discord.runCommand({
        user: mira,
        channelId: elsewhere.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'a slow sunrise over the sea' },
      });
      // The card where she asked is the server's, in French, and says the operator's key pays.
      const card = await run.reply(20_000);
      expect(cardText(card)).toContain(t(FRENCH, 'user-install.card.operator-key', { member: `<@${mira.id}>` }));
      // Fifteen minutes pass: Discord takes no more edits through the token; then the video is done.
      discord.expireInteraction(run);
      emulator.config.timing.generation_ms = QUICK_MS;
      restored = true;
      const delivered = await discord.waitForDirectMessage(
        mira.id,
        (message) => !before.has(message.id) && message.attachments.length > 0,
        20_000,
      );
      await bot.waitForLog((line) => line.msg === 'video posted' && line.message === delivered.id);
      expect(delivered.attachments.map((file) => file.filename)).toEqual([expect.stringMatching(/\.mp4$/)]);
      const askedIn = `https://discord.com/channels/${elsewhere.id}/${elsewhere.textChannelId}/${card.id}`;
      expect(cardText(delivered)).toContain(t(GERMAN, 'user-install.card.asked-in', { link: askedIn }));
      expect(cardText(delivered)).toContain(madeWithOperatorKey());
      expect(keyOf('a slow sunrise over the sea')).toBe(emulator.keyIdOf(OPERATOR_KEY));
      // Once: the bot's DMs with her hold this one video, and one message that pings her alone, in German,
      // replying to it (the card where she asked is in a server the bot cannot write to).
      const ping = await discord.waitForDirectMessage(mira.id, (message) => message.messageReference?.message_id === delivered.id);
      expect(ping.content).toBe(t(GERMAN, 'video.ping.ready', { member: `<@${mira.id}>`, count: 1 }));
      expect(ping.allowedMentions).toEqual({ parse: [], users: [mira.id], replied_user: false });
      expect(discord.directMessages(mira.id).filter((message) => !before.has(message.id))).toEqual([delivered, ping]);
      // Nothing was posted in the server the bot is not in, besides the interaction's own card.
      expect(discord.messages(elsewhere.textChannelId).map((message) => message.id)).toEqual([card.id]);
      // The token is kept with the task until it is delivered, and never written to the log.
      expect(bot.output()).not.toContain(run.record.token);
    } finally {
      if (!restored) emulator.config.timing.generation_ms = QUICK_MS;
    }
  });

  it("holds her to the operator's videos a day and refuses what needs a server, privately and in German", async () => {
    const { discord } = world;
    const channelId = discord.botDmChannel(mira);
    const resets = `<t:${Math.floor(nextUtcMidnight(Date.now()) / 1000)}:R>`;
    const third = discord.runCommand({ user: mira, channelId, command: 'video', subcommand: 'generate', options: { prompt: 'one more' } });
    const refused = await third.response();
    expect(refused.data.flags).toBe(EPHEMERAL);
    expect(refused.data.content).toBe(t(GERMAN, 'user-install.limit.videos', { count: 2, retry: resets }));

    const edit = discord.runCommand({ user: mira, channelId, command: 'video', subcommand: 'edit', options: { prompt: 'brighter' } });
    expect((await edit.response()).data.content).toBe(t(GERMAN, 'user-install.server-only', { what: '`/video edit`' }));

    // No server is named where there is none: /video status looks only among the tasks of her own install.
    const status = discord.runCommand({ user: mira, channelId, command: 'video', subcommand: 'status', options: { task: 'vnope' } });
    expect((await status.response()).data.content).toBe(t(GERMAN, 'user-install.no-task', { ref: 'vnope' }));

    const usage = (await discord.runCommand({ user: mira, channelId, command: 'usage' }).response()).data.content;
    expect(usage).toContain(t(GERMAN, 'user-install.usage.title'));
    expect(usage).toContain(t(GERMAN, 'user-install.usage.videos-left', { left: 0, count: 2, resets }));
    // All of it went as the bot meant: nothing it had to log as an error.
    expect(world.bot.logs.filter((line) => line.level === 'error')).toEqual([]);
  });

  it('ends a task for a member whose DMs are closed saying so, which /video status shows, in their language', async () => {
    const { discord, emulator, bot } = world;
    emulator.config.timing.generation_ms = SLOW_MS;
    try {
      const run = discord.runCommand({
        user: ivo,
        channelId: elsewhere.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'a lighthouse in fog' },
      });
      await run.reply(20_000);
      // Past the token, the video can only go to his DMs, which refuse the bot.
      discord.expireInteraction(run);
      emulator.config.timing.generation_ms = QUICK_MS;
      const closed = await bot.waitForLog((line) => line.msg === "a member's DMs are closed to the bot; closing their task");
      const ref = String(closed.task);
      // Closed as soon as the bot has saved it: /video status answers only when asked.
      const reason = t(SPANISH, 'user-install.card.dm-closed');
      await pollUntil({
        ask: () =>
          discord
            .runCommand({ user: ivo, channelId: elsewhere.textChannelId, command: 'video', subcommand: 'status', options: { task: ref } })
            .reply(),
        found: (shown) => (cardText(shown).includes(reason) ? true : undefined),
        intervalMs: 100,
        timeoutMs: 10_000,
        timeoutError: (last) => new Error(`/video status never showed why: ${cardText(last)}`),
      });
      expect(discord.directMessages(ivo.id)).toEqual([]);
    } finally {
      emulator.config.timing.generation_ms = QUICK_MS;
    }
  });

  it("animates an image and extends a video from a group DM's messages, on the operator's key", async () => {
    const { discord } = world;
    const kai = discord.createUser({ guildId: elsewhere.id, name: 'kai' });
    const friend = discord.createUser({ guildId: elsewhere.id, name: 'friend' });
    discord.installAppForUser(kai);
    const group = discord.createPrivateChannel({ users: [kai, friend, mira] });
    const picture = discord.postMessage({
      user: friend,
      channelId: group.id,
      attachments: [{ filename: 'cat.png', bytes: PNG_HEADER, contentType: 'image/png' }],
    });
    const clip = discord.postMessage({
      user: friend,
      channelId: group.id,
      attachments: [{ filename: 'clip.mp4', bytes: SAMPLE_MP4, contentType: 'video/mp4' }],
    });
    const made = async (command: string, message: typeof picture, prompt: string, selects?: Record<string, string[]>) => {
      const opening = discord.runMessageCommand({ user: kai, message, command });
      const form = await opening.modal();
      // The seconds' default it names is the bot's: no server's settings apply through her own install.
      if (command === 'Animate image')
        expect(JSON.stringify((await opening.response()).data.components)).toContain(
          JSON.stringify(
            t(ENGLISH, 'video.form.seconds-range', {
              label: t(ENGLISH, 'video.form.seconds'),
              min: 1,
              max: 15,
              default: 8,
              serverDefault: 'no',
            }),
          ),
        );
      const submit = discord.submitModal({
        user: kai,
        channelId: group.id,
        customId: form.customId,
        fields: { prompt, duration: '' },
        ...(selects ? { selects } : {}),
      });
      return submit.waitForReply((reply) => cardText(reply).includes(t(ENGLISH, 'video.card.status.done')), 20_000);
    };
    const animated = await made('Animate image', picture, 'the cat blinks', { variants: ['1'] });
    const extended = await made('Extend video', clip, 'the clip goes on');
    for (const [card, prompt] of [
      [animated, 'the cat blinks'],
      [extended, 'the clip goes on'],
    ] as const) {
      expect(cardText(card)).toContain(t(ENGLISH, 'user-install.card.operator-key', { member: `<@${kai.id}>` }));
      expect(keyOf(prompt)).toBe(world.emulator.keyIdOf(OPERATOR_KEY));
    }
    // Nothing of it in the group DM, where the bot is not: only the interactions' own cards.
    expect(discord.messages(group.id).map((message) => message.id)).toEqual([picture.id, clip.id, animated.id, extended.id]);
  });

  // Last: the bot is restarted with its clock ahead, as the token's end nears.
  it('hands off the card a minute before its token ends: the rest comes by DM, or /video status where DMs are closed', async () => {
    const { discord } = world;
    const noor = discord.createUser({ guildId: elsewhere.id, name: 'noor' });
    discord.installAppForUser(noor);
    const seen = world.bot.logs.length;
    // Discord takes no edit through their interactions: their videos are made, but cannot be shown yet.
    const asked = [noor, ivo].map((user) => {
      const run = discord.runCommand({
        user,
        channelId: elsewhere.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: `${user.username} at dusk` },
      });
      const recover = discord.failRoute({
        method: 'PATCH',
        route: new RegExp(`/webhooks/\\d+/${run.record.token}/messages/`),
        times: 1_000,
        status: 500,
      });
      return { run, recover };
    });
    const failing = new Set<unknown>();
    await world.bot.waitForLog((line) => {
      if (line.msg === 'could not deliver a finished video; backing off' && world.bot.logs.indexOf(line) >= seen) failing.add(line.task);
      return failing.size === asked.length;
    });
    await world.bot.stop();
    for (const { recover } of asked) recover();
    // Back 13 min 30 s after they asked, by the bot's clock: the moment of the cards' last edit.
    await world.restartBot(botClockAhead(tokenUsableUntil({ interactionReceivedAt: 0 }) - HANDOFF_LEAD_MS));
    const [forNoor, forIvo] = asked;
    const noorsCard = await forNoor!.run.waitForReply(
      (message) => cardText(message).includes(t(FRENCH, 'user-install.card.handoff.dms', { count: 1 })),
      20_000,
    );
    await forIvo!.run.waitForReply(
      (message) => cardText(message).includes(t(FRENCH, 'user-install.card.handoff.status', { count: 1 })),
      20_000,
    );
    const delivered = await discord.waitForDirectMessage(noor.id, (message) => message.attachments.length > 0, 20_000);
    expect(cardText(delivered)).toContain(
      t(ENGLISH, 'user-install.card.asked-in', {
        link: `https://discord.com/channels/${elsewhere.id}/${elsewhere.textChannelId}/${noorsCard.id}`,
      }),
    );
    // Ivo's is tried there all the same (his DMs may have opened since), and ends saying so.
    await world.bot.waitForLog((line) => line.msg === "a member's DMs are closed to the bot; closing their task");
    // The cards where they asked keep their last word: no video went into them.
    expect(noorsCard.attachments).toEqual([]);
  });
});
