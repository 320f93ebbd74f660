import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REST } from 'discord.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { videoBytes } from '../../src/emulator/video-file.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { createVideo, type Video } from '../../src/video/index.ts';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../../src/video/poll-policy.ts';
import type { TaskRecord } from '../../src/video/record.ts';
import { newTaskId } from '../../src/video/repository.ts';
import { startDiscordStandIn, type DiscordStandIn, type Message, type TestGuild, type Upload } from 'discord-standin';
import { SAMPLE_MP4 } from '../support/media.ts';
import { taskRecord } from '../support/task-result.ts';
import { openVideoPolicy } from '../support/open-policy.ts';
import { cardButtons, cardSaying, cardText } from '../support/cards.ts';
import { voiceRequestCard } from '../../src/video/status-card.ts';

// What the bot fetches and posts when a native task finishes, whatever the gateway answers: only videos,
// only from public addresses (or the gateway's own host, or hosts the operator allows), only http(s)
// links, and through a file on disk rather than memory. The bot's task services run in this process on
// a scripted native gateway and the Discord stand-in; test/e2e/video-downloads.test.ts runs the bot as a
// process.

const KEY = 'fake-native-key-1';
const FAST_POLICY: PollPolicy = {
  ...DEFAULT_POLL_POLICY,
  intervalMs: 20,
  maxIntervalMs: 20,
  errorBackoffMs: { base: 20, max: 80 },
  deliveryTries: 3,
  deadlineMs: 5_000,
};

/** A small HTTP server that counts connections as well as requests: a refused address must see neither. */
class LocalServer {
  readonly server: Server;
  readonly requests: string[] = [];
  connections = 0;
  url = '';

  constructor(handle: (request: IncomingMessage, response: ServerResponse) => void) {
    this.server = createServer((request, response) => {
      this.requests.push(request.url ?? '');
      request.resume();
      handle(request, response);
    });
    this.server.on('connection', () => this.connections++);
  }

  async start(host: string): Promise<this> {
    this.server.listen(0, host);
    await once(this.server, 'listening');
    this.url = `http://${host.includes(':') ? `[${host}]` : host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

function serveVideo(response: ServerResponse, bytes: Buffer = SAMPLE_MP4, type = 'video/mp4'): void {
  response.writeHead(200, { 'content-type': type, 'content-length': bytes.length }).end(bytes);
}

/** Every task is done; its answer is what the test says, its files what the test serves. */
let answer: (gatewayId: string) => Record<string, unknown> = () => ({ status: 'pending' });
let serveFile: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => serveVideo(response);

const gateway = new LocalServer((request, response) => {
  response.setHeader('x-request-id', 'req_fake');
  const poll = /^\/native\/v1\/videos\/([^/]+)$/.exec(request.url ?? '');
  if (poll) {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(poll[1] ?? '')));
    return;
  }
  serveFile(request, response);
});

/** What a hostile gateway would like the bot to fetch: a service reachable only from the bot's machine. */
const internal = new LocalServer((_request, response) => serveVideo(response));

let discord: DiscordStandIn;
let guild: TestGuild;
/** One store per video part: a store opens each collection once. */
const stores: Store[] = [];
let directory: string;
let downloads: string;
let rest: REST;
let outbox: DiscordOutbox;
let clients: GatewayClientPool;
let allowingClients: GatewayClientPool;
let video: Video;
let allowing: Video;

const policy = openVideoPolicy({
  access: { apiKey: KEY, layer: 'native' },
  defaults: { storage: { keepDays: 7, publicLink: true } },
});

async function videoPart(pool: GatewayClientPool, downloadDirectory = downloads): Promise<Video> {
  const store = await openStore(`sqlite://${join(directory, `bot-${stores.length}.sqlite`)}`, silentLogger);
  stores.push(store);
  return createVideo({
    store,
    clients: pool,
    policy,
    outbox,
    vendor: 'svc',
    log: silentLogger,
    pollPolicy: FAST_POLICY,
    maxPollsInFlight: 4,
    cardEditIntervalMs: 0,
    downloadDirectory,
  });
}

beforeAll(async () => {
  await gateway.start('127.0.0.1');
  await internal.start('127.0.0.2');
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  directory = mkdtempSync(join(tmpdir(), 'video-downloads-'));
  downloads = join(directory, 'downloads');
  rest = new REST({ api: discord.apiUrl }).setToken(discord.botToken);
  outbox = new DiscordOutbox(rest);
  clients = new GatewayClientPool({ baseUrl: gateway.url, log: silentLogger });
  allowingClients = new GatewayClientPool({ baseUrl: gateway.url, downloadAllowedHosts: ['127.0.0.2'], log: silentLogger });
  video = await videoPart(clients);
  allowing = await videoPart(allowingClients);
}, 30_000);

afterEach(() => {
  answer = () => ({ status: 'pending' });
  serveFile = (_request, response) => serveVideo(response);
  discord.setAttachmentSizeLimit(guild.id, 10 * 1024 * 1024);
});

afterAll(async () => {
  await video?.tracker.stop();
  await allowing?.tracker.stop();
  await clients?.close();
  await allowingClients?.close();
  await Promise.all(stores.map((store) => store.close()));
  rest?.clearHashSweeper();
  rest?.clearHandlerSweeper();
  await discord?.close();
  gateway.close();
  internal.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** A running native task handed to the poller, whose card is a channel message of the bot. */
async function track(by: Video = video, overrides: Partial<TaskRecord> = {}): Promise<{ task: TaskRecord; card: () => Message }> {
  const id = newTaskId();
  const { messageId: cardId } = await outbox.postCard(guild.textChannelId, voiceRequestCard(guild.member.id));
  const now = Date.now();
  const task = taskRecord({
    id,
    gatewayId: `req_${id}`,
    guildId: guild.id,
    channelId: guild.textChannelId,
    userId: guild.member.id,
    createdAt: now,
    submittedAt: now,
    card: { applicationId: discord.applicationId, interactionToken: 'expired', tokenExpiresAt: 0, messageId: cardId },
    ...overrides,
  });
  await by.tasks.create(task);
  by.tracker.track(task);
  return { task, card: () => discord.state.messages.get(cardId)! };
}

/** The card that shows a task's video, if any (its buttons carry the task id). */
function postOf(task: TaskRecord): Message | undefined {
  return discord
    .messages(guild.textChannelId)
    .find((message) => cardButtons(message).some((button) => button.customId === `video:extend:${task.id}`));
}

const done =
  (url: string, extra: Record<string, unknown> = {}) =>
  () => ({ status: 'done', progress: 100, video: { url, duration: 2, respect_moderation: true, ...extra } });

describe('a native video address that is not public', () => {
  it.each([
    ['another loopback address (127.0.0.2)', () => `${internal.url}/v.mp4`],
    // The gateway's own server, under a name that is not GATEWAY_BASE_URL's.
    ['a host name that resolves to loopback', () => `http://localhost:${new URL(gateway.url).port}/files/v.mp4`],
  ])('is not fetched on %s, and the card says why', async (_what, url) => {
    const before = { internal: internal.connections, gateway: gateway.requests.length };
    answer = done(url());
    const { task, card } = await track();
    const text = await cardSaying(discord, card, 'could not be shown');
    expect(text).toContain('not on the public internet');
    expect(text).toContain('DOWNLOAD_ALLOWED_HOSTS');
    expect(internal.connections).toBe(before.internal);
    // Only polls reached the gateway: nothing was fetched from it under another name.
    expect(gateway.requests.slice(before.gateway).every((path) => path.startsWith('/native/v1/videos/'))).toBe(true);
    expect(postOf(task)).toBeUndefined();
    // Refused once and for all: not tried again.
    await vi.waitFor(async () => expect((await video.tasks.get(task.id))?.delivery).toMatchObject({ state: 'closed' }));
    expect((await video.tasks.get(task.id))?.delivery.failures).toBeUndefined();
  });

  it.each([
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/iam/security-credentials/'],
    ['a private network', 'http://10.0.0.8/v.mp4'],
    ['the IPv6 loopback', 'http://[::1]:9/v.mp4'],
  ])('is not fetched on %s, and its address is not posted as a link', async (_what, url) => {
    answer = done(url);
    const { task, card } = await track();
    const text = await cardSaying(discord, card, 'could not be shown');
    expect(text).toContain('not on the public internet');
    expect(text).not.toContain(url);
    expect(postOf(task)).toBeUndefined();
  });

  it('is not fetched when a redirect from the gateway points at it', async () => {
    const before = internal.connections;
    answer = done(`${gateway.url}/files/moved.mp4`);
    serveFile = (_request, response) => response.writeHead(302, { location: `${internal.url}/secret.mp4` }).end();
    const { task, card } = await track();
    expect(await cardSaying(discord, card, 'could not be shown')).toContain('not on the public internet');
    expect(internal.connections).toBe(before);
    expect(postOf(task)).toBeUndefined();
  });

  it('is fetched and posted when the operator allows its host (DOWNLOAD_ALLOWED_HOSTS)', async () => {
    const before = internal.requests.length;
    answer = done(`${internal.url}/v.mp4`);
    const { task, card } = await track(allowing);
    await cardSaying(discord, card, '**Done**');
    expect(internal.requests.length).toBe(before + 1);
    expect(postOf(task)?.attachments[0]?.bytes.equals(SAMPLE_MP4)).toBe(true);
  });

  it("is fetched and posted on the gateway's own host", async () => {
    answer = done(`${gateway.url}/files/own.mp4`);
    const { task, card } = await track();
    await cardSaying(discord, card, '**Done**');
    expect(postOf(task)?.attachments[0]).toMatchObject({ filename: `video-${task.id}.mp4`, contentType: 'video/mp4' });
  });
});

describe('what the gateway gives as the video', () => {
  it('is not posted when it is not a video, and the card says so', async () => {
    answer = done(`${gateway.url}/files/page.mp4`);
    serveFile = (_request, response) =>
      serveVideo(response, Buffer.from('<!doctype html><title>Access denied</title>'), 'text/html; charset=utf-8');
    const { task, card } = await track();
    const text = await cardSaying(discord, card, 'could not be shown');
    expect(text).toContain('not a video');
    expect(text).toContain('text/html');
    expect(postOf(task)).toBeUndefined();
  });

  it('is posted as a WebM when it is one', async () => {
    answer = done(`${gateway.url}/files/clip.webm`);
    const webm = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(64, 1)]);
    serveFile = (_request, response) => serveVideo(response, webm, 'video/webm');
    const { task, card } = await track();
    await cardSaying(discord, card, '**Done**');
    expect(postOf(task)?.attachments[0]).toMatchObject({ filename: `video-${task.id}.webm`, contentType: 'video/webm' });
  });

  it('is not fetched when its address is not an http(s) link, and the card says that, not that it expired', async () => {
    const before = gateway.requests.length;
    answer = done('javascript:alert(document.cookie)//.mp4');
    const { task, card } = await track();
    const text = await cardSaying(discord, card, 'could not be shown');
    expect(text).toContain('not an http(s) link');
    expect(text).not.toContain('expired');
    expect(text).not.toContain('javascript');
    expect(gateway.requests.slice(before).every((path) => path.startsWith('/native/v1/videos/'))).toBe(true);
    expect(postOf(task)).toBeUndefined();
    expect(discord.messages(guild.textChannelId).some((message) => message.content.includes('javascript'))).toBe(false);
  });

  it('never shares a lasting link that is not http(s): the temporary link goes out instead, and the card says why', async () => {
    discord.setAttachmentSizeLimit(guild.id, 1024);
    answer = done(`${gateway.url}/files/big.mp4`, {
      file_output: { file_id: 'file_1', filename: 'big.mp4', public_url: 'javascript:alert(1)' },
    });
    const { task, card } = await track(video, { attachmentSizeLimit: 1024 });
    const text = await cardSaying(discord, card, '**Done**: shown by its link');
    expect(text).toContain('lasting link that is not an http(s) address (`javascript:`)');
    const post = postOf(task);
    expect(cardText(post)).toContain(`${gateway.url}/files/big.mp4`);
    expect(cardText(post)).toContain('temporary link');
    expect(cardText(post)).not.toContain('javascript:alert');
  });

  it('is not posted at all when neither address is an http(s) link', async () => {
    answer = done('javascript:alert(1)', { file_output: { file_id: 'file_2', filename: 'x.mp4', public_url: 'javascript:alert(2)' } });
    const { task, card } = await track();
    const text = await cardSaying(discord, card, 'could not be shown');
    expect(text).toContain('not an http(s) link');
    expect(text).not.toContain('javascript:alert');
    expect(postOf(task)).toBeUndefined();
  });
});

describe('the video on its way to Discord', () => {
  it('goes through a file on disk, which is removed once posted', async () => {
    const big = videoBytes(3 * 1024 * 1024);
    answer = done(`${gateway.url}/files/big.mp4`);
    serveFile = (_request, response) => serveVideo(response, big);
    const seen: { files: { name: string; size: number }[]; upload: Upload }[] = [];
    const onUpload = (upload: Upload) => seen.push({ files: filesUnder(downloads), upload });
    discord.events.on('upload', onUpload);
    try {
      const { task, card } = await track();
      await cardSaying(discord, card, '**Done**');
      // While Discord received it, the video was a file of the bot's, of the video's size.
      expect(seen).toHaveLength(1);
      expect(seen[0]?.files).toEqual([{ name: expect.stringMatching(new RegExp(`^${task.id}-[0-9a-f]+\\.video$`)), size: big.length }]);
      expect(seen[0]?.upload.attachment.bytes.equals(big)).toBe(true);
      await vi.waitFor(() => expect(filesUnder(downloads)).toEqual([]));
    } finally {
      discord.events.off('upload', onUpload);
    }
  });

  it('leaves no file behind when it is refused', async () => {
    answer = done(`${gateway.url}/files/page.mp4`);
    serveFile = (_request, response) => serveVideo(response, Buffer.alloc(4096, 0x20), 'video/mp4');
    const { card } = await track();
    await cardSaying(discord, card, 'not a video');
    await vi.waitFor(() => expect(filesUnder(downloads)).toEqual([]));
  });

  it('leaves no file behind when it grows over the upload limit while it streams, and a link goes out instead', async () => {
    answer = done(`${gateway.url}/files/grows.mp4`);
    serveFile = (_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4' });
      response.write(SAMPLE_MP4);
      response.end(Buffer.alloc(SAMPLE_MP4.length));
    };
    const { task, card } = await track(video, { attachmentSizeLimit: SAMPLE_MP4.length + 10 });
    await cardSaying(discord, card, '**Done**: shown by its link');
    expect(cardText(postOf(task))).toContain(`${gateway.url}/files/grows.mp4`);
    await vi.waitFor(() => expect(filesUnder(downloads)).toEqual([]));
  });

  it('sweeps at start what a process that is gone left behind, and nothing of a running one', async () => {
    const root = join(directory, 'swept');
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    const dead = join(root, `${gone}-0badf00d`);
    const living = join(root, `${process.ppid}-0badf00d`);
    for (const folder of [dead, living]) {
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'left.video'), SAMPLE_MP4);
    }
    const part = await videoPart(clients, root);
    try {
      await vi.waitFor(() => expect(existsSync(dead)).toBe(false));
      expect(existsSync(join(living, 'left.video'))).toBe(true);
    } finally {
      await part.tracker.stop();
    }
  });
});

/** The files under a download directory (every instance's folder), with their sizes. */
function filesUnder(root: string): { name: string; size: number }[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((folder) =>
    readdirSync(join(root, folder)).flatMap((name) => {
      const path = join(root, folder, name);
      return existsSync(path) ? [{ name, size: statSync(path).size }] : [];
    }),
  );
}
