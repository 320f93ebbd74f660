import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { pollUntil, TEST_TIMEOUT_MS } from '../support/poll.ts';
import { rawHttp } from '../support/raw-http.ts';

// The emulator spoken to with raw HTTP, the way any client of the spec would: formats, bad input,
// storage, uploads, url expiry, quotas and limits.

const KEY = 'emulator-key';
let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({
    config: {
      keys: { 'classic-key-0001': { group: 'classic', quota_usd: 1 }, 'pricing-key-0001': { group: 'default', quota_usd: 1 } },
      groups: { classic: { models: ['svc-imagine-video'] } },
      timing: { generation_ms: 80, task_timeout_ms: 400, url_ttl_ms: 300 },
      limits: { rate_per_minute: 100_000, concurrent_tasks: 1000 },
    },
  });
});
afterAll(() => emulator.close());

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

async function call(method: string, path: string, body?: unknown, options: { key?: string | null; raw?: string } = {}): Promise<Answer> {
  const key = options.key === undefined ? KEY : options.key;
  const response = await fetch(`${emulator.baseUrl}${path}`, {
    method,
    headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), 'content-type': 'application/json' },
    body: options.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** Sends raw bytes (what fetch refuses to send) and reads the answer until the emulator closes the connection. */
async function rawExchange(text: string): Promise<{ status: number; headers: string; body: unknown }> {
  const answer = await rawHttp(emulator.port, text);
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]),
    headers: head.toLowerCase(),
    body: body === '' ? undefined : (JSON.parse(body) as unknown),
  };
}

/** Polls a task (as clients of the spec must) until its status is one of `until`. */
function pollTask(layer: 'compat' | 'native', id: string, until: (status: string | undefined) => boolean): Promise<Answer> {
  const path = layer === 'compat' ? `/v1/videos/${id}` : `/native/v1/videos/${id}`;
  return pollUntil({
    ask: () => call('GET', path),
    found: (answer) => (until((answer.body as { status?: string } | undefined)?.status) ? answer : undefined),
    intervalMs: 20,
    timeoutMs: TEST_TIMEOUT_MS,
    timeoutError: (last) => new Error(`task ${id} still ${JSON.stringify(last?.body)}`),
  });
}

function waitUntilDone(layer: 'compat' | 'native', id: string): Promise<Answer> {
  return pollTask(layer, id, (status) => status !== undefined && !['queued', 'processing', 'pending'].includes(status));
}

describe('error formats', () => {
  it('answers the compatibility layer with the envelope, naming the parameter', async () => {
    const answer = await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'x', resolution: '4k' });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: { message: expect.any(String), type: 'gateway_api_error', param: 'resolution', code: 'invalid_request_error' },
    });
    expect(answer.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('answers the native layer with a string error and a top-level code', async () => {
    const answer = await call('POST', '/native/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'x', resolution: '4k' });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'invalid_request_error', error: expect.any(String), usage: { cost_in_usd_ticks: 0 } });
  });

  it.each([
    ['no key', null, 'Missing'],
    ['a wrong key', 'nope-nope-nope', 'Invalid'],
  ])('refuses %s with 401 invalid_api_key', async (_label, key, words) => {
    const answer = await call('GET', '/v1/models', undefined, { key });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: { code: 'invalid_api_key', message: expect.stringContaining(words) } });
  });

  it('takes exactly one space after Bearer', async () => {
    const response = await fetch(`${emulator.baseUrl}/v1/models`, { headers: { authorization: `Bearer  ${KEY}` } });
    expect(response.status).toBe(401);
  });

  it.each([
    ['malformed JSON', '{"model":', 'not valid JSON'],
    ['a JSON array', '[1,2]', 'must be a JSON object'],
  ])('answers %s with 400 in the layer format', async (_label, raw, words) => {
    const compat = await call('POST', '/v1/videos/generations', undefined, { raw });
    expect(compat.status).toBe(400);
    expect(compat.body).toMatchObject({ error: { code: 'invalid_request_error', message: expect.stringContaining(words) } });
    const native = await call('POST', '/native/v1/videos/generations', undefined, { raw });
    expect(native.body).toMatchObject({ code: 'invalid_request_error', error: expect.stringContaining(words) });
  });

  it.each([
    [{ model: 42 }, 'model'],
    [{ model: 'svc-imagine-video-1.5', duration: 'long' }, 'duration'],
    [{ model: 'svc-imagine-video-1.5', image: { url: 'https://a/b.png', file_id: 'f' } }, 'image'],
    [
      {
        model: 'svc-imagine-video-1.5',
        reference_audios: [{ voice_id: 'eve' }, { voice_id: 'leo' }, { voice_id: 'ara' }, { voice_id: 'rex' }],
      },
      'reference_audios',
    ],
    [{ model: 'svc-imagine-video-1.5', storage_options: { public_url: true } }, 'storage_options.filename'],
    [{ model: 'svc-imagine-video-1.5', storage_options: { filename: 'a.mp4', expires_after: 2_592_001 } }, 'storage_options.expires_after'],
  ])('answers wrong types and shapes with the offending param: %j', async (body, param) => {
    const answer = await call('POST', '/v1/videos/generations', { prompt: 'x', ...body });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { param } });
  });

  it.each([
    ['image', { image: { url: 'ftp://files.example/a.png' } }, 'image.url'],
    ['image', { image: { url: 'javascript:alert(1)' } }, 'image.url'],
    ['last_frame', { last_frame: { url: 'file:///etc/passwd' } }, 'last_frame.url'],
    ['reference_images', { reference_images: [{ url: 'https://a.example/ok.png' }, { url: 'not a url' }] }, 'reference_images[1].url'],
  ])('refuses an %s url that is neither http(s) nor a data: URI', async (_field, extra, param) => {
    const answer = await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'x', ...extra });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'invalid_request_error', param } });
  });

  it('accepts image urls that are http(s) or data: URIs', async () => {
    const answer = await call('POST', '/v1/videos/generations', {
      model: 'svc-imagine-video-1.5',
      image: { url: 'data:image/png;base64,iVBORw0KGgo=' },
      reference_images: [{ url: 'http://a.example/b.png' }],
    });
    expect(answer.status).toBe(200);
  });

  it.each([
    ['/v1/videos/edits', 'ftp://files.example/clip.mp4'],
    ['/v1/videos/extensions', 'file:///tmp/clip.mp4'],
    ['/native/v1/videos/edits', 'data:video/mp4;base64,AAAA.mp4'],
    ['/native/v1/videos/extensions', 'https://files.example/clip.mov'],
  ])('refuses a source on %s that is not an http(s) .mp4 link (%s)', async (path, url) => {
    const answer = await call('POST', path, { model: 'svc-imagine-video-1.5', prompt: 'x', video: { url } });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).toContain('video.url');
  });

  it('lists the available voices when a voice_id is unknown, naming the field', async () => {
    const body = { model: 'svc-imagine-video-1.5', prompt: 'x', reference_audios: [{ voice_id: 'EVE' }, { voice_id: 'nobody' }] };
    const compat = await call('POST', '/v1/videos/generations', body);
    expect(compat.status).toBe(400);
    expect(compat.body).toMatchObject({
      error: {
        code: 'invalid_request_error',
        param: 'reference_audios[1].voice_id',
        message: expect.stringMatching(/Available voices: altair, ara, .*eve.*zenith/),
      },
    });
    const native = await call('POST', '/native/v1/videos/generations', body);
    expect(native.status).toBe(400);
    expect(native.body).toMatchObject({ code: 'invalid_request_error', error: expect.stringContaining('Available voices: altair') });
  });

  it('refuses a huge body as a malformed body (400 in the layer format) and stays up', async () => {
    const raw = JSON.stringify({ model: 'x', prompt: 'a'.repeat(2 * 1024 * 1024) });
    const compat = await call('POST', '/v1/videos/generations', undefined, { raw });
    expect(compat.status).toBe(400);
    expect(compat.body).toMatchObject({ error: { code: 'invalid_request_error', message: expect.stringContaining('larger than') } });
    const native = await call('POST', '/native/v1/videos/generations', undefined, { raw });
    expect(native.status).toBe(400);
    expect(native.body).toMatchObject({ code: 'invalid_request_error' });
    expect((await call('GET', '/v1/models')).status).toBe(200);
  });

  it('checks the key before the body: a wrong key with broken JSON is 401, not 400', async () => {
    const answer = await call('POST', '/v1/videos/generations', undefined, { key: 'nope-nope-nope', raw: '{"model":' });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: { code: 'invalid_api_key' } });
  });

  it('answers a stranger at once without reading the body they are still sending', async () => {
    // A chunked body that never ends: the answer can only come if the emulator does not wait for it.
    const answer = await rawExchange(
      'POST /native/v1/videos/generations HTTP/1.1\r\nHost: emulator\r\nAuthorization: Bearer nope-nope-nope\r\n' +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"mod\r\n',
    );
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ code: 'invalid_api_key' });
    expect(answer.headers).toContain('connection: close');
  });

  it('answers unknown routes and wrong methods in the layer format', async () => {
    expect((await call('GET', '/v1/nothing')).body).toMatchObject({ error: { code: 'not_found' } });
    expect((await call('GET', '/native/v1/nothing')).body).toMatchObject({ code: 'not_found' });
    const wrongMethod = await call('GET', '/native/v1/videos/generations');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body).toMatchObject({ code: 'invalid_request_error', error: expect.stringContaining('POST') });
    expect((await call('PUT', '/v1/models')).body).toMatchObject({ error: { code: 'invalid_request_error' } });
  });

  it.each(['GET //[ HTTP/1.1', 'GET http://[ HTTP/1.1'])(
    'answers a request target that is not a URL (%s) with 400 and stays up',
    async (line) => {
      const answer = await rawExchange(`${line}\r\nHost: emulator\r\nConnection: close\r\n\r\n`);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ error: { code: 'invalid_request_error' } });
      expect(answer.headers).toMatch(/x-request-id: req_/);
      expect((await call('GET', '/v1/models')).status).toBe(200);
    },
  );

  it.each(['/v1/videos/%E0%A4%A', '/native/v1/videos/%E0%A4%A', '/v1/videos/%ZZ/content'])(
    'answers a malformed escape in a task id (%s) like an unknown id: 404, not a retryable 500',
    async (path) => {
      const answer = await call('GET', path);
      expect(answer.status).toBe(404);
      expect(JSON.stringify(answer.body)).toContain('not_found');
    },
  );

  it.each(['[[http:000:x]]', '[[http:200:ok]]', '[[http:600:x]]'])(
    'takes %s as no trigger (not an error status) and stays up',
    async (trigger) => {
      const answer = await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: `a fox ${trigger}` });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ task_id: expect.any(String) });
      expect((await call('GET', '/v1/models')).status).toBe(200);
    },
  );

  it("does not know one layer's task ids on the other", async () => {
    const native = (await call('POST', '/native/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'cross' })).body as {
      request_id: string;
    };
    const compat = (await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'cross' })).body as {
      task_id: string;
    };
    expect((await call('GET', `/v1/videos/${native.request_id}`)).status).toBe(404);
    expect((await call('GET', `/native/v1/videos/${compat.task_id}`)).status).toBe(404);
  });
});

describe('models and groups', () => {
  it("lists the models of the key's group", async () => {
    const all = await call('GET', '/v1/models');
    expect(all.body).toMatchObject({
      object: 'list',
      data: expect.arrayContaining([
        { id: 'svc-imagine-video-1.5', object: 'model', owned_by: 'svc' },
        { id: 'svc-voice-latest', object: 'model', owned_by: 'svc' },
      ]),
    });
    const classic = await call('GET', '/v1/models', undefined, { key: 'classic-key-0001' });
    expect(classic.body).toEqual({ object: 'list', data: [{ id: 'svc-imagine-video', object: 'model', owned_by: 'svc' }] });
  });

  it('answers 403 for a model outside the group and 404 for an unknown model', async () => {
    const outside = await call(
      'POST',
      '/v1/videos/generations',
      { model: 'svc-imagine-video-1.5', prompt: 'x' },
      { key: 'classic-key-0001' },
    );
    expect(outside.status).toBe(403);
    expect(outside.body).toMatchObject({ error: { code: 'permission_denied' } });
    const unknown = await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-9', prompt: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: 'model_not_found' } });
  });
});

describe('results', () => {
  it('serves a real mp4 through /content with the key and the temporary url without it', async () => {
    const { task_id: id } = (await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'cat' })).body as {
      task_id: string;
    };
    const done = (await waitUntilDone('compat', id)).body as { status: string; url: string; usage: { cost_in_usd_ticks: number } };
    expect(done.status).toBe('succeeded');
    expect(done.usage.cost_in_usd_ticks).toBeGreaterThan(0);
    const viaContent = await fetch(`${emulator.baseUrl}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${KEY}` } });
    const bytes = Buffer.from(await viaContent.arrayBuffer());
    expect(viaContent.headers.get('content-type')).toBe('video/mp4');
    expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
    expect((await fetch(`${emulator.baseUrl}/v1/videos/${id}/content`)).status).toBe(401);
    expect(Buffer.from(await (await fetch(done.url)).arrayBuffer())).toEqual(bytes);
  });

  it('expires temporary urls: the native task reads expired and the url is gone', async () => {
    const { request_id: id } = (
      await call('POST', '/native/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'soon gone' })
    ).body as { request_id: string };
    const done = (await waitUntilDone('native', id)).body as { status: string; video: { url: string } };
    expect(done.status).toBe('done');
    expect((await fetch(done.video.url)).status).toBe(200);
    await pollTask('native', id, (status) => status === 'expired');
    expect((await fetch(done.video.url)).status).toBe(404);
    // Another url lifetime later the task itself is forgotten, so a long-running emulator stays small.
    expect((await pollTask('native', id, (status) => status !== 'expired')).status).toBe(404);
  });

  it('keeps the video when asked, with a public link and an expiry', async () => {
    const { request_id: id } = (
      await call('POST', '/native/v1/videos/generations', {
        model: 'svc-imagine-video-1.5',
        prompt: 'keep me',
        storage_options: { filename: 'keep.mp4', expires_after: 3600, public_url: true },
      })
    ).body as { request_id: string };
    const done = (await waitUntilDone('native', id)).body as {
      video: { url: string; file_output: { file_id: string; filename: string; expires_at: number; public_url: string } };
    };
    expect(done.video.file_output).toMatchObject({
      file_id: expect.stringMatching(/^file_/),
      filename: 'keep.mp4',
      expires_at: expect.any(Number),
    });
    expect((await fetch(done.video.file_output.public_url)).status).toBe(200);
  });

  it('reports a storage failure without failing the task', async () => {
    const { task_id: id } = (
      await call('POST', '/v1/videos/generations', {
        model: 'svc-imagine-video-1.5',
        prompt: 'x [[storage-fail]]',
        storage_options: { filename: 'a.mp4' },
      })
    ).body as { task_id: string };
    const done = (await waitUntilDone('compat', id)).body as {
      status: string;
      url: string;
      video: { storage_error: string; file_output?: unknown };
    };
    expect(done.status).toBe('succeeded');
    expect(done.video.storage_error).toEqual(expect.any(String));
    expect(done.video.file_output).toBeUndefined();
    expect((await fetch(done.url)).status).toBe(200);
  });

  it('PUTs the video to output.upload_url', async () => {
    let receive!: (body: { method: string | undefined; bytes: Buffer }) => void;
    const received = new Promise<{ method: string | undefined; bytes: Buffer }>((resolve) => (receive = resolve));
    const target: Server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        response.writeHead(200).end();
        receive({ method: request.method, bytes: Buffer.concat(chunks) });
      });
    });
    target.listen(0, '127.0.0.1');
    await once(target, 'listening');
    const address = target.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    await call('POST', '/v1/videos/generations', {
      model: 'svc-imagine-video-1.5',
      prompt: 'upload',
      output: { upload_url: `http://127.0.0.1:${port}/put/video.mp4` },
    });
    const upload = await received;
    expect(upload.method).toBe('PUT');
    expect(upload.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
    target.close();
  });

  it('answers native pending polls with 202, with and without a body', async () => {
    const slow = await startEmulator({ config: { timing: { generation_ms: 5000 } } });
    try {
      const submit = await fetch(`${slow.baseUrl}/native/v1/videos/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-imagine-video-1.5', prompt: 'slow' }),
      });
      const { request_id: id } = (await submit.json()) as { request_id: string };
      const polls = await Promise.all(
        [1, 2].map(async () => {
          const response = await fetch(`${slow.baseUrl}/native/v1/videos/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
          return { status: response.status, text: await response.text() };
        }),
      );
      expect(polls.map((poll) => poll.status)).toEqual([202, 202]);
      expect(polls.map((poll) => poll.text === '').sort()).toEqual([false, true]);
    } finally {
      await slow.close();
    }
  });
});

describe('requests accepted, then failed by the rules the spec gives asynchronous codes', () => {
  const LATEST = 'svc-imagine-video-1.5';
  const CLASSIC = 'svc-imagine-video';
  const IMAGE = { url: 'https://images.example/a.png' };
  const SOURCE = { url: 'https://clips.example/a.mp4' };
  const rows: [string, 'generations' | 'edits' | 'extensions', Record<string, unknown>, string][] = [
    ['duration below 1 s', 'generations', { model: LATEST, prompt: 'a', duration: 0 }, 'invalid_argument'],
    ['duration over 15 s', 'generations', { model: LATEST, prompt: 'a', duration: 16 }, 'invalid_argument'],
    ['a prompt that is too long', 'generations', { model: LATEST, prompt: 'a'.repeat(4097) }, 'invalid_argument'],
    ['text-to-video without a prompt', 'generations', { model: LATEST }, 'invalid_argument'],
    ['the classic model with last_frame', 'generations', { model: CLASSIC, prompt: 'a', last_frame: IMAGE }, 'invalid_argument'],
    [
      'the classic model mixing image and reference images',
      'generations',
      { model: CLASSIC, prompt: 'a', image: IMAGE, reference_images: [IMAGE] },
      'invalid_argument',
    ],
    [
      'the classic model with reference audio',
      'generations',
      { model: CLASSIC, prompt: 'a', reference_audios: [{ voice_id: 'eve' }] },
      'failed_precondition',
    ],
    ['1080p on the classic model', 'generations', { model: CLASSIC, prompt: 'a', resolution: '1080p' }, 'failed_precondition'],
    [
      '1080p with a last frame',
      'generations',
      { model: LATEST, prompt: 'a', last_frame: IMAGE, resolution: '1080p' },
      'failed_precondition',
    ],
    [
      '1080p in reference-image mode',
      'generations',
      { model: LATEST, prompt: 'a', reference_images: [IMAGE], resolution: '1080p' },
      'failed_precondition',
    ],
    ['an edit by the classic model', 'edits', { model: CLASSIC, prompt: 'snow', video: SOURCE }, 'failed_precondition'],
    ['an extension by the classic model', 'extensions', { model: CLASSIC, prompt: 'on', video: SOURCE }, 'failed_precondition'],
    ['an extension by 1 s', 'extensions', { model: LATEST, prompt: 'on', video: SOURCE, duration: 1 }, 'invalid_argument'],
    ['an extension by 11 s', 'extensions', { model: LATEST, prompt: 'on', video: SOURCE, duration: 11 }, 'invalid_argument'],
    ['an edit with a prompt that is too long', 'edits', { model: LATEST, prompt: 'a'.repeat(4097), video: SOURCE }, 'invalid_argument'],
  ];
  const cases = (['compat', 'native'] as const).flatMap((layer) =>
    rows.map(([rule, operation, body, code]) => ({ layer, rule, operation, body, code })),
  );

  it.each(cases)('$layer: $rule fails with $code', async ({ layer, operation, body, code }) => {
    const prefix = layer === 'compat' ? '/v1' : '/native/v1';
    const submitted = await call('POST', `${prefix}/videos/${operation}`, body);
    expect(submitted.status).toBe(200);
    const id = (submitted.body as { task_id?: string; request_id?: string })[layer === 'compat' ? 'task_id' : 'request_id']!;
    const done = await waitUntilDone(layer, id);
    expect(done.body).toMatchObject({ status: 'failed', error: { code, message: expect.any(String) }, usage: { cost_in_usd_ticks: 0 } });
  });

  it('reads the compatibility alias seconds, while the native layer forwards it untouched', async () => {
    const compat = (await call('POST', '/v1/videos/generations', { model: LATEST, prompt: 'a', seconds: 20 })).body as { task_id: string };
    expect((await waitUntilDone('compat', compat.task_id)).body).toMatchObject({ status: 'failed', error: { code: 'invalid_argument' } });
    const native = (await call('POST', '/native/v1/videos/generations', { model: LATEST, prompt: 'a', seconds: 20 })).body as {
      request_id: string;
    };
    expect((await waitUntilDone('native', native.request_id)).body).toMatchObject({ status: 'done' });
  });
});

describe('quota', () => {
  it('charges at submission and refunds a failed task automatically', async () => {
    const before = emulator.quotaUsd(KEY);
    const { task_id: id } = (
      await call('POST', '/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'x [[fail:internal_error]]', duration: 4 })
    ).body as { task_id: string };
    expect(emulator.quotaUsd(KEY)).toBeLessThan(before);
    const failed = (await waitUntilDone('compat', id)).body as { status: string; error: { code: string } };
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'internal_error' } });
    expect(emulator.quotaUsd(KEY)).toBeCloseTo(before, 6);
  });

  it.each([
    ['a negative duration', '/v1/videos/generations', { duration: -1000 }],
    ['a negative seconds alias', '/v1/videos/generations', { seconds: -1000 }],
    ['a negative duration', '/native/v1/videos/generations', { duration: -1000 }],
    ['a negative extension', '/v1/videos/extensions', { duration: -1000, video: { url: 'https://clips.example/a.mp4' } }],
  ])('charges nothing for %s on %s, and never raises the quota', async (_label, path, extra) => {
    const key = 'pricing-key-0001';
    const before = emulator.quotaUsd(key);
    const answer = await call('POST', path, { model: 'svc-imagine-video-1.5', prompt: 'x', ...extra }, { key });
    expect(answer.status).toBe(200);
    expect(emulator.quotaUsd(key)).toBe(before);
    const layer = path.startsWith('/native/') ? 'native' : 'compat';
    const body = answer.body as { task_id?: string; request_id?: string };
    const done = await waitUntilDone(layer, (layer === 'native' ? body.request_id : body.task_id)!);
    expect(done.body).toMatchObject({ status: 'failed', error: { code: 'invalid_argument' }, usage: { cost_in_usd_ticks: 0 } });
    expect(emulator.quotaUsd(key)).toBe(before);
  });

  it('prices only valid requests: a duration far out of range fails the task, not the quota check', async () => {
    // At $0.05 a second this would cost $50,000 against a $1 quota, were it priced.
    const answer = await call(
      'POST',
      '/v1/videos/generations',
      { model: 'svc-imagine-video-1.5', prompt: 'x', duration: 1_000_000 },
      { key: 'pricing-key-0001' },
    );
    expect(answer.status).toBe(200);
    const done = await waitUntilDone('compat', (answer.body as { task_id: string }).task_id);
    expect(done.body).toMatchObject({ status: 'failed', error: { code: 'invalid_argument' }, usage: { cost_in_usd_ticks: 0 } });
  });

  it('refuses a video the remaining quota cannot pay for', async () => {
    const answer = await call(
      'POST',
      '/v1/videos/generations',
      { model: 'svc-imagine-video', prompt: 'x', duration: 15, resolution: '720p' },
      { key: 'classic-key-0001' },
    );
    expect(answer.status).toBe(429);
    expect(answer.body).toMatchObject({ error: { code: 'insufficient_quota' } });
    // A used-up quota does not come back by waiting.
    expect(answer.headers.get('retry-after')).toBeNull();
  });

  it.each(['/v1/videos/generations', '/native/v1/videos/generations'])(
    'sends no Retry-After with a triggered insufficient_quota (%s), but does with overloaded',
    async (path) => {
      const quota = await call('POST', path, { model: 'svc-imagine-video-1.5', prompt: `x [[http:429:insufficient_quota]] ${path}` });
      expect(quota.status).toBe(429);
      expect(quota.headers.get('retry-after')).toBeNull();
      const busy = await call('POST', path, { model: 'svc-imagine-video-1.5', prompt: `x [[http:503:overloaded]] ${path}` });
      expect(busy.status).toBe(503);
      expect(busy.headers.get('retry-after')).toBe('1');
    },
  );
});

describe("the provider's content moderation", () => {
  it.each([
    ['native', '/native/v1/videos/generations', 'imagine:content-moderated'],
    ['compat', '/v1/videos/generations', 'invalid_argument'],
  ] as const)(
    '[[moderate:prompt]] on the %s layer fails the task with %s, says it was moderation, and refunds it',
    async (layer, path, code) => {
      const before = emulator.quotaUsd(KEY);
      const answer = await call('POST', path, { model: 'svc-imagine-video-1.5', prompt: 'x [[moderate:prompt]]', duration: 4 });
      expect(emulator.quotaUsd(KEY)).toBeLessThan(before);
      const body = answer.body as { task_id?: string; request_id?: string };
      const failed = await waitUntilDone(layer, (layer === 'native' ? body.request_id : body.task_id)!);
      expect(failed.body).toMatchObject({
        status: 'failed',
        error: { code, message: 'The prompt was rejected by content moderation.' },
        usage: { cost_in_usd_ticks: 0 },
      });
      expect(emulator.quotaUsd(KEY)).toBeCloseTo(before, 6);
    },
  );

  it('[[moderate]] still makes the video and withholds it: done, respect_moderation false, no url', async () => {
    const { request_id: id } = (
      await call('POST', '/native/v1/videos/generations', { model: 'svc-imagine-video-1.5', prompt: 'x [[moderate]]', duration: 4 })
    ).body as { request_id: string };
    const done = (await waitUntilDone('native', id)).body;
    expect(done).toMatchObject({ status: 'done', video: { url: '', respect_moderation: false } });
  });
});

describe('padding the video to a size', () => {
  it('serves a valid mp4 of exactly the configured size', async () => {
    const padded = await startEmulator({ config: { timing: { generation_ms: 10 }, video: { bytes: 200_000 } } });
    try {
      const submit = await fetch(`${padded.baseUrl}/v1/videos/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-imagine-video-1.5', prompt: 'big' }),
      });
      const { task_id: id } = (await submit.json()) as { task_id: string };
      for (let status = ''; status !== 'succeeded';) {
        const poll = await fetch(`${padded.baseUrl}/v1/videos/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
        status = ((await poll.json()) as { status: string }).status;
      }
      const response = await fetch(`${padded.baseUrl}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${KEY}` } });
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes.length).toBe(200_000);
      expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
    } finally {
      await padded.close();
    }
  });
});
