import { createServer } from 'node:http';
import { startEmulator } from '../src/emulator/server.ts';
import { snowflake, startDiscordStandIn } from 'discord-standin';

// The far side of the video benchmark, in its own process so that its work does not count against the
// bot's event loop: the gateway emulator, the Discord stand-in with a few servers spread over its shards
// (BENCH_SHARDS, round robin), and a control endpoint that makes /video interactions and reports what the
// two saw.

const GENERATION_MS = Number(process.env.BENCH_GENERATION_MS ?? 3000);
const GUILDS = Number(process.env.BENCH_GUILDS ?? 20);
const SHARDS = Number(process.env.BENCH_SHARDS ?? 1);
/** Members who make videos, per server: a few videos each, as on a real server, not hundreds at once. */
const MEMBERS_PER_GUILD = 50;

const emulator = await startEmulator({
  config: {
    timing: { generation_ms: GENERATION_MS },
    limits: { rate_per_minute: 10_000_000, concurrent_tasks: 1_000_000 },
    keys: { 'emulator-key': { group: 'default', quota_usd: 1_000_000 } },
  },
});
// Interactions are made in bulk ahead of their tasks, so the 3 s answer deadline is lifted.
const discord = await startDiscordStandIn({ responseDeadlineMs: 3_600_000, shards: SHARDS });
const guilds = Array.from({ length: GUILDS }, (_, index) => discord.createGuild({ shard: [index % SHARDS, SHARDS] }));
const channels = guilds.map((guild) => guild.textChannelId);
const members = guilds.map((guild) => Array.from({ length: MEMBERS_PER_GUILD }, () => discord.createUser({ guildId: guild.id })));
// The bot is not connected to the stand-in's gateway: /video is registered here, as the bot would.
discord.state.commands.set('global', [
  { id: snowflake(), name: 'video', type: 1, options: [{ name: 'generate', type: 1, options: [{ name: 'prompt', type: 3 }] }] },
]);

/** Discord requests by what they are for. */
function discordTraffic(): Record<string, number> {
  const traffic = { defers: 0, cardEdits: 0, posts: 0, other: 0 };
  for (const request of discord.requests) {
    if (request.method === 'POST' && /^\/interactions\/\d+\/[^/]+\/callback$/.test(request.path)) traffic.defers++;
    else if (request.method === 'PATCH' && (/^\/webhooks\//.test(request.path) || /^\/channels\/\d+\/messages\/\d+$/.test(request.path)))
      traffic.cardEdits++;
    else if (request.method === 'POST' && /^\/channels\/\d+\/messages$/.test(request.path)) traffic.posts++;
    else traffic.other++;
  }
  return traffic;
}

const control = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://control');
  if (url.pathname === '/timing') {
    // Tasks submitted from now on take this long.
    emulator.config.timing.generation_ms = Number(url.searchParams.get('generation_ms'));
    response.writeHead(204).end();
    return;
  }
  if (url.pathname === '/interactions') {
    // Members run /video generate: the bot defers each one, and its status card is the reply.
    const count = Number(url.searchParams.get('count'));
    const made = Array.from({ length: count }, (_, index) => {
      const server = index % guilds.length;
      const guild = guilds[server]!;
      const user = members[server]![Math.floor(index / guilds.length) % MEMBERS_PER_GUILD]!;
      const run = discord.runCommand({
        user,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'benchmark' },
      });
      return { id: run.record.id, token: run.record.token, guildId: guild.id, channelId: guild.textChannelId, userId: user.id };
    });
    const body = JSON.stringify(made);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    return;
  }
  if (url.pathname !== '/stats') {
    response.writeHead(404).end();
    return;
  }
  const requests = { submit: 0, poll: 0, download: 0, other: 0 };
  for (const entry of emulator.requests) {
    if (entry.method === 'POST') requests.submit++;
    else if (/\/content$|^\/files\//.test(entry.path)) requests.download++;
    else if (/\/videos\/[^/]+$/.test(entry.path)) requests.poll++;
    else requests.other++;
  }
  const posts = channels.flatMap((channel) =>
    discord
      .messages(channel)
      .flatMap((message) => (typeof message.nonce === 'string' ? [{ nonce: message.nonce, at: Date.parse(message.timestamp) }] : [])),
  );
  // While the bot runs, only the count: a big answer would cost the bot's event loop what it measures.
  const body = JSON.stringify({
    requests,
    discord: discordTraffic(),
    postCount: posts.length,
    ...(url.searchParams.has('posts') ? { posts } : {}),
  });
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
});
control.listen(0, '127.0.0.1', () => {
  const address = control.address();
  process.stdout.write(
    `${JSON.stringify({
      controlUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
      gatewayUrl: emulator.baseUrl,
      apiUrl: discord.apiUrl,
      botToken: discord.botToken,
      applicationId: discord.applicationId,
      generationMs: GENERATION_MS,
    })}\n`,
  );
});
process.on('SIGTERM', () => {
  void Promise.all([emulator.close(), discord.close()]).then(() => process.exit(0));
});
