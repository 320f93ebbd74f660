import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Upload } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import type { BotProcess } from '../support/bot-process.ts';
import { imageCommand, imageWorkdir } from '../support/dockerfile.ts';
import { forcedLines } from '../support/realtime-lines.ts';
import { beforeRestart, cameBack, endConversation, joinVoice, RESTART_LINE, twoExchanges, type Turn } from '../support/voice-restart.ts';
import { startWorld, type World } from '../support/world.ts';

// A deploy as an operator does it (issue 26, "Done when"): the bot runs as its image runs it (the
// Dockerfile's CMD, scripts/bot, in the image's working directory), on SQLite, a process group of its own.
// A member has a video being made and a voice conversation under way when the whole group is signalled:
// SIGINT (Ctrl-C, systemd's KillMode=control-group) is one graceful stop that says goodbye; SIGKILL (an OOM
// kill, a node lost) says nothing. Either way the next start on the same data directory posts the video
// once and brings the conversation back within 10 s of ready, with what was said, saying "back" once.

/**
 * How long the emulator takes to make a video: the signal comes once the task is submitted, and a graceful
 * stop takes half a second (with two CPU burners on two cores too), so the task is still running when the
 * bot stops; a start takes 1-3 s, so the next start posts it soon after it is ready.
 */
const GENERATION_MS = 3_000;
const SECOND_SIGNAL = 'second signal: exiting without finishing what is in flight';
const RESTARTING_MESSAGE = '🔄 The bot is restarting';

let world: World;
let workdir: string;
beforeAll(async () => {
  workdir = imageWorkdir();
  world = await startWorld({
    emulator: { timing: { generation_ms: GENERATION_MS } },
    start: { command: imageCommand(), cwd: workdir, ownProcessGroup: true },
  });
  // Short lines: a force_message or a scripted answer is a tone 5 ms per character.
  world.emulator.realtime.options.toneMsPerCharacter = 5;
}, 60_000);
afterAll(async () => {
  await world?.stop();
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});
afterEach(() => endConversation(world));

/** What is under way when the deploy comes: a voice conversation and a video task. */
interface InFlight {
  session: RealtimeSession;
  earlier: Turn[];
  task: string;
  /** How many files the bot had uploaded when the video was asked for. */
  uploadsBefore: number;
}

/** The member talks with the bot (two exchanges, recorded), then asks for a video; resolves once the gateway is making it. */
async function workInFlight(): Promise<InFlight> {
  const { discord, guild, bot } = world;
  const session = await joinVoice(world);
  const earlier = await twoExchanges(world, bot, session);
  const uploadsBefore = discord.uploads.length;
  const mark = bot.logs.length;
  discord.runCommand({
    user: guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'video',
    subcommand: 'generate',
    options: { prompt: 'bees at work in a hive' },
  });
  // Accepted by the gateway and stored with its id: from here the task is the tracker's to finish.
  const submitted = await bot.waitForLog((line) => line.msg === 'video task submitted' && bot.logs.indexOf(line) >= mark);
  return { session, earlier, task: String(submitted.task), uploadsBefore };
}

/** The mp4 files the bot uploaded to the text channel (posts and edits alike) since `inFlight`'s video was asked for. */
function videoUploads(inFlight: InFlight): Upload[] {
  const { discord, guild } = world;
  return discord.uploads
    .slice(inFlight.uploadsBefore)
    .filter((upload) => upload.channelId === guild.textChannelId && upload.attachment.filename.endsWith('.mp4'));
}

/**
 * Starts the bot again on the same data directory and checks the deploy went unnoticed: the conversation
 * back within 10 s of ready with its earlier turns, "back" said once; the video posted exactly once.
 */
async function restartedUnnoticed(inFlight: InFlight): Promise<void> {
  const { discord, guild } = world;
  const before = beforeRestart(world);
  const bot: BotProcess = await world.restartBot();
  await cameBack(world, bot, before, inFlight.earlier);

  // Once recorded as posted, the task is never posted again: the count is final.
  const posted = await bot.waitForLog((line) => line.msg === 'video posted' && line.task === inFlight.task, 20_000);
  const uploads = videoUploads(inFlight);
  expect(uploads).toHaveLength(1);
  expect(uploads[0]!.messageId).toBe(posted.message);
  const message = discord.messages(guild.textChannelId).find((candidate) => candidate.id === posted.message);
  expect(JSON.stringify(message?.components)).toContain(`video:extend:${inFlight.task}`);
}

describe('a deploy with a video in flight and a voice conversation under way', () => {
  it('SIGINT to the whole process group: one graceful stop (exit 0) that says it restarts; the next start posts the video once and is back in voice', async () => {
    const { discord, guild } = world;
    const inFlight = await workInFlight();
    const bot = world.bot;

    bot.signalGroup('SIGINT');
    expect(await bot.exited).toBe(0);
    expect(bot.logs.some((line) => line.msg === SECOND_SIGNAL)).toBe(false);
    expect(bot.logs.some((line) => line.msg === 'stopped')).toBe(true);
    // The conversation heard it, and the channel read it.
    expect(forcedLines(inFlight.session)).toContain(RESTART_LINE);
    expect(discord.messages(guild.textChannelId).some((message) => message.content.startsWith(RESTARTING_MESSAGE))).toBe(true);
    // The video was still being made: left to the next start.
    expect(videoUploads(inFlight)).toEqual([]);

    await restartedUnnoticed(inFlight);
  }, 120_000);

  it('SIGKILL to the whole process group: no goodbye; the next start posts the video once and is back in voice the same', async () => {
    const { discord, guild } = world;
    const inFlight = await workInFlight();
    const bot = world.bot;
    const messagesBefore = discord.messages(guild.textChannelId).length;

    bot.signalGroup('SIGKILL');
    expect(await bot.exited).toBe('SIGKILL');
    expect(forcedLines(inFlight.session)).not.toContain(RESTART_LINE);
    expect(
      discord
        .messages(guild.textChannelId)
        .slice(messagesBefore)
        .some((message) => message.content.startsWith(RESTARTING_MESSAGE)),
    ).toBe(false);
    expect(videoUploads(inFlight)).toEqual([]);

    await restartedUnnoticed(inFlight);
  }, 120_000);
});
