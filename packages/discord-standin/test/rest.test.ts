import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRecord } from '../src/lib/json.ts';
import { createLogger } from '../src/lib/log.ts';
import { startDiscordStandIn, type DiscordStandIn, type TestGuild, type Upload } from '../src/index.ts';

// Discord's REST rules, checked over plain HTTP: what the bot gets back when it does something right,
// and when it does something Discord refuses. The discord.js side is in discord.test.ts.

const DEADLINE_MS = 300;
let discord: DiscordStandIn;
let guild: TestGuild;
const logLines: string[] = [];

beforeAll(async () => {
  discord = await startDiscordStandIn({
    responseDeadlineMs: DEADLINE_MS,
    log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
  });
  guild = discord.createGuild({ name: 'rules', attachmentSizeLimit: 2000 });
  const registered = await call('PUT', `/applications/${discord.applicationId}/guilds/${guild.id}/commands`, {
    json: [{ name: 'ask', description: 'ask something', options: [{ type: 3, name: 'text', description: 'what' }] }],
  });
  expect(registered.status).toBe(200);
}, 30_000);

afterAll(async () => {
  await discord?.close();
});

interface CallOptions {
  json?: unknown;
  files?: { name: string; bytes: Buffer }[];
  auth?: string | null;
}

async function call(
  method: string,
  route: string,
  options: CallOptions = {},
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const headers: Record<string, string> = {};
  const auth = options.auth === undefined ? `Bot ${discord.botToken}` : options.auth;
  if (auth !== null) headers.authorization = auth;
  let body: string | FormData | undefined;
  if (options.files) {
    const form = new FormData();
    options.files.forEach((file, index) => form.append(`files[${index}]`, new Blob([file.bytes]), file.name));
    form.append('payload_json', JSON.stringify(options.json ?? {}));
    body = form;
  } else if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const response = await fetch(`${discord.apiUrl}/v10${route}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

function field(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) current = Array.isArray(current) ? current[Number(key)] : isRecord(current) ? current[key] : undefined;
  return current;
}

function ask() {
  const run = discord.runCommand({
    user: guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'ask',
    options: { text: 'hi' },
  });
  const id = String(run.interaction.id);
  const token = String(run.interaction.token);
  return { run, callback: `/interactions/${id}/${token}/callback`, webhook: `/webhooks/${discord.applicationId}/${token}` };
}

describe('authentication and unknown routes', () => {
  it('answers 401 without the bot token, and 404 (recorded) on a route Discord lacks', async () => {
    expect((await call('GET', '/users/@me', { auth: null })).status).toBe(401);
    expect((await call('GET', '/users/@me', { auth: 'Bot wrong' })).status).toBe(401);
    expect(field((await call('GET', '/users/@me')).body, 'id')).toBe(discord.botUserId);

    const missing = await call('GET', '/guilds/123456789012345678/bans');
    expect(missing).toMatchObject({ status: 404, body: { message: '404: Not Found', code: 0 } });
    expect(discord.requests).toContainEqual(
      expect.objectContaining({ method: 'GET', path: '/guilds/123456789012345678/bans', status: 404 }),
    );
    expect(logLines.some((line) => line.includes('no such route'))).toBe(true);
  });

  it('refuses commands for a server the bot is not in with 403 / 50001 Missing Access', async () => {
    const elsewhere = await call('PUT', `/applications/${discord.applicationId}/guilds/123456789012345678/commands`, { json: [] });
    expect(elsewhere).toMatchObject({ status: 403, body: { message: 'Missing Access', code: 50001 } });
  });

  it('points the bot at its own gateway', async () => {
    const { body } = await call('GET', '/gateway/bot');
    expect(body).toMatchObject({ shards: 1, session_start_limit: { remaining: 1000, max_concurrency: 1 } });
    expect(String(field(body, 'url'))).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/gateway$/);
  });
});

describe('interaction rules', () => {
  it('accepts one response (with_response returns the message), then refuses a second with 40060', async () => {
    const { run, callback } = ask();
    const first = await call('POST', `${callback}?with_response=true`, { json: { type: 4, data: { content: 'answer' } }, auth: null });
    expect(first.status).toBe(200);
    expect(field(first.body, 'resource', 'message', 'content')).toBe('answer');
    expect(await run.response()).toMatchObject({ type: 4, data: { content: 'answer' } });
    const second = await call('POST', callback, { json: { type: 4, data: { content: 'again' } }, auth: null });
    expect(second).toMatchObject({ status: 400, body: { code: 40060 } });
  });

  it("refuses a response over Discord's limits with 50035 without acknowledging, so a fixed one still goes through", async () => {
    const { run, callback } = ask();
    const tooLong = await call('POST', callback, { json: { type: 4, data: { content: 'x'.repeat(2001) } }, auth: null });
    expect(tooLong).toMatchObject({
      status: 400,
      body: { code: 50035, errors: { data: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH' }] } } } },
    });
    const fits = await call('POST', callback, { json: { type: 4, data: { content: 'x'.repeat(2000) } }, auth: null });
    expect(fits.status).toBe(204);
    expect((await run.response()).data.content).toHaveLength(2000);
  });

  it('answers a first response after the deadline with 10062, and run.response() rejects', async () => {
    const { run, callback } = ask();
    await expect(run.response()).rejects.toThrow(/for a response to \/ask in vain/);
    expect(await call('POST', callback, { json: { type: 5 }, auth: null })).toMatchObject({
      status: 404,
      body: { message: 'Unknown interaction', code: 10062 },
    });
  });

  it('edits, fetches and deletes the reply through %40original, and keeps follow-ups', async () => {
    const { run, callback, webhook } = ask();
    expect((await call('POST', callback, { json: { type: 5, data: { flags: 64 } }, auth: null })).status).toBe(204);
    expect(discord.messages(guild.textChannelId).find((message) => message.id === run.record.original?.id)?.flags).toBe(64 | 128);

    const edited = await call('PATCH', `${webhook}/messages/%40original`, { json: { content: 'step 1' }, auth: null });
    expect(edited).toMatchObject({ status: 200, body: { content: 'step 1', flags: 64 } });
    await call('PATCH', `${webhook}/messages/%40original`, { json: { content: 'step 2' }, auth: null });
    expect((await run.reply()).edits.map((edit) => edit.json.content)).toEqual(['step 1', 'step 2']);
    expect(field((await call('GET', `${webhook}/messages/%40original`, { auth: null })).body, 'content')).toBe('step 2');

    const followUp = await call('POST', `${webhook}?wait=true`, { json: { content: 'later' }, auth: null });
    const followUpId = String(field(followUp.body, 'id'));
    await call('PATCH', `${webhook}/messages/${followUpId}`, { json: { content: 'later, edited' }, auth: null });
    expect(run.followUps.map((message) => message.content)).toEqual(['later, edited']);
    expect((await call('DELETE', `${webhook}/messages/${followUpId}`, { auth: null })).status).toBe(204);
    expect((await call('DELETE', `${webhook}/messages/%40original`, { auth: null })).status).toBe(204);
    expect((await call('GET', `${webhook}/messages/%40original`, { auth: null })).body).toMatchObject({ code: 10008 });
    expect(discord.messages(guild.textChannelId).some((message) => message.id === followUpId)).toBe(false);
  });

  it('refuses webhook calls once the token has expired with 50027', async () => {
    const { run, callback, webhook } = ask();
    await call('POST', callback, { json: { type: 5 }, auth: null });
    discord.expireInteraction(run);
    expect(await call('PATCH', `${webhook}/messages/%40original`, { json: { content: 'late' }, auth: null })).toMatchObject({
      status: 401,
      body: { code: 50027 },
    });
    expect(await call('POST', webhook, { json: { content: 'late' }, auth: null })).toMatchObject({ status: 401, body: { code: 50027 } });
  });

  it('expires tokens by itself after the configured lifetime', async () => {
    const shortLived = await startDiscordStandIn({ tokenLifetimeMs: 50 });
    try {
      const server = shortLived.createGuild();
      await fetch(`${shortLived.apiUrl}/v10/applications/${shortLived.applicationId}/commands`, {
        method: 'PUT',
        headers: { authorization: `Bot ${shortLived.botToken}`, 'content-type': 'application/json' },
        body: JSON.stringify([{ name: 'ping', description: 'ping' }]),
      });
      const run = shortLived.runCommand({ user: server.member, guildId: server.id, channelId: server.textChannelId, command: 'ping' });
      const token = String(run.interaction.token);
      await fetch(`${shortLived.apiUrl}/v10/interactions/${String(run.interaction.id)}/${token}/callback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"type":5}',
      });
      await shortLived.waitForTokenExpiry(run);
      const late = await fetch(`${shortLived.apiUrl}/v10/webhooks/${shortLived.applicationId}/${token}/messages/%40original`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: '{"content":"x"}',
      });
      expect(late.status).toBe(401);
      expect(await late.json()).toMatchObject({ code: 50027 });
    } finally {
      await shortLived.close();
    }
  });
});

describe('messages and uploads', () => {
  it('records every upload, serves it from a signed CDN url, and refuses files over the server limit', async () => {
    const uploads: Upload[] = [];
    discord.events.on('upload', (upload: Upload) => uploads.push(upload));
    const sent = await call('POST', `/channels/${guild.textChannelId}/messages`, {
      json: { content: 'clip', attachments: [{ id: '0', filename: 'clip.mp4' }] },
      files: [{ name: 'ignored-name.bin', bytes: Buffer.alloc(1500, 7) }],
    });
    expect(sent.status).toBe(200);
    const url = String(field(sent.body, 'attachments', '0', 'url'));
    expect(url).toMatch(/\/clip\.mp4\?ex=[0-9a-f]+&is=[0-9a-f]+&hm=[0-9a-f]{64}$/);
    expect(Buffer.from(await (await fetch(url)).arrayBuffer()).equals(Buffer.alloc(1500, 7))).toBe(true);
    expect(uploads.map((upload) => upload.attachment.filename)).toEqual(['clip.mp4']);
    expect(discord.uploads.at(-1)?.messageId).toBe(field(sent.body, 'id'));

    const tooBig = await call('POST', `/channels/${guild.textChannelId}/messages`, {
      json: {},
      files: [{ name: 'big.mp4', bytes: Buffer.alloc(2001) }],
    });
    expect(tooBig).toMatchObject({ status: 413, body: { message: 'Request entity too large', code: 40005 } });

    const { callback, webhook } = ask();
    await call('POST', callback, { json: { type: 5 }, auth: null });
    const viaWebhook = await call('PATCH', `${webhook}/messages/%40original`, {
      json: {},
      files: [{ name: 'big.mp4', bytes: Buffer.alloc(2001) }],
      auth: null,
    });
    expect(viaWebhook).toMatchObject({ status: 413, body: { code: 40005 } });
    discord.events.removeAllListeners('upload');
  });

  it('caps a whole request at 25 MiB, whatever the server allows', async () => {
    discord.setAttachmentSizeLimit(guild.id, 100 * 1024 * 1024);
    try {
      const huge = await call('POST', `/channels/${guild.textChannelId}/messages`, {
        json: {},
        files: [{ name: 'huge.bin', bytes: Buffer.alloc(26 * 1024 * 1024) }],
      });
      expect(huge).toMatchObject({ status: 413, body: { code: 40005 } });
    } finally {
      discord.setAttachmentSizeLimit(guild.id, 2000);
    }
  });

  it('keeps only the attachments an edit lists, and adds the new ones', async () => {
    const sent = await call('POST', `/channels/${guild.textChannelId}/messages`, {
      json: { attachments: [{ id: '0' }, { id: '1' }] },
      files: [
        { name: 'a.txt', bytes: Buffer.from('a') },
        { name: 'b.txt', bytes: Buffer.from('b') },
      ],
    });
    const id = String(field(sent.body, 'id'));
    const keep = String(field(sent.body, 'attachments', '1', 'id'));
    const edited = await call('PATCH', `/channels/${guild.textChannelId}/messages/${id}`, {
      json: { attachments: [{ id: keep }, { id: '0', filename: 'c.txt' }] },
      files: [{ name: 'c.txt', bytes: Buffer.from('c') }],
    });
    expect(field(edited.body, 'attachments')).toEqual([
      expect.objectContaining({ filename: 'b.txt' }),
      expect.objectContaining({ filename: 'c.txt' }),
    ]);
    const contentOnly = await call('PATCH', `/channels/${guild.textChannelId}/messages/${id}`, { json: { content: 'files stay' } });
    expect(field(contentOnly.body, 'attachments', '1', 'filename')).toBe('c.txt');
  });

  it("refuses messages and edits over Discord's content, embed and component limits with 400 / 50035", async () => {
    const route = `/channels/${guild.textChannelId}/messages`;
    const button = (customId: string) => ({ type: 2, style: 2, label: 'b', custom_id: customId });
    const refused: [unknown, string[]][] = [
      [{ content: 'x'.repeat(2001) }, ['content']],
      [{ embeds: [{ title: 't'.repeat(257) }] }, ['embeds', '0', 'title']],
      [{ embeds: [{ description: 'd'.repeat(4097) }] }, ['embeds', '0', 'description']],
      [{ embeds: [{ fields: [{ name: 'n', value: 'v'.repeat(1025) }] }] }, ['embeds', '0', 'fields', '0', 'value']],
      [{ embeds: [{ description: 'd'.repeat(4000) }, { description: 'd'.repeat(2001) }] }, ['embeds']],
      [{ embeds: Array.from({ length: 11 }, () => ({ title: 't' })) }, ['embeds']],
      [{ components: [{ type: 1, components: [button('c'.repeat(101))] }] }, ['components', '0', 'components', '0', 'custom_id']],
      [
        { components: [{ type: 1, components: Array.from({ length: 6 }, (_, index) => button(String(index))) }] },
        ['components', '0', 'components'],
      ],
    ];
    for (const [json, path] of refused) {
      const answer = await call('POST', route, { json });
      expect(answer).toMatchObject({ status: 400, body: { code: 50035 } });
      expect(field(answer.body, 'errors', ...path, '_errors', '0', 'code')).toBe('BASE_TYPE_MAX_LENGTH');
    }
    const posted = await call('POST', route, {
      json: { content: 'x'.repeat(2000), components: [{ type: 1, components: [button('c'.repeat(100))] }] },
    });
    expect(posted.status).toBe(200);
    const edited = await call('PATCH', `${route}/${String(field(posted.body, 'id'))}`, { json: { content: 'y'.repeat(2001) } });
    expect(edited).toMatchObject({ status: 400, body: { code: 50035 } });
  });

  it('returns the first message for a repeated nonce with enforce_nonce, and creates anew without it', async () => {
    const route = `/channels/${guild.textChannelId}/messages`;
    const first = await call('POST', route, { json: { content: 'n', nonce: 'abc', enforce_nonce: true } });
    const again = await call('POST', route, { json: { content: 'n', nonce: 'abc', enforce_nonce: true } });
    const unenforced = await call('POST', route, { json: { content: 'n', nonce: 'abc' } });
    expect(field(again.body, 'id')).toBe(field(first.body, 'id'));
    expect(field(unenforced.body, 'id')).not.toBe(field(first.body, 'id'));
  });

  it('replies with message_reference, pages the channel history, and opens threads', async () => {
    const route = `/channels/${guild.voiceChannelId}/messages`;
    const ids: string[] = [];
    for (const content of ['one', 'two', 'three']) ids.push(String(field((await call('POST', route, { json: { content } })).body, 'id')));
    const reply = await call('POST', route, { json: { content: 're', message_reference: { message_id: ids[0] } } });
    expect(reply.body).toMatchObject({ type: 19, message_reference: { message_id: ids[0] } });

    const latest = await call('GET', `${route}?limit=2`);
    expect(Array.isArray(latest.body) && latest.body.map((message) => field(message, 'content'))).toEqual(['re', 'three']);
    const older = await call('GET', `${route}?before=${ids[2]}`);
    expect(Array.isArray(older.body) && older.body.map((message) => field(message, 'content'))).toEqual(['two', 'one']);
    const newer = await call('GET', `${route}?after=${ids[0]}&limit=1`);
    expect(Array.isArray(newer.body) && newer.body.map((message) => field(message, 'content'))).toEqual(['two']);
    expect(field((await call('GET', `${route}/${ids[1]}`)).body, 'content')).toBe('two');

    const fromMessage = await call('POST', `/channels/${guild.textChannelId}/messages/${String(field(reply.body, 'id'))}/threads`, {
      json: { name: 'from a message' },
    });
    expect(fromMessage).toMatchObject({ status: 404, body: { code: 10008 } });
    const thread = await call('POST', `/channels/${guild.textChannelId}/threads`, { json: { name: 'Transcript', type: 11 } });
    expect(thread).toMatchObject({ status: 201, body: { type: 11, name: 'Transcript', parent_id: guild.textChannelId } });
    const threadId = String(field(thread.body, 'id'));
    await call('POST', `/channels/${threadId}/messages`, { json: { content: 'in the thread' } });
    expect(discord.messages(threadId).map((message) => message.content)).toEqual(['in the thread']);
  });

  it('answers guild, channel, role and member reads', async () => {
    expect(await call('GET', `/guilds/${guild.id}`)).toMatchObject({ status: 200, body: { id: guild.id, name: 'rules' } });
    const roles = (await call('GET', `/guilds/${guild.id}/roles`)).body;
    expect(Array.isArray(roles) && roles.map((role) => field(role, 'id'))).toEqual([guild.id, guild.adminRoleId, guild.memberRoleId]);
    expect(await call('GET', `/guilds/${guild.id}/members/${guild.admin.id}`)).toMatchObject({
      body: { user: { id: guild.admin.id }, roles: [guild.adminRoleId] },
    });
    expect(await call('GET', `/channels/${guild.voiceChannelId}`)).toMatchObject({ body: { type: 2, bitrate: 64000 } });
    expect((await call('GET', `/guilds/${guild.id}/members/123456789012345678`)).body).toMatchObject({ code: 10007 });
  });
});

describe('injected failures', () => {
  it('answers 429 with Retry-After (global when asked), then 5xx, then normally', async () => {
    discord.rateLimit({ method: 'GET', route: /^\/users\/@me$/, times: 1, retryAfterSeconds: 2, global: true });
    discord.failRoute({ method: 'GET', route: /^\/users\/@me$/, times: 1, status: 503 });
    const limited = await call('GET', '/users/@me');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(limited.headers.get('x-ratelimit-global')).toBe('true');
    expect(limited.body).toMatchObject({ retry_after: 2, global: true });
    expect((await call('GET', '/users/@me')).status).toBe(503);
    expect((await call('GET', '/users/@me')).status).toBe(200);
  });

  it('keeps interaction tokens out of its logs', () => {
    const tokens = discord.interactions.map((record) => record.token);
    expect(tokens.length).toBeGreaterThan(0);
    expect(logLines.some((line) => tokens.some((token) => line.includes(token)) || line.includes(discord.botToken))).toBe(false);
    expect(logLines.some((line) => line.includes('/webhooks/') && line.includes(':token'))).toBe(true);
  });
});
