import { createXai } from '@ai-sdk/xai';
import { APICallError, DownloadError, experimental_generateVideo as generateVideo } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { EMULATOR_KEY, VIDEO_MODEL } from './sdk-support.ts';

// The AI SDK (`ai`) with its xAI provider (@ai-sdk/xai) making a video on the emulator's native layer:
// the provider posts to `${baseURL}/videos/generations`, polls `${baseURL}/videos/{request_id}` (202 and
// an empty or `pending` body while running, `done` with `video.url` at the end) and the SDK downloads
// the url. Its default download refuses loopback and private addresses, so a local emulator's url is
// fetched through the SDK's own `download` hook.

let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({ config: { timing: { generation_ms: 100 } } });
});
afterAll(() => emulator.close());

function xaiVideo() {
  const xai = createXai({ apiKey: EMULATOR_KEY, baseURL: `${emulator.baseUrl}/native/v1` });
  return xai.video(VIDEO_MODEL);
}

/** The `download` hook for a local gateway: a plain fetch of the url the task gave. */
async function downloadLocal({
  url,
  abortSignal,
}: {
  url: URL;
  abortSignal?: AbortSignal;
}): Promise<{ data: Uint8Array; mediaType: string | undefined }> {
  const response = await fetch(url, { signal: abortSignal ?? null });
  if (!response.ok) throw new Error(`download of ${url.href} answered ${response.status}`);
  return { data: new Uint8Array(await response.arrayBuffer()), mediaType: response.headers.get('content-type') ?? undefined };
}

describe("the AI SDK's xAI video model on the native layer", () => {
  it('generates a video: submits, polls to done, downloads an mp4, and reports the cost', async () => {
    const prompt = 'a paper boat on a pond';
    const result = await generateVideo({
      model: xaiVideo(),
      prompt,
      duration: 2,
      aspectRatio: '16:9',
      providerOptions: { xai: { resolution: '720p', storageOptions: { filename: 'boat.mp4', expiresAfter: 3600, publicUrl: true } } },
      poll: { intervalMs: 20, timeoutMs: 5000 },
      download: downloadLocal,
      maxRetries: 0,
    });
    expect(result.video.mediaType).toBe('video/mp4');
    expect(Buffer.from(result.video.uint8Array.subarray(4, 8)).toString('latin1')).toBe('ftyp');
    expect(result.warnings).toEqual([]);
    const submission = emulator.requests.find((entry) => entry.method === 'POST' && entry.path === '/native/v1/videos/generations');
    expect(submission?.body).toEqual({
      model: VIDEO_MODEL,
      prompt,
      duration: 2,
      aspect_ratio: '16:9',
      resolution: '720p',
      storage_options: { filename: 'boat.mp4', expires_after: 3600, public_url: true },
    });
    // 2 s at 720p, $0.08 a second, in ticks of 1e-10 USD; the stored copy as the provider reads it.
    expect(result.providerMetadata.xai).toMatchObject({
      requestId: expect.stringMatching(/^req_/),
      videoUrl: expect.stringMatching(/\/files\/[0-9a-f]+\.mp4$/),
      duration: 2,
      costInUsdTicks: 1_600_000_000,
      fileOutput: {
        fileId: expect.stringMatching(/^file_/),
        filename: 'boat.mp4',
        expiresAt: expect.any(Number),
        publicUrl: expect.stringMatching(/\/stored\/file_[0-9a-f]+\.mp4$/),
      },
    });
  });

  it.each([
    ['edit-video', '/native/v1/videos/edits', {}],
    ['extend-video', '/native/v1/videos/extensions', { duration: 4 }],
  ] as const)('%s posts to %s and makes a video', async (mode, path, settings) => {
    const source = `${emulator.baseUrl}/files/0123456789abcdef.mp4`;
    const prompt = `${mode} of a source clip`;
    const result = await generateVideo({
      model: xaiVideo(),
      prompt,
      ...settings,
      providerOptions: { xai: { mode, videoUrl: source } },
      poll: { intervalMs: 20, timeoutMs: 5000 },
      download: downloadLocal,
      maxRetries: 0,
    });
    expect(Buffer.from(result.video.uint8Array.subarray(4, 8)).toString('latin1')).toBe('ftyp');
    const submission = emulator.requests.find((entry) => entry.method === 'POST' && entry.path === path);
    expect(submission?.body).toEqual({ model: VIDEO_MODEL, prompt, ...settings, video: { url: source } });
    // An extension is as long as the 2 s source and what it adds; an edit keeps the source's length.
    expect(result.providerMetadata.xai).toMatchObject({ duration: 2 + ('duration' in settings ? settings.duration : 0) });
  });

  it("a failed task rejects with the task's error message", async () => {
    await expect(
      generateVideo({
        model: xaiVideo(),
        prompt: 'a storm [[fail:internal_error]]',
        poll: { intervalMs: 20, timeoutMs: 5000 },
        download: downloadLocal,
        maxRetries: 0,
      }),
    ).rejects.toThrow('Video generation failed: The upstream provider failed the task (internal_error).');
  });

  it('a refused submission rejects with the status and the native body, code and message', async () => {
    const error: unknown = await generateVideo({
      model: xaiVideo(),
      prompt: 'a cat [[http:503:overloaded]]',
      poll: { intervalMs: 20 },
      download: downloadLocal,
      maxRetries: 0,
    }).catch((thrown: unknown) => thrown);
    if (!APICallError.isInstance(error)) throw new Error(`not an APICallError: ${String(error)}`);
    expect(error).toMatchObject({ statusCode: 503, isRetryable: true, data: { code: 'overloaded', error: expect.any(String) } });
    expect(error.message).toMatch(/^overloaded: \S/);
    expect(error.responseHeaders?.['x-request-id']).toMatch(/^req_/);
  });

  it("without the download hook, the SDK's default download refuses the emulator's loopback url", async () => {
    const refused = generateVideo({
      model: xaiVideo(),
      prompt: 'a kite',
      duration: 2,
      poll: { intervalMs: 20, timeoutMs: 5000 },
      maxRetries: 0,
    });
    await expect(refused).rejects.toBeInstanceOf(DownloadError);
    await expect(refused).rejects.toThrow('URL with IP address 127.0.0.1 is not allowed');
  });
});
