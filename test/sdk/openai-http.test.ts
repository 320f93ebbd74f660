import OpenAI, {
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { isRecord, readString } from '../../src/lib/json.ts';
import { pollUntil } from '../support/poll.ts';
import { EMULATOR_KEY, VIDEO_MODEL } from './sdk-support.ts';

// The openai SDK's generic HTTP calls (client.post, client.get) and its video download on the emulator's
// compatibility layer (/v1): a video is submitted, polled and downloaded, and every refusal arrives as the
// SDK's error class for its status with the envelope's code, param and type and the request id, as the
// SDK reads them from a real OpenAI-style API. The SDK's own retries are off, so that 429 and 5xx surface.

const CLASSIC_ONLY_KEY = 'classic-only-key';
let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({
    config: {
      keys: { [CLASSIC_ONLY_KEY]: { group: 'classic', quota_usd: 5 } },
      groups: { classic: { models: ['svc-imagine-video'] } },
      timing: { generation_ms: 100 },
    },
  });
});
afterAll(() => emulator.close());

function client(apiKey = EMULATOR_KEY): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${emulator.baseUrl}/v1`, maxRetries: 0 });
}

/** What the emulator answers is JSON the test did not write: read it with checks. */
function record(value: unknown): Readonly<Record<string, unknown>> {
  if (!isRecord(value)) throw new Error(`not a JSON object: ${JSON.stringify(value)}`);
  return value;
}

function submit(sdk: OpenAI, body: Record<string, unknown>) {
  return sdk.post<unknown>('/videos/generations', { body: { model: VIDEO_MODEL, duration: 2, ...body } });
}

function pollUntilTerminal(sdk: OpenAI, taskId: string): Promise<Readonly<Record<string, unknown>>> {
  return pollUntil({
    ask: async () => record(await sdk.get<unknown>(`/videos/${taskId}`)),
    found: (task) => (task.status === 'succeeded' || task.status === 'failed' ? task : undefined),
    intervalMs: 20,
    timeoutMs: 5000,
    timeoutError: (last) => new Error(`task ${taskId} still ${String(last?.status)}`),
  });
}

describe('the openai SDK on the compatibility layer', () => {
  it('submits a video, polls it to succeeded and downloads an mp4', async () => {
    const sdk = client();
    const { data, request_id: requestId } = await submit(sdk, { prompt: 'a lighthouse in fog' }).withResponse();
    const submitted = record(data);
    expect(submitted).toMatchObject({ task_id: expect.stringMatching(/^task_/), status: 'queued' });
    expect(requestId).toMatch(/^req_/);
    const taskId = readString(submitted, 'task_id') ?? '';

    const task = await pollUntilTerminal(sdk, taskId);
    expect(task).toMatchObject({
      task_id: taskId,
      status: 'succeeded',
      progress: 100,
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/files\//),
    });

    // The SDK's own download of /videos/{id}/content (it asks with Accept: application/binary).
    const response = await sdk.videos.downloadContent(taskId);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
  });

  it('a task that fails is read as failed with its error code', async () => {
    const sdk = client();
    const taskId = readString(record(await submit(sdk, { prompt: 'a storm [[fail:internal_error]]' })), 'task_id') ?? '';
    expect(await pollUntilTerminal(sdk, taskId)).toMatchObject({ status: 'failed', error: { code: 'internal_error' } });
  });
});

interface ErrorCase {
  what: string;
  call: () => Promise<unknown>;
  errorClass: abstract new (...args: never[]) => APIError;
  status: number;
  code: string;
  param: string | null;
}

const ERROR_CASES: ErrorCase[] = [
  {
    what: 'an invalid parameter',
    call: () => submit(client(), { prompt: 'a cat', aspect_ratio: '5:4' }),
    errorClass: BadRequestError,
    status: 400,
    code: 'invalid_request_error',
    param: 'aspect_ratio',
  },
  {
    what: 'a bad key',
    call: () => submit(client('not-a-key'), { prompt: 'a cat' }),
    errorClass: AuthenticationError,
    status: 401,
    code: 'invalid_api_key',
    param: null,
  },
  {
    what: "a model outside the key's group",
    call: () => submit(client(CLASSIC_ONLY_KEY), { prompt: 'a cat' }),
    errorClass: PermissionDeniedError,
    status: 403,
    code: 'permission_denied',
    param: 'model',
  },
  {
    what: 'an unknown model',
    call: () => submit(client(), { prompt: 'a cat', model: 'svc-imagine-video-9' }),
    errorClass: NotFoundError,
    status: 404,
    code: 'model_not_found',
    param: 'model',
  },
  {
    what: 'an unknown task',
    call: () => client().get('/videos/task_0123456789abcdef'),
    errorClass: NotFoundError,
    status: 404,
    code: 'not_found',
    param: null,
  },
  {
    what: 'a rate limit',
    call: () => submit(client(), { prompt: 'a cat [[http:429:rate_limit]]' }),
    errorClass: RateLimitError,
    status: 429,
    code: 'rate_limit',
    param: null,
  },
  {
    what: 'a spent quota',
    call: () => submit(client(), { prompt: 'a cat [[http:429:insufficient_quota]]' }),
    errorClass: RateLimitError,
    status: 429,
    code: 'insufficient_quota',
    param: null,
  },
  {
    what: 'a provider failure',
    call: () => submit(client(), { prompt: 'a cat [[http:500:upstream_error]]' }),
    errorClass: InternalServerError,
    status: 500,
    code: 'upstream_error',
    param: null,
  },
  {
    what: 'an overloaded gateway',
    call: () => submit(client(), { prompt: 'a cat [[http:503:overloaded]]' }),
    errorClass: InternalServerError,
    status: 503,
    code: 'overloaded',
    param: null,
  },
];

describe('HTTP errors as the openai SDK reports them', () => {
  it.each(ERROR_CASES)('$what: $status $code', async ({ call, errorClass, status, code, param }) => {
    const error: unknown = await call().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(errorClass);
    if (!(error instanceof APIError)) return;
    expect(error).toMatchObject({ status, code, param, type: 'gateway_api_error' });
    expect(error.message).toMatch(new RegExp(`^${status} \\S`));
    // The request id the SDK read is the one the emulator journaled for that answer.
    expect(error.requestID).toMatch(/^req_/);
    expect(emulator.requests.find((entry) => entry.requestId === error.requestID)).toMatchObject({ status });
  });
});
