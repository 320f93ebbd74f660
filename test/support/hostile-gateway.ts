import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { buffer } from 'node:stream/consumers';
import { isRecord, readRecord, readString } from '../../src/lib/json.ts';

// A gateway that misbehaves the way operators meet it: a proxy in front of a real gateway (the emulator)
// that answers a task's polls with the faults a test scripts for it, one fault a poll, then lets the real
// answers through. It can also be pointed at another upstream (a gateway that restarted and lost its tasks).

export type Fault =
  /** 404 for a task the gateway made: it restarted and lost it. */
  | 'forget'
  /** 200 with a body that is not JSON. */
  | 'malformed'
  /** 200 with fields of the wrong types. */
  | 'wrong-types'
  /** 200 with a 50 MB body. */
  | 'huge'
  /** The real answer, a byte every 100 ms. */
  | 'drip'
  /** 503 overloaded. */
  | 'overloaded'
  /** The real answer, with the native video.url pointing at a redirect to a link-local (metadata) address. */
  | 'redirect-internal';

const HUGE_BYTES = 50 * 1024 * 1024;
const DRIP_INTERVAL_MS = 100;
/** Where a cloud's metadata service answers: what a server-side request forgery goes after. */
export const METADATA_URL = 'http://169.254.169.254/latest/meta-data/';

export interface HostileGateway {
  readonly baseUrl: string;
  /** What each submission (in order) gets as faults for its polls; tasks past the list get none. */
  script(faults: Fault[][]): void;
  /** Sends everything to another gateway from now on (one that does not know the earlier tasks). */
  pointAt(upstream: string): void;
  /**
   * Forwards the next submission of `prompt` and keeps the gateway's answer from the bot (the connection
   * hangs until the bot gives up or dies, or `releaseAnswers()`): resolves once the gateway has answered
   * it, with that status.
   */
  withholdAnswer(prompt: string): Promise<number>;
  /** Lets the answers withheld so far through to the bot, on connections it still holds open. */
  releaseAnswers(): void;
  /** Polls answered with each fault so far. */
  readonly served: Map<Fault, number>;
  close(): Promise<void>;
}

const QUERY = /^\/(?:v1|native\/v1)\/videos\/([^/]+)$/;
const SUBMIT = /^\/(?:v1|native\/v1)\/videos\/(?:generations|edits|extensions)$/;

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_hostile' }).end(JSON.stringify(body));
}

/**
 * What points a bot at `gateway` in front of `upstream` (the emulator): the proxy's videos are the
 * emulator's, served on the emulator's own port of the same host, so that port is allowed to be fetched.
 */
export function behindGateway(gateway: HostileGateway, upstream: { baseUrl: string }): Record<string, string> {
  return { GATEWAY_BASE_URL: gateway.baseUrl, DOWNLOAD_ALLOWED_HOSTS: `127.0.0.1:${new URL(upstream.baseUrl).port}` };
}

export async function startHostileGateway(upstream: string): Promise<HostileGateway> {
  let target = upstream;
  let scripted: Fault[][] = [];
  let submissions = 0;
  const pending = new Map<string, Fault[]>();
  /** Tasks a 'forget' lost: a gateway that lost a task answers 404 for it from then on, not once. */
  const forgotten = new Set<string>();
  const served = new Map<Fault, number>();
  /** Submissions whose answer is withheld, by prompt, with who waits for the gateway's answer. */
  const withheld = new Map<string, (status: number) => void>();
  /** Answers withheld from the bot, each waiting to be let through. */
  let held: (() => void)[] = [];
  let baseUrl = '';

  /** The upstream's answer, whole. */
  async function forward(
    request: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const url = new URL(request.url ?? '/', target);
    const upstreamRequest = httpRequest(url, { method: request.method, headers: { ...request.headers, host: url.host } });
    upstreamRequest.end(body);
    const [answer] = (await once(upstreamRequest, 'response')) as [IncomingMessage];
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(answer.headers)) if (typeof value === 'string') headers[name] = value;
    return { status: answer.statusCode ?? 502, headers, body: await buffer(answer) };
  }

  async function serveFault(fault: Fault, taskId: string, request: IncomingMessage, body: Buffer, response: ServerResponse): Promise<void> {
    served.set(fault, (served.get(fault) ?? 0) + 1);
    switch (fault) {
      case 'forget':
        forgotten.add(taskId);
        return json(response, 404, { error: { message: 'No deferred video', type: 'gateway_api_error', param: null, code: 'not_found' } });
      case 'malformed':
        response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_hostile' }).end('{"status": "done", "video": {');
        return;
      case 'wrong-types':
        return json(response, 200, { status: 42, progress: 'lots', video: 'not an object', task_id: ['x'] });
      case 'huge':
        response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_hostile', 'content-length': HUGE_BYTES });
        response.end(Buffer.alloc(HUGE_BYTES, 0x20));
        return;
      case 'overloaded':
        return json(response, 503, { error: { message: 'busy', type: 'gateway_api_error', param: null, code: 'overloaded' } });
      case 'drip': {
        const real = await forward(request, body);
        response.writeHead(real.status, { ...real.headers, 'content-length': String(real.body.length) });
        for (const byte of real.body) {
          if (response.destroyed) return;
          response.write(Buffer.of(byte));
          await new Promise((resolve) => setTimeout(resolve, DRIP_INTERVAL_MS));
        }
        response.end();
        return;
      }
      case 'redirect-internal': {
        const real = await forward(request, body);
        const parsed: unknown = JSON.parse(real.body.toString('utf8'));
        if (isRecord(parsed) && readString(readRecord(parsed, 'video'), 'url') !== undefined) {
          return json(response, real.status, {
            ...parsed,
            video: { ...readRecord(parsed, 'video'), url: `${baseUrl}/redirect-to-metadata/video.mp4` },
          });
        }
        // Not done yet: the fault waits for the answer that names the video.
        pending.get(taskId)?.unshift('redirect-internal');
        return json(response, real.status, parsed);
      }
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await buffer(request);
    const path = new URL(request.url ?? '/', 'http://hostile').pathname;
    if (path.startsWith('/redirect-to-metadata/')) {
      response.writeHead(302, { location: METADATA_URL, 'x-request-id': 'req_hostile' }).end();
      return;
    }
    const query = request.method === 'GET' ? QUERY.exec(path) : null;
    const queried = query ? decodeURIComponent(query[1] ?? '') : undefined;
    const fault = queried === undefined ? undefined : forgotten.has(queried) ? 'forget' : pending.get(queried)?.shift();
    if (queried !== undefined && fault) return serveFault(fault, queried, request, body, response);
    const answer = await forward(request, body);
    const prompt = request.method === 'POST' && SUBMIT.test(path) ? readString(JSON.parse(body.toString('utf8')), 'prompt') : undefined;
    const withholding = prompt === undefined ? undefined : withheld.get(prompt);
    if (prompt !== undefined && withholding) {
      withheld.delete(prompt);
      held.push(() => {
        if (!response.destroyed) response.writeHead(answer.status, answer.headers).end(answer.body);
      });
      withholding(answer.status);
      return;
    }
    if (request.method === 'POST' && SUBMIT.test(path) && answer.status === 200) {
      const parsed: unknown = JSON.parse(answer.body.toString('utf8'));
      const id = readString(parsed, 'task_id') ?? readString(parsed, 'request_id');
      const faults = scripted[submissions++];
      if (id !== undefined && faults) pending.set(id, [...faults]);
    }
    response.writeHead(answer.status, answer.headers).end(answer.body);
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent)
        json(response, 502, { error: { message: String(error), type: 'gateway_api_error', param: null, code: 'upstream_error' } });
      else response.destroy();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  baseUrl = `http://127.0.0.1:${address.port}`;

  return {
    baseUrl,
    served,
    script(faults) {
      scripted = faults;
      submissions = 0;
    },
    pointAt(next) {
      target = next;
    },
    withholdAnswer(prompt) {
      return new Promise((resolve) => withheld.set(prompt, resolve));
    },
    releaseAnswers() {
      const releasing = held;
      held = [];
      for (const release of releasing) release();
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
