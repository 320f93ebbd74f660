import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { isRecord } from '../../src/lib/json.ts';
import { startEmulatorProcess, type EmulatorProcess } from './emulator-process.ts';

// One emulator, in a process of its own, takes 5,000 malformed HTTP requests on every route of both
// layers and 500 malformed realtime messages. It must stay up, keep its heap bounded, and answer every
// HTTP request with an x-request-id and, for an error, a JSON body in the format of the request's layer
// (docs/gateway.md, "Error format per layer"). A request Node cannot parse has no path, so it is answered
// in the compatibility envelope; a websocket upgrade is refused in the native body ({ code, error, usage }).
//
// The inputs come from a seeded generator: FUZZ_SEED=<n> replays a run, and a failure names its seed
// and case.

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_125);
const HTTP_CASES = 5000;
const REALTIME_MESSAGES = 500;
const REALTIME_SESSIONS = 10;
const PARALLEL_CONNECTIONS = 8;
/**
 * How much the emulator's heap (after full collections) may grow over the whole run. What it keeps by
 * design, the journals' newest entries and bodies (8 MiB) and the sessions' bounded journals, measured
 * 4-7 MiB over seeds 1-5; keeping the request bodies parsed instead of as text took 52 MiB.
 */
const MAX_HEAP_GROWTH_BYTES = 32 * 1024 * 1024;
const KEY = 'emulator-key';
const MIB = 1024 * 1024;
/** The emulator's largest realtime message (README, "The gateway emulator"). */
const MAX_FRAME_BYTES = 16 * MIB;
const MESSAGE_TOO_BIG = 1009;

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
class Random {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(probability: number): boolean {
    return this.next() < probability;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }
  bytes(length: number): Buffer {
    return Buffer.from(Array.from({ length }, () => this.int(0, 255)));
  }
  text(length: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789-_'): string {
    return Array.from({ length }, () => alphabet[this.int(0, alphabet.length - 1)]).join('');
  }
}

type Layer = 'compat' | 'native';
/** The format an error answer must have: a layer's, or the native body of a refused websocket upgrade. */
type Expected = Layer | 'upgrade';

interface HttpCase {
  kind: string;
  bytes: Buffer;
  expected: Expected;
  /** End the client's side after sending: the request is incomplete on purpose. */
  halfClose: boolean;
  head: boolean;
}

const layerOf = (path: string): Layer => (path.startsWith('/native/') ? 'native' : 'compat');

const PRINTABLE_UNICODE = ['é', 'ß', '中文', '🎬', '\u202e', '\u200b', 'Ω'];
const UNICODE = [...PRINTABLE_UNICODE, '\u0000', '"', '\\', '\n'];
/** An address the emulator may really PUT to: a closed local port, refused at once (never a host elsewhere). */
const CLOSED_URL = 'http://127.0.0.1:9/x.mp4';
const JSON_ESCAPES = ['\\ud800', '\\udfff', '\\u0000', '\\u202e', '\\"', '\\\\'];

function junkValue(random: Random, depth = 0): unknown {
  switch (random.int(0, depth > 2 ? 8 : 11)) {
    case 0:
      return random.pick([0, -1, -0, 1e308, -1e308, 2 ** 53 + 1, 0.5, -2_147_483_649, 4_294_967_296, 1e21]);
    case 1:
      return random.pick([true, false, null]);
    case 2:
      return random.text(random.int(0, 40));
    case 3:
      return random.pick(UNICODE).repeat(random.int(1, 20));
    case 4:
      return random.text(random.int(5000, 20_000));
    case 5:
      return random.pick(['svc-imagine-video-1.5', 'svc-imagine-video', 'SVC-IMAGINE-VIDEO-1.5', 'svc-voice-latest', 'nope']);
    case 6:
      return random.pick(['480p', '720p', '1080p', '4k', '16:9', '1:1', 'eve', CLOSED_URL, 'data:image/png;base64,AAAA', 'ftp://x']);
    case 7:
      return random.int(-1_000_000, 1_000_000);
    case 8:
      return {};
    case 9:
      return Array.from({ length: random.int(0, 5) }, () => junkValue(random, depth + 1));
    case 10:
      return Object.fromEntries(Array.from({ length: random.int(0, 5) }, () => [random.pick(FIELDS), junkValue(random, depth + 1)]));
    default:
      return { url: junkValue(random, depth + 1), file_id: junkValue(random, depth + 1), voice_id: junkValue(random, depth + 1) };
  }
}

const FIELDS = [
  'model',
  'prompt',
  'duration',
  'seconds',
  'resolution',
  'size',
  'aspect_ratio',
  'image',
  'last_frame',
  'reference_images',
  'reference_audios',
  'storage_options',
  'output',
  'user',
  'video',
  'expires_after',
  'type',
  '__proto__',
  'constructor',
];

/** A JSON text that is malformed, of a wrong type, huge, nested, or merely odd. */
function junkBody(random: Random): string {
  const valid = { model: 'svc-imagine-video-1.5', prompt: 'a fox', duration: 4 };
  switch (random.int(0, 11)) {
    case 0:
      return random.pick(['{', '{"model":', '{"a":1,}', "{'a':1}", 'nul', '{"a":1}{"b":2}', '\u00ff\u00fe', '{"a":"\\x"}', '[1,2', 'NaN']);
    case 1:
      return JSON.stringify(random.pick([[], [valid], 'text', 42, null, true]));
    case 2:
      return JSON.stringify({ ...valid, [random.pick(FIELDS)]: junkValue(random) });
    case 3:
      return JSON.stringify(Object.fromEntries(FIELDS.filter(() => random.chance(0.5)).map((field) => [field, junkValue(random)])));
    case 4: {
      // Deeply nested.
      const depth = random.int(100, 20_000);
      return `{"model":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    }
    case 5:
      // Escapes a JSON parser takes but UTF-8 cannot hold (lone surrogates), and other oddities.
      return `{"model":"svc-imagine-video-1.5","prompt":"a ${Array.from({ length: random.int(1, 8) }, () => random.pick(JSON_ESCAPES)).join('')} b"}`;
    case 6:
      // Numbers past what a double holds, or written oddly.
      return `{"model":"svc-imagine-video-1.5","prompt":"x","duration":${random.pick(['1e400', '-1e400', '123456789012345678901234567890', '-0', '8.0', '0x10', '08', '1e-400'])}}`;
    case 7:
      // Nearly a megabyte: what a journal must not keep a thousand of.
      return JSON.stringify({ ...valid, prompt: random.text(64) + 'p'.repeat(MIB - 200) });
    case 8:
      return JSON.stringify({ model: 'svc-imagine-video-1.5', junk: Array.from({ length: random.int(10_000, 100_000) }, () => []) });
    case 9:
      return JSON.stringify({ ...valid, storage_options: junkValue(random), output: { upload_url: junkValue(random) } });
    case 10:
      return JSON.stringify({ expires_after: { seconds: junkValue(random) } });
    default:
      return '';
  }
}

function route(random: Random, ids: readonly string[]): { method: string; path: string } {
  const id = () =>
    random.pick([
      ...ids,
      random.text(random.int(1, 40)),
      '%E0%A4%A',
      '..%2f..',
      encodeURIComponent(random.pick(UNICODE)),
      'task_' + random.text(24, '0123456789abcdef'),
    ]);
  const layer = random.pick(['/v1', '/native/v1']);
  return random.pick([
    () => ({ method: 'POST', path: `${layer}/videos/${random.pick(['generations', 'edits', 'extensions'])}` }),
    () => ({ method: 'GET', path: `${layer}/videos/${id()}` }),
    () => ({ method: 'GET', path: `/v1/videos/${id()}/content` }),
    () => ({ method: 'GET', path: '/v1/models' }),
    () => ({ method: 'POST', path: '/native/v1/realtime/client_secrets' }),
    () => ({ method: 'GET', path: `/files/${random.text(32, '0123456789abcdef')}.mp4` }),
    () => ({ method: 'GET', path: `/stored/file_${random.text(20, '0123456789abcdef')}.mp4` }),
    () => ({ method: 'GET', path: `/native/v1/realtime?model=${random.pick(['svc-voice-latest', '', 'x'])}` }),
    () => ({
      method: 'GET',
      path: random.pick(['/', '/v1', '/native', '/native/v2/x', '/v2/videos', `/${random.text(random.int(1, 2000))}`]),
    }),
  ])();
}

function request(lines: string[], body: Buffer | string = ''): Buffer {
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')]);
}

/** A request the HTTP parser accepts, answered in the layer of its path. */
function parsedCase(random: Random, ids: readonly string[]): HttpCase {
  const { method: routeMethod, path } = route(random, ids);
  const method = random.chance(0.15)
    ? random.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'QUERY', 'PURGE'])
    : routeMethod;
  const body = method === 'GET' && random.chance(0.8) ? '' : junkBody(random);
  const headers = [`Host: ${random.pick(['emulator', '127.0.0.1', random.text(200)])}`, 'Connection: close'];
  const auth = random.int(0, 9);
  if (auth < 7) headers.push(`Authorization: Bearer ${KEY}`);
  else if (auth === 7)
    headers.push(
      random.pick([
        'Authorization: Bearer  emulator-key',
        'Authorization: bearer emulator-key',
        `Authorization: Bearer ${random.text(30)}`,
        'Authorization: ',
      ]),
    );
  else if (auth === 8) headers.push(`Authorization: Bearer ${KEY}`, `Authorization: Bearer ${KEY}`);
  if (random.chance(0.3))
    headers.push(`Content-Type: ${random.pick(['application/json', 'text/plain', 'application/json; charset=latin1', random.text(50)])}`);
  if (random.chance(0.1))
    headers.push(...Array.from({ length: random.int(1, 200) }, (_unused, index) => `X-Junk-${index}: ${random.text(random.int(0, 30))}`));
  if (random.chance(0.05)) headers.push(`X-Unicode: ${random.pick(PRINTABLE_UNICODE)}`);
  if (random.chance(0.05)) headers.push('Expect: 100-continue');
  let version = 'HTTP/1.1';
  const shape = random.int(0, 19);
  if (shape === 0) headers.shift(); // no Host: 400 on HTTP/1.1
  if (shape === 1) version = 'HTTP/1.0';
  if (shape === 2) headers.push(`Expect: ${random.text(8)}`);
  const line = `${method} ${path} ${version}`;
  const bodyBytes = Buffer.from(body, 'utf8');
  if (shape === 3 && bodyBytes.length > 0) {
    // A body cut short: the client stops sending mid-body.
    return {
      kind: 'body cut short',
      bytes: request([line, ...headers, `Content-Length: ${bodyBytes.length + 10}`], bodyBytes),
      expected: layerOf(path),
      halfClose: true,
      head: method === 'HEAD',
    };
  }
  if (shape === 4) {
    // A chunked body: whole, broken, or left unfinished (the client then stops sending).
    const [chunks, unfinished] = random.pick<[string, boolean]>([
      [`${bodyBytes.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`, false],
      [`1;ext=${'e'.repeat(100)}\r\nx\r\n0\r\n\r\n`, false],
      ['zz\r\n', false],
      ['-1\r\n', false],
      [`5\r\n${body}\r\n`, true],
    ]);
    return {
      kind: 'chunked body',
      bytes: request([line, ...headers, 'Transfer-Encoding: chunked'], chunks),
      expected: layerOf(path),
      halfClose: unfinished,
      head: method === 'HEAD',
    };
  }
  return {
    kind: `${method} with junk`,
    bytes: request([line, ...headers, `Content-Length: ${bodyBytes.length}`], bodyBytes),
    expected: layerOf(path),
    halfClose: false,
    head: method === 'HEAD',
  };
}

/** Bytes the HTTP parser refuses before any request exists: answered in the compatibility envelope. */
function unparsableCase(random: Random, ids: readonly string[]): HttpCase {
  const { method, path } = route(random, ids);
  const host = 'Host: emulator';
  const broken: (() => Buffer)[] = [
    () => Buffer.concat([Buffer.from(random.pick(['X', '\u0000', '{', '%', '\u00ff'])), random.bytes(random.int(0, 2000))]),
    () => request([`${method.toLowerCase()} ${path} HTTP/1.1`, host]),
    () => request([`${random.pick(['BREW', 'G-ET', 'GETT', 'FOO'])} ${path} HTTP/1.1`, host]),
    () => request([`${method} ${path} HTTP/${random.pick(['x.y', '1.9', '3', '1.1 junk'])}`, host]),
    () => request([`${method} ${path}${random.pick([' x', '\t', '\u0001', 'é'])}y HTTP/1.1`, host]),
    () => request([`${method} ${path === '/' ? 'x' : path.slice(1)} HTTP/1.1`, host]),
    () => Buffer.from(`${method} ${path} HTTP/1.1\n${host}\n\n`),
    () => request([`${method} ${path} HTTP/1.1`, host, random.pick(['Bad Header', 'X-A : b', 'X(A): b', 'X-A: b\u0001c', ' folded'])]),
    () => request([`${method} ${path} HTTP/1.1`, host, `Content-Length: ${random.pick(['-1', 'abc', '99999999999999999999999'])}`]),
    () => request([`${method} ${path} HTTP/1.1`, host, 'Content-Length: 2', 'Content-Length: 2'], '{}'),
    () => request([`${method} ${path} HTTP/1.1`, host, 'Content-Length: 2', 'Transfer-Encoding: chunked'], '{}'),
    () => request([`${method} ${path} HTTP/1.1`, host, `X-Huge: ${'h'.repeat(random.int(17_000, 64_000))}`]),
    () =>
      request([`${method} ${path} HTTP/1.1`, host, ...Array.from({ length: 2000 }, (_unused, index) => `X-${index}: ${random.text(10)}`)]),
    () => request(['PRI * HTTP/2.0', ''], 'SM\r\n\r\n'),
    () => Buffer.from(`${method} ${path} HTTP/1.1\r\n${host}\r\nAuthoriz`),
  ];
  return { kind: 'unparsable', bytes: random.pick(broken)(), expected: 'compat', halfClose: true, head: false };
}

/** Websocket upgrades that cannot succeed (bad handshake, wrong path or key), and CONNECT. */
function upgradeCase(random: Random): HttpCase {
  if (random.chance(0.2)) {
    const target = random.pick(['example.com:443', '127.0.0.1:22', '/v1/models', '/native/v1/videos/x']);
    return {
      kind: 'CONNECT',
      bytes: request([`CONNECT ${target} HTTP/1.1`, `Host: ${target}`]),
      expected: layerOf(target),
      halfClose: false,
      head: false,
    };
  }
  const path = random.pick([
    '/native/v1/realtime?model=svc-voice-latest',
    '/native/v1/realtime',
    '/native/v1/realtime?model=nope',
    '/v1/realtime?model=svc-voice-latest',
    '/',
    '//[',
  ]);
  const headers = [
    `${random.pick(['GET', 'GET', 'POST', 'PUT'])} ${path} HTTP/1.1`,
    'Host: emulator',
    'Connection: Upgrade',
    `Upgrade: ${random.pick(['websocket', 'WebSocket', 'h2c', random.text(5)])}`,
  ];
  if (random.chance(0.5))
    headers.push(
      random.pick([
        `Authorization: Bearer ${KEY}`,
        'Authorization: Bearer nope-nope',
        `Sec-WebSocket-Protocol: svc-client-secret.${random.text(10)}`,
        'Sec-WebSocket-Protocol: compat-insecure-api-key.nope',
      ]),
    );
  // Never a valid key: every one of these handshakes must be refused.
  headers.push(random.pick(['Sec-WebSocket-Key: short', 'Sec-WebSocket-Key: ', `Sec-WebSocket-Key: ${random.text(30)}`]));
  if (random.chance(0.7)) headers.push(`Sec-WebSocket-Version: ${random.pick(['13', '8', '99', 'x'])}`);
  return { kind: 'upgrade', bytes: request(headers), expected: 'upgrade', halfClose: false, head: false };
}

function httpCase(random: Random, ids: readonly string[]): HttpCase {
  const roll = random.next();
  if (roll < 0.6) return parsedCase(random, ids);
  if (roll < 0.9) return unparsableCase(random, ids);
  return upgradeCase(random);
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Reads the first final answer (after any 100 Continue) from what the server sent. */
function parseAnswer(data: Buffer): RawAnswer | undefined {
  let rest = data;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine = '', ...lines] = rest.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(statusLine)?.[1]);
    if (!Number.isInteger(status)) return undefined;
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    rest = rest.subarray(end + 4);
    if (status >= 200) {
      const length = Number(headers['content-length'] ?? rest.length);
      return { status, headers, body: rest.subarray(0, length) };
    }
  }
}

const EXCHANGE_TIMEOUT_MS = 15_000;

async function exchange(port: number, testCase: HttpCase): Promise<RawAnswer | string> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  let failure: string | undefined;
  socket.on('error', (error: NodeJS.ErrnoException) => (failure ??= error.code ?? error.message));
  const timer = setTimeout(() => {
    failure ??= `no answer within ${EXCHANGE_TIMEOUT_MS} ms`;
    socket.destroy();
  }, EXCHANGE_TIMEOUT_MS);
  socket.write(testCase.bytes);
  if (testCase.halfClose) socket.end();
  // Not once(): it would reject on the socket's 'error', and a reset after the answer is no failure.
  await new Promise((resolve) => socket.once('close', resolve));
  clearTimeout(timer);
  return parseAnswer(Buffer.concat(chunks)) ?? `no answer (${failure ?? 'the connection closed'})`;
}

/** What is wrong with an answer, or undefined. */
function problemWith(testCase: HttpCase, answer: RawAnswer): string | undefined {
  if (!/^req_[0-9a-f]{20}$/.test(answer.headers['x-request-id'] ?? '')) return `no x-request-id (status ${answer.status})`;
  if (answer.status === 500) return 'a 500: the emulator failed on this input';
  if (testCase.head || (answer.status < 400 && answer.headers['content-type'] === 'video/mp4')) return undefined;
  if (answer.status < 400 && answer.body.length === 0) return answer.status === 202 ? undefined : `status ${answer.status} without a body`;
  if (answer.headers['content-type'] !== 'application/json')
    return `content-type ${answer.headers['content-type']} (status ${answer.status})`;
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return `a body that is not JSON (status ${answer.status})`;
  }
  if (answer.status < 400) return isRecord(body) ? undefined : `a ${answer.status} whose body is not an object`;
  const format = testCase.expected;
  const ok =
    format === 'compat'
      ? isRecord(body) &&
        isRecord(body.error) &&
        typeof body.error.message === 'string' &&
        typeof body.error.type === 'string' &&
        typeof body.error.code === 'string' &&
        (body.error.param === null || typeof body.error.param === 'string')
      : isRecord(body) && typeof body.code === 'string' && typeof body.error === 'string' && isRecord(body.usage);
  return ok ? undefined : `status ${answer.status}: not the ${format} error format: ${answer.body.toString('utf8').slice(0, 200)}`;
}

let emulator: EmulatorProcess;
beforeAll(async () => {
  emulator = await startEmulatorProcess();
});
afterAll(() => emulator.stop());

async function validSubmission(): Promise<string> {
  const response = await fetch(`${emulator.baseUrl}/v1/videos/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'svc-imagine-video-1.5', prompt: 'a valid request', duration: 1 }),
  });
  const body: unknown = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return isRecord(body) && typeof body.task_id === 'string' ? body.task_id : '';
}

interface RealtimeConnection {
  socket: WebSocket;
  events: Record<string, unknown>[];
  closed: Promise<number>;
}

async function openRealtime(): Promise<RealtimeConnection> {
  const socket = new WebSocket(`${emulator.wsUrl}/native/v1/realtime?model=svc-voice-latest`, {
    headers: { Authorization: `Bearer ${KEY}` },
  });
  const events: Record<string, unknown>[] = [];
  socket.on('message', (data: Buffer) => {
    const event: unknown = JSON.parse(data.toString('utf8'));
    if (isRecord(event)) events.push(event);
  });
  socket.on('error', () => {
    // The close code is what the test checks.
  });
  const closed = once(socket, 'close').then(([code]) => Number(code));
  await once(socket, 'open');
  return { socket, events, closed };
}

const CLIENT_EVENTS = [
  'session.update',
  'input_audio_buffer.append',
  'input_audio_buffer.commit',
  'input_audio_buffer.clear',
  'conversation.item.create',
  'conversation.item.delete',
  'conversation.item.truncate',
  'response.create',
  'response.cancel',
  'conversation.item.retrieve',
];

/** One malformed realtime message: text, or bytes sent as a binary frame. */
function realtimeMessage(random: Random): { data: string | Buffer; oversized: boolean } {
  const event = (fields: Record<string, unknown>) => JSON.stringify(fields);
  switch (random.int(0, 11)) {
    case 0:
      return { data: random.pick(['{', 'not json', '{"type":', '', '\u0000', '[]]', random.text(100)]), oversized: false };
    case 1:
      return { data: event({ type: junkValue(random) }), oversized: false };
    case 2:
      return { data: JSON.stringify(random.pick([[], 42, 'session.update', null, [{ type: 'session.update' }]])), oversized: false };
    case 3:
      return {
        data: event({ type: random.pick([random.text(random.int(1, 30)), 'response.create.', 'Session.Update', random.pick(UNICODE)]) }),
        oversized: false,
      };
    case 4:
      return {
        data: event({
          type: random.pick(CLIENT_EVENTS),
          event_id: junkValue(random),
          [random.pick(['session', 'item', 'audio', 'item_id', 'audio_end_ms', 'content_index'])]: junkValue(random),
        }),
        oversized: false,
      };
    case 5: {
      const session = Object.fromEntries(
        ['voice', 'instructions', 'turn_detection', 'audio', 'tools']
          .filter(() => random.chance(0.5))
          .map((field) => [field, junkValue(random)]),
      );
      const rates = {
        audio: {
          input: {
            format: {
              type: random.pick(['audio/pcm', 'audio/pcmu', 'x']),
              rate: random.pick([8000, 7999, 48_001, -1, 1e308, '24000', 24_000.5]),
            },
          },
        },
      };
      return {
        data: event({ type: 'session.update', session: random.chance(0.5) ? session : { ...session, ...rates } }),
        oversized: false,
      };
    }
    case 6: {
      const audio = random.pick([
        () => random.text(random.int(1, 400), 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=*-_ '),
        () => random.bytes(random.int(1, 3001)).toString('base64'),
        () => random.bytes(random.int(1, 3001)).toString('base64').replace(/=+$/, ''),
        () => 'A'.repeat(random.int(1, 4) * 1024 * 1024),
      ])();
      return { data: event({ type: 'input_audio_buffer.append', audio }), oversized: false };
    }
    case 7:
      return { data: random.bytes(random.int(1, 5000)), oversized: false };
    case 8: {
      const content = random.pick([
        junkValue(random),
        [{ type: 'output_text', text: 'x'.repeat(random.int(1, 10_000)) }],
        [{ type: 'output_text', text: junkValue(random) }],
      ]);
      return {
        data: event({
          type: 'conversation.item.create',
          item: {
            type: random.pick(['force_message', 'message', 'function_call_output', 7]),
            role: random.pick(['assistant', 'user', 3]),
            interruptible: junkValue(random),
            content,
          },
        }),
        oversized: false,
      };
    }
    case 9:
      return {
        data: event({
          type: 'conversation.item.truncate',
          item_id: junkValue(random),
          content_index: junkValue(random),
          audio_end_ms: random.pick([-1, 1e308, 0.5, 'x', null]),
        }),
        oversized: false,
      };
    case 10:
      return { data: event({ type: 'input_audio_buffer.commit' }), oversized: false };
    default:
      return random.chance(0.1)
        ? { data: event({ type: 'input_audio_buffer.append', audio: 'A'.repeat(MAX_FRAME_BYTES) }), oversized: true }
        : { data: event({ type: 'response.cancel' }), oversized: false };
  }
}

/** What is wrong with the events a session sent, or undefined. */
function eventProblem(events: readonly Record<string, unknown>[]): string | undefined {
  for (const event of events) {
    if (event.type !== 'error') continue;
    const error = event.error;
    if (!isRecord(error) || typeof error.type !== 'string' || typeof error.code !== 'string' || typeof error.message !== 'string') {
      return `an error event not in the common shape: ${JSON.stringify(event).slice(0, 200)}`;
    }
    if (error.code === 'server_error') return `the emulator failed on an event: ${JSON.stringify(event).slice(0, 200)}`;
  }
  return undefined;
}

describe(`the emulator under hostile input (seed ${SEED})`, () => {
  it("answers 5,000 malformed HTTP requests and 500 malformed realtime messages in the spec's formats, stays up, and keeps its heap bounded", async () => {
    const random = new Random(SEED);
    // Warm up: the code paths, caches and pools a first run fills are not growth.
    const ids = [await validSubmission(), await validSubmission()];
    for (let index = 0; index < 200; index++) await exchange(emulator.port, httpCase(new Random(SEED + 1 + index), ids));
    const warm = await openRealtime();
    warm.socket.send(JSON.stringify({ type: 'session.update', session: { turn_detection: null } }));
    warm.socket.close();
    await warm.closed;
    const heapBefore = await emulator.heapUsed();

    const cases = Array.from({ length: HTTP_CASES }, () => httpCase(random, ids));
    const failures: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL_CONNECTIONS }, async () => {
        while (next < cases.length) {
          const index = next++;
          const testCase = cases[index]!;
          const answer = await exchange(emulator.port, testCase);
          const problem = typeof answer === 'string' ? answer : problemWith(testCase, answer);
          if (problem)
            failures.push(
              `case ${index} (${testCase.kind}, seed ${SEED}): ${problem}; sent ${JSON.stringify(testCase.bytes.subarray(0, 160).toString('latin1'))}`,
            );
        }
      }),
    );

    let sent = 0;
    for (let session = 0; session < REALTIME_SESSIONS; session++) {
      let connection = await openRealtime();
      const configure = () =>
        connection.socket.send(
          JSON.stringify({
            type: 'session.update',
            session: {
              turn_detection: random.pick([null, { type: 'server_vad' }]),
              audio: { input: { format: { type: 'audio/pcm', rate: random.pick([8000, 24_000, 48_000]) } } },
            },
          }),
        );
      configure();
      for (let count = 0; count < REALTIME_MESSAGES / REALTIME_SESSIONS; count++, sent++) {
        const { data, oversized } = realtimeMessage(random);
        connection.socket.send(data);
        if (!oversized) continue;
        const code = await connection.closed;
        if (code !== MESSAGE_TOO_BIG)
          failures.push(`realtime message ${sent} (seed ${SEED}): an oversized frame closed the connection with ${code}`);
        const problem = eventProblem(connection.events);
        if (problem) failures.push(`realtime session ${session} (seed ${SEED}): ${problem}`);
        connection = await openRealtime();
        configure();
      }
      // A last event that is answered, so that every event before it was handled while the session was open.
      connection.socket.send(JSON.stringify({ type: 'fuzz.last', event_id: 'last' }));
      for (;;) {
        if (connection.events.some((event) => isRecord(event.error) && event.error.event_id === 'last')) break;
        const code = await Promise.race([once(connection.socket, 'message').then(() => undefined), connection.closed]);
        if (code !== undefined) {
          failures.push(`realtime session ${session} (seed ${SEED}): closed with ${code} before the last event was answered`);
          break;
        }
      }
      const problem = eventProblem(connection.events);
      if (problem) failures.push(`realtime session ${session} (seed ${SEED}): ${problem}`);
      connection.socket.close();
      await connection.closed;
    }

    expect(failures.slice(0, 20)).toEqual([]);
    expect(emulator.exited(), emulator.stderr()).toBeUndefined();
    await validSubmission();
    const heapAfter = await emulator.heapUsed();
    const growth = heapAfter - heapBefore;
    expect(growth, `heap ${Math.round(heapBefore / MIB)} MiB before, ${Math.round(heapAfter / MIB)} MiB after`).toBeLessThan(
      MAX_HEAP_GROWTH_BYTES,
    );
  }, 120_000);
});
