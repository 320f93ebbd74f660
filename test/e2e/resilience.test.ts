import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanupBotDirectories, startBot, type BotProcess } from '../support/bot-process.ts';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { startWorld, type World } from '../support/world.ts';
import { cardText } from '../support/cards.ts';

// The bot stays up and honest when Discord or the gateway misbehave, and shuts down without losing work.

describe('when Discord answers 5xx or 429', () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  }, 60_000);
  afterAll(() => world?.stop());

  it('retries through Discord outages and rate limits, and still delivers the video', async () => {
    const { discord, guild, bot } = world;
    discord.rateLimit({ method: 'POST', route: /\/interactions\/\d+\/[^/]+\/callback$/, times: 1, retryAfterSeconds: 1 });
    discord.failRoute({ method: 'PATCH', route: /^\/webhooks\/\d+\/[^/]+\/messages\/[^/]+$/, times: 3, status: 503 });
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'stormy sea' },
    });
    expect((await run.response()).type).toBe(5);
    const posted = await discord.waitForMessage(guild.textChannelId, (message) => message.attachments.length > 0, 20_000);
    expect(cardText(posted)).toContain(`Requested by <@${guild.member.id}>`);
    expect(discord.requests.filter((request) => request.status === 503)).toHaveLength(3);
    expect(discord.requests.filter((request) => request.status === 429)).toHaveLength(1);
    expect(bot.child.exitCode).toBeNull();
  });
});

const MODEL_LIST = JSON.stringify({ object: 'list', data: [{ id: 'svc-imagine-video-1.5', object: 'model', owned_by: 'svc' }] });

/** A gateway that answers what a test says, to reach paths the emulator never takes. */
class FakeGateway {
  readonly server: Server;
  onSubmit: (response: ServerResponse) => void = (response) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"task_id":"task_1","status":"queued"}');
  onModels: (response: ServerResponse) => void = (response) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end(MODEL_LIST);
  modelLists = 0;
  readonly submissions: IncomingMessage[] = [];

  constructor() {
    this.server = createServer((request, response) => {
      request.resume();
      if (request.method === 'POST') {
        this.submissions.push(request);
        this.server.emit('submission');
        this.onSubmit(response);
      } else if (request.url === '/v1/models') {
        this.modelLists++;
        this.server.emit('models');
        this.onModels(response);
      } else {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"task_id":"task_1","status":"processing","progress":10}');
      }
    });
  }

  async start(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }
}

describe('with a gateway that misbehaves', () => {
  let discord: DiscordStandIn;
  let guild: TestGuild;
  let gateway: FakeGateway;
  let bot: BotProcess;

  beforeAll(async () => {
    gateway = new FakeGateway();
    const baseUrl = await gateway.start();
    discord = await startDiscordStandIn();
    guild = discord.createGuild();
    bot = startBot({
      env: {
        DISCORD_TOKEN: discord.botToken,
        DISCORD_API_URL: discord.apiUrl,
        GATEWAY_BASE_URL: baseUrl,
        GATEWAY_API_KEY: 'fake-gateway-key-1',
        NODE_EXTRA_CA_CERTS: discord.caCertPath,
      },
    });
    await bot.waitForLog((line) => line.msg === 'ready', 30_000);
  }, 60_000);

  afterEach(() => {
    gateway.onSubmit = (response) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"task_id":"task_1","status":"queued"}');
  });

  afterAll(async () => {
    if (bot.child.exitCode === null) await bot.stop();
    await discord.close();
    gateway.server.close();
    cleanupBotDirectories();
  });

  it('keeps the "outcome unknown" card when the gateway\'s answer cannot be read, and lives on', async () => {
    gateway.onSubmit = (response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>surprise</html>');
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'unreadable answer' },
    });
    const card = await run.waitForReply((message) => cardText(message).includes('Outcome unknown'));
    expect(cardText(card)).toContain('cannot tell whether the gateway accepted');

    const list = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'list',
    });
    expect((await list.reply()).content).toContain('**outcome unknown**');
    // Not replaced by "something went wrong".
    expect(cardText(run.record.original)).toContain('Outcome unknown');
    expect(bot.logs.some((line) => line.msg === 'interaction handler failed')).toBe(false);
  });

  it("suggests no models rather than miss Discord's 3 s autocomplete deadline while the model list is slow, then the list it brought", async () => {
    let answerModels!: () => void;
    gateway.onModels = (response) => {
      answerModels = () => response.writeHead(200, { 'content-type': 'application/json' }).end(MODEL_LIST);
    };
    const asked = once(gateway.server, 'models');
    const typing = {
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'x', model: 'svc' },
      focused: 'model',
    };
    expect(await discord.autocomplete(typing)).toEqual([]);
    await asked;
    answerModels();
    expect((await discord.autocomplete(typing)).map((choice) => choice.value)).toEqual(['svc-imagine-video-1.5']);
    expect(gateway.modelLists).toBe(1);
  });

  it('on SIGINT finishes what is in flight, closes the store, then exits 0', async () => {
    let answer!: () => void;
    gateway.onSubmit = (response) => {
      answer = () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"task_id":"task_2","status":"queued"}');
    };
    const submitted = once(gateway.server, 'submission');
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'slow gateway' },
    });
    await submitted;
    const stopped = bot.stop('SIGINT');
    await bot.waitForLog((line) => line.msg === 'shutting down: finishing what is in flight');
    answer();
    expect(await stopped).toBe(0);
    const card = await run.reply();
    expect(cardText(card)).toContain('task_2');
    const closing = bot.logs.map((line) => line.msg).filter((msg) => msg === 'store closed' || msg === 'stopped');
    expect(closing).toEqual(['store closed', 'stopped']);
  });
});
