import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// The far side of the delivery benchmark, in its own process so that its buffers do not count against
// the bot's memory: a native gateway whose every task is done, with an mp4 of VIDEO_BYTES served in
// chunks, and a Discord REST sink that reads uploads without keeping them (the stand-in keeps every
// upload, and refuses requests over 25 MiB as Discord does). The sink counts what each post carried.
// Both go at about 64 MB/s (a chunk per millisecond), as a fast network would: on loopback a delivery
// would be over before the bot's memory could be sampled.

const VIDEO_BYTES = Number(process.env.BENCH_VIDEO_BYTES ?? 50 * 1024 * 1024);
const FIXTURE = readFileSync(new URL('../src/emulator/fixtures/sample.mp4', import.meta.url));
const CHUNK = Buffer.alloc(64 * 1024);
const BOX_HEADER = 8;
/** One chunk per this many ms, each way. */
const PACE_MS = 1;

/** The fixture, then a `free` box up to VIDEO_BYTES, written a chunk at a time as the client reads. */
function streamVideo(response: ServerResponse): void {
  const padding = VIDEO_BYTES - FIXTURE.length;
  const header = Buffer.alloc(BOX_HEADER);
  header.writeUInt32BE(padding, 0);
  header.write('free', 4, 'latin1');
  response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': VIDEO_BYTES });
  response.write(FIXTURE);
  response.write(header);
  let left = padding - BOX_HEADER;
  const pump = (): void => {
    if (left <= 0) {
      response.end();
      return;
    }
    const piece = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
    left -= piece.length;
    if (response.write(piece)) setTimeout(pump, PACE_MS);
    else response.once('drain', () => setTimeout(pump, PACE_MS));
  };
  pump();
}

const gateway = createServer((request, response) => {
  request.resume();
  const poll = /^\/native\/v1\/videos\/([^/]+)$/.exec(request.url ?? '');
  if (poll) {
    const body = JSON.stringify({
      status: 'done',
      progress: 100,
      video: { url: `${baseUrl(gateway)}/files/${poll[1]}.mp4`, duration: 8, respect_moderation: true },
    });
    response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_bench' }).end(body);
    return;
  }
  streamVideo(response);
});

/** Bytes of each post's body, by its nonce's order of arrival. */
const posts: number[] = [];
let messageIds = 1;

function json(response: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

const discord = createServer((request: IncomingMessage, response) => {
  const path = (request.url ?? '').replace(/^\/api(\/v\d+)?/, '');
  // A post, or a card edit that carries the video (multipart): both upload the file, paced.
  const uploads =
    (request.method === 'POST' && /^\/channels\/\d+\/messages$/.test(path)) ||
    (request.method === 'PATCH' &&
      /^\/channels\/\d+\/messages\/\d+$/.test(path) &&
      (request.headers['content-type'] ?? '').startsWith('multipart/form-data'));
  if (uploads) {
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      request.pause();
      setTimeout(() => request.resume(), PACE_MS);
    });
    request.on('end', () => {
      posts.push(size);
      const id = String(messageIds++).padStart(18, '1');
      json(response, { id, attachments: [{ id, url: `${baseUrl(discord)}/attachments/${id}/video.mp4` }] });
    });
    return;
  }
  request.resume();
  if (request.method === 'GET' && path === '/bench/posts') return json(response, posts);
  if (request.method === 'GET' && /^\/channels\/\d+\/messages/.test(path)) return json(response, []);
  if (request.method === 'GET' && path === '/users/@me') return json(response, { id: '100000000000000099' });
  // Status card edits.
  json(response, { id: '100000000000000098' });
});

function baseUrl(server: typeof gateway): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

await Promise.all([gateway, discord].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
process.stdout.write(`${JSON.stringify({ gatewayUrl: baseUrl(gateway), apiUrl: `${baseUrl(discord)}/api`, videoBytes: VIDEO_BYTES })}\n`);
process.on('SIGTERM', () => {
  gateway.close();
  discord.close();
  process.exit(0);
});
