import { afterAll, beforeAll } from 'vitest';
import type { CommandRun, InteractionHandle, Message, TestGuild, User } from 'discord-standin';
import type { JournalEntry } from '../../src/emulator/server.ts';
import { cardText } from './cards.ts';
import { PNG_HEADER, SAMPLE_MP4 } from './media.ts';
import { startWorld, type World, type WorldOptions } from './world.ts';

// What the /video end-to-end files share: one world for a file (or for each layer of a file), started
// before its tests and stopped after them, and the commands, files and waits its tests run against it.

/** Interaction callback types (a reply, a deferred reply, an update of the message pressed) and message flags. */
export const REPLY = 4;
export const DEFERRED_REPLY = 5;
export const UPDATE = 7;
export const EPHEMERAL = 64;
export const IS_COMPONENTS_V2 = 1 << 15;

/** The gateway's two layers, for `describe.each`. */
export const LAYERS = ['compat', 'native'] as const;
export type Layer = (typeof LAYERS)[number];

/** A file a member attaches (to a command, a form or a message). */
export interface Upload {
  filename: string;
  bytes: Buffer;
  contentType: string;
}

export const png = (filename: string): Upload => ({ filename, bytes: PNG_HEADER, contentType: 'image/png' });
export const mp4 = (filename: string): Upload => ({ filename, bytes: SAMPLE_MP4, contentType: 'video/mp4' });

/** A card whose video (or every variant's) is done. */
export const isDone = (card: Message): boolean => cardText(card).includes('**Done**');

/** The ref of the video a card's first buttons act on. */
export function videoRefOf(card: Message): string {
  const ref = /video:extend:(v[0-9a-z]+)/.exec(JSON.stringify(card.components))?.[1];
  if (!ref) throw new Error('the card has no Extend button');
  return ref;
}

/** Who runs a command, and in which server. */
export interface RunBy {
  user?: User;
  guild?: TestGuild;
}

/** Its members are plain functions: a test may take them out of it (`const { where } = e2e`). */
export interface VideoWorld {
  /** The world of the running tests (read it inside a hook or a test, not while the file is collected). */
  readonly world: World;
  /** Where the layer's video routes start at the gateway: `/v1` (compat, the default) or `/native/v1`. */
  readonly prefix: string;
  /** A server's text channel (the world's server by default), as `user` (that server's member by default) uses it. */
  where: (user?: User, guild?: TestGuild) => { user: User; guildId: string; channelId: string };
  /** `/video <subcommand>` run in a server's text channel (`by`: the world's server and its member by default). */
  video: (subcommand: string, options?: CommandRun['options'], by?: RunBy) => InteractionHandle;
  /** `/config <subcommand>` run in a server's text channel (`by`: the world's server and its admin by default). */
  config: (subcommand: string, options?: CommandRun['options'], by?: RunBy) => InteractionHandle;
  /** A request that submits a video on the world's layer (a generation, an edit, an extension). */
  isSubmission: (entry: JournalEntry) => boolean;
  /** The video submissions the gateway has taken so far, in order. */
  submissions: () => JournalEntry[];
  /** A message `user` posts in the world's text channel (its text, files and embeds; none by default). */
  post: (user: User, message: { content?: string; files?: Upload[]; embeds?: Record<string, unknown>[] }) => Message;
  /** The ids of the text channel's messages so far, to tell a new message from. */
  messageIds: () => Set<string>;
  /** The first message of the text channel not in `before` that carries a file: a video posted. */
  nextVideoPost: (before: Set<string>, timeoutMs?: number) => Promise<Message>;
}

/**
 * Starts one world (emulator, Discord stand-in, bot) before the tests of the enclosing file or `describe`
 * and stops it after them; `layer` sets the bot's GATEWAY_LAYER.
 */
export function videoWorld(options: WorldOptions & { layer?: Layer } = {}): VideoWorld {
  const { layer, ...worldOptions } = options;
  let started: World | undefined;
  beforeAll(async () => {
    started = await startWorld(layer ? { ...worldOptions, env: { ...worldOptions.env, GATEWAY_LAYER: layer } } : worldOptions);
  }, 60_000);
  afterAll(() => started?.stop());

  const prefix = layer === 'native' ? '/native/v1' : '/v1';
  const current = (): World => {
    if (!started) throw new Error('the world starts before the tests: read it inside a hook or a test');
    return started;
  };
  const where = (user?: User, guild = current().guild) => ({
    user: user ?? guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
  });
  const isSubmission = (entry: JournalEntry): boolean => entry.method === 'POST' && entry.path.startsWith(`${prefix}/videos/`);
  return {
    get world() {
      return current();
    },
    prefix,
    where,
    video: (subcommand, options, by = {}) =>
      current().discord.runCommand({ ...where(by.user, by.guild), command: 'video', subcommand, options }),
    config: (subcommand, options, { guild = current().guild, user = guild.admin } = {}) =>
      current().discord.runCommand({ ...where(user, guild), command: 'config', subcommand, options }),
    isSubmission,
    submissions: () => current().emulator.requests.filter(isSubmission),
    post: (user, message) =>
      current().discord.postMessage({
        user,
        channelId: current().guild.textChannelId,
        content: message.content ?? '',
        attachments: message.files ?? [],
        embeds: message.embeds ?? [],
      }),
    messageIds: () =>
      new Set(
        current()
          .discord.messages(current().guild.textChannelId)
          .map((message) => message.id),
      ),
    nextVideoPost: (before, timeoutMs = 20_000) =>
      current().discord.waitForMessage(
        current().guild.textChannelId,
        (message) => !before.has(message.id) && message.attachments.length > 0,
        timeoutMs,
      ),
  };
}
