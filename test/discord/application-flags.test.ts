import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDiscordRest, membersIntentAllowed } from '../../src/discord/client.ts';

// Whether the Developer Portal allows Server Members, read from GET /applications/@me through
// @discordjs/rest against a local server: either flag of the intent (an application in 100 servers or
// more, or fewer) allows it, any other flag does not, and an answer without flags says nothing.

/** What the server answers GET /applications/@me with next: a status and a JSON body. */
let answer: { status: number; body: unknown } = { status: 200, body: {} };
let server: Server;
let apiUrl = '';

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    if (request.method !== 'GET' || !request.url?.endsWith('/applications/@me')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"404: Not Found","code":0}');
      return;
    }
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  apiUrl = `http://127.0.0.1:${address.port}/api`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const flagsAnswer = async (body: unknown, status = 200): Promise<boolean | undefined> => {
  answer = { status, body };
  return membersIntentAllowed(createDiscordRest(apiUrl, 'test-token'));
};

describe('reading whether the application may use the Server Members intent', () => {
  it('is allowed by GATEWAY_GUILD_MEMBERS (1<<14) or GATEWAY_GUILD_MEMBERS_LIMITED (1<<15)', async () => {
    expect(await flagsAnswer({ id: '1', flags: 1 << 14 })).toBe(true);
    expect(await flagsAnswer({ id: '1', flags: 1 << 15 })).toBe(true);
    expect(await flagsAnswer({ id: '1', flags: (1 << 15) | (1 << 19) | (1 << 23) })).toBe(true);
  });

  it('is not allowed by flags without either, the other privileged intents included', async () => {
    expect(await flagsAnswer({ id: '1', flags: 0 })).toBe(false);
    expect(await flagsAnswer({ id: '1', flags: (1 << 12) | (1 << 13) | (1 << 18) | (1 << 19) })).toBe(false);
  });

  it('is unknown from an answer without usable flags, and rejects when the request fails', async () => {
    expect(await flagsAnswer({ id: '1' })).toBeUndefined();
    expect(await flagsAnswer({ id: '1', flags: '32768' })).toBeUndefined();
    await expect(flagsAnswer({ message: 'Unauthorized', code: 0 }, 401)).rejects.toThrow();
  });
});
