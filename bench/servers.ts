import { createServer } from 'node:http';
import { startEmulator } from '../src/emulator/server.ts';
import { startDiscordStandIn } from '../test/support/discord/index.ts';

// The far side of the video benchmark, in its own process so that its work does not count against the
// bot's event loop: the gateway emulator, the Discord stand-in with a few servers, and a control
// endpoint that reports what they saw.

const GENERATION_MS = Number(process.env.BENCH_GENERATION_MS ?? 3000);
const GUILDS = Number(process.env.BENCH_GUILDS ?? 20);

const emulator = await startEmulator({
  config: { timing: { generation_ms: GENERATION_MS }, limits: { rate_per_minute: 10_000_000, concurrent_tasks: 1_000_000 }, keys: { 'emulator-key': { group: 'default', quota_usd: 1_000_000 } } },
});
const discord = await startDiscordStandIn();
const channels = Array.from({ length: GUILDS }, () => discord.createGuild().textChannelId);

const control = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://control');
  if (url.pathname === '/timing') {
    // Tasks submitted from now on take this long.
    emulator.config.timing.generation_ms = Number(url.searchParams.get('generation_ms'));
    response.writeHead(204).end();
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
    discord.messages(channel).flatMap((message) => (typeof message.nonce === 'string' ? [{ nonce: message.nonce, at: Date.parse(message.timestamp), bytes: message.attachments[0]?.bytes.length ?? 0 }] : [])),
  );
  const body = JSON.stringify({ requests, posts });
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
      channels,
      guildIds: [...discord.state.guilds.keys()],
      generationMs: GENERATION_MS,
    })}\n`,
  );
});
process.on('SIGTERM', () => {
  void Promise.all([emulator.close(), discord.close()]).then(() => process.exit(0));
});
