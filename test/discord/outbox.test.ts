import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { ComponentType, MessageFlags, REST } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CardEdit, DiscordOutbox, type FileToPost, MAX_CONTENT_LENGTH } from '../../src/discord/outbox.ts';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { SAMPLE_MP4 } from '../support/media.ts';

// What the background services send to Discord, through discord.js's own REST client against the
// stand-in, which refuses what Discord refuses.

let discord: DiscordStandIn;
let guild: TestGuild;
let outbox: DiscordOutbox;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  outbox = new DiscordOutbox(new REST({ api: discord.apiUrl }).setToken(discord.botToken));
}, 30_000);

afterAll(async () => {
  await discord?.close();
});

describe('say', () => {
  it('sends text longer than one Discord message as several, in order, cut between words', async () => {
    const channel = guild.textChannelId;
    const before = discord.messages(channel).length;
    const words = Array.from({ length: 900 }, (_, index) => `word${index}`);
    const firstId = await outbox.say(channel, `**Bot**: ${words.join(' ')}`);
    const sent = discord.messages(channel).slice(before);
    expect(sent.length).toBeGreaterThan(1);
    expect(sent[0]?.id).toBe(firstId);
    for (const message of sent) expect(message.content.length).toBeLessThanOrEqual(MAX_CONTENT_LENGTH);
    expect(sent.map((message) => message.content).join(' ')).toBe(`**Bot**: ${words.join(' ')}`);
  });

  it('cuts text without spaces between whole characters: every emoji arrives whole', async () => {
    const channel = guild.textChannelId;
    const before = discord.messages(channel).length;
    // A family emoji is 11 UTF-16 units: 2,000 is no multiple of it, so a cut at the limit would split one.
    const family = '👨‍👩‍👧‍👦';
    const text = family.repeat(400);
    await outbox.say(channel, text);
    const sent = discord.messages(channel).slice(before);
    expect(sent.length).toBeGreaterThan(1);
    for (const message of sent) {
      expect(message.content.length).toBeLessThanOrEqual(MAX_CONTENT_LENGTH);
      expect(message.content.replaceAll(family, '')).toBe('');
    }
    expect(sent.map((message) => message.content).join('')).toBe(text);
  });

  it('sends a message that fits as one', async () => {
    const channel = guild.textChannelId;
    const before = discord.messages(channel).length;
    const text = 'y'.repeat(MAX_CONTENT_LENGTH);
    await outbox.say(channel, text);
    expect(
      discord
        .messages(channel)
        .slice(before)
        .map((message) => message.content),
    ).toEqual([text]);
  });
});

/** A status card showing its text and, in its gallery, the file posted with it. */
function cardWith(text: string, file: FileToPost): CardEdit {
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [
      {
        type: ComponentType.Container,
        components: [
          { type: ComponentType.TextDisplay, content: text },
          { type: ComponentType.MediaGallery, items: [{ media: { url: `attachment://${file.name}` } }] },
        ],
      },
    ],
    file,
  };
}

describe('postCard', () => {
  let directory: string;
  let path: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'outbox-'));
    path = join(directory, 'video.video');
    writeFileSync(path, SAMPLE_MP4);
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('uploads a file read from disk as Discord takes it, like one given as bytes', async () => {
    const channel = guild.textChannelId;
    const fromDisk = await outbox.postCard(
      channel,
      cardWith('from disk', { name: 'video-a.mp4', contentType: 'video/mp4', path }),
      'disk-1',
    );
    const fromMemory = await outbox.postCard(
      channel,
      cardWith('from memory', { name: 'video-b.mp4', contentType: 'video/mp4', data: SAMPLE_MP4 }),
      'memory-1',
    );
    for (const [posted, name, nonce] of [
      [fromDisk, 'video-a.mp4', 'disk-1'],
      [fromMemory, 'video-b.mp4', 'memory-1'],
    ] as const) {
      const message = discord.state.messages.get(posted.messageId);
      expect(message).toMatchObject({ nonce, attachments: [{ filename: name, contentType: 'video/mp4' }] });
      expect(message?.attachments[0]?.bytes.equals(SAMPLE_MP4)).toBe(true);
      expect(posted.attachmentUrl).toBe(message?.attachments[0]?.url);
    }
    // The nonce still guards a repeat.
    const again = await outbox.postCard(channel, cardWith('from disk', { name: 'video-a.mp4', contentType: 'video/mp4', path }), 'disk-1');
    expect(again.messageId).toBe(fromDisk.messageId);
  });

  it('sends the same multipart parts, in the same order, as @discordjs/rest builds from bytes: files[0], then payload_json', async () => {
    const bodies: { type: string; body: Buffer }[] = [];
    const server = createServer((request, response) => {
      void buffer(request).then((body) => {
        bodies.push({ type: request.headers['content-type'] ?? '', body });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"1","attachments":[]}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const rest = new REST({ api: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api` }).setToken('token');
    try {
      const raw = new DiscordOutbox(rest);
      await raw.postCard(guild.textChannelId, cardWith('hi', { name: 'v.mp4', contentType: 'video/mp4', path }), 'n-1');
      await raw.postCard(guild.textChannelId, cardWith('hi', { name: 'v.mp4', contentType: 'video/mp4', data: SAMPLE_MP4 }), 'n-1');
    } finally {
      rest.clearHashSweeper();
      rest.clearHandlerSweeper();
      server.close();
    }
    const [disk, memory] = bodies.map(({ type, body }) => {
      const boundary = /boundary=(.+)$/.exec(type)?.[1] ?? '';
      return { type: type.replace(boundary, 'B'), body: body.toString('latin1').replaceAll(boundary, 'B') };
    });
    expect(disk?.type).toMatch(/^multipart\/form-data; boundary=B$/);
    expect(disk).toEqual(memory);
    expect(disk?.body.indexOf('name="files[0]"; filename="v.mp4"')).toBeLessThan(disk?.body.indexOf('name="payload_json"') ?? -1);
  });
});

describe('deleteCard', () => {
  const card: CardEdit = {
    flags: MessageFlags.IsComponentsV2,
    components: [{ type: ComponentType.Container, components: [{ type: ComponentType.TextDisplay, content: 'a card' }] }],
  };
  const address = (messageId: string | undefined) => ({
    applicationId: 'app',
    interactionToken: 'gone',
    tokenExpiresAt: 0,
    channelId: guild.textChannelId,
    messageId,
  });

  it('deletes the card as the bot’s channel message, and says `gone` when it is gone already', async () => {
    const posted = await outbox.postCard(guild.textChannelId, card);
    expect(await outbox.deleteCard(address(posted.messageId))).toBe('deleted');
    expect(discord.messages(guild.textChannelId).find((message) => message.id === posted.messageId)).toBeUndefined();
    expect(await outbox.deleteCard(address(posted.messageId))).toBe('gone');
  });

  it('cannot reach a card whose id is unknown once its token has ended, and sends nothing', async () => {
    const before = discord.requests.length;
    expect(await outbox.deleteCard(address(undefined))).toBe('unreachable');
    expect(discord.requests.length).toBe(before);
  });

  it('gives up at its deadline behind a rate limit, and its retry never goes out after that', async () => {
    const posted = await outbox.postCard(guild.textChannelId, card);
    discord.rateLimit({ method: 'DELETE', route: /^\/channels\/\d+\/messages\/\d+$/, times: 1, retryAfterSeconds: 1 });
    const started = Date.now();
    await expect(outbox.deleteCard(address(posted.messageId), 300)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(discord.messages(guild.textChannelId).find((message) => message.id === posted.messageId)).toBeDefined();
    // A press after it waits out the same rate limit and finds the card still there: the first one's retry
    // did not delete it behind the member's back.
    expect(await outbox.deleteCard(address(posted.messageId))).toBe('deleted');
  });
});
