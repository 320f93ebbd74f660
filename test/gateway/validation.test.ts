import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/gateway/errors.ts';
import type { EditRequest, ExtensionRequest, GenerationRequest } from '../../src/gateway/types.ts';
import { validateEdit, validateExtension, validateGeneration } from '../../src/gateway/validation.ts';
import type { Layer } from '../../src/gateway/spec.ts';

const LATEST = 'svc-imagine-video-1.5';
const CLASSIC = 'svc-imagine-video';
const IMAGE = { url: 'https://example.com/cat.png' };
const DATA_IMAGE = { url: 'data:image/png;base64,iVBORw0KGgo=' };
const MP4 = { url: 'https://cdn.example.com/attachments/1/2/clip.mp4?ex=65&is=66&hm=abc' };

/** A request as JSON from anywhere may write it, wrong types included (what the types alone would refuse). */
function asWritten(value: object): GenerationRequest {
  const request: GenerationRequest = JSON.parse(JSON.stringify(value));
  return request;
}

interface Row {
  rule: string;
  request: GenerationRequest;
  layer?: Layer;
  vendor?: string;
  /** The field the error names; undefined when the request is accepted. */
  field?: string;
  message?: RegExp;
}

function outcome(run: () => void): { field: string | undefined; message: string | undefined } {
  try {
    run();
    return { field: undefined, message: undefined };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { field: error.field, message: error.message };
  }
}

const generationRows: Row[] = [
  // model family
  { rule: 'text-to-video on 1.5', request: { model: LATEST, prompt: 'a cat' } },
  { rule: 'text-to-video on classic', request: { model: CLASSIC, prompt: 'a cat' } },
  {
    rule: 'model must be a video model',
    request: { model: 'svc-voice-latest', prompt: 'a cat' },
    field: 'model',
    message: /svc-imagine-video-1\.5 or svc-imagine-video/,
  },
  {
    rule: 'a tagged 1.5 release has the 1.5 capabilities',
    request: { model: 'svc-imagine-video-1.5-preview', prompt: 'a', last_frame: IMAGE, reference_audios: [{ voice_id: 'eve' }] },
  },
  {
    rule: 'a newer major version has the modern capabilities',
    request: { model: 'svc-imagine-video-2', prompt: 'a', resolution: '1080p' },
  },
  {
    rule: 'a tagged classic release is still classic',
    request: { model: 'svc-imagine-video-preview', last_frame: IMAGE },
    field: 'last_frame',
  },
  { rule: 'another vendor word is a different model', request: { model: 'acme-imagine-video-1.5', prompt: 'a cat' }, field: 'model' },
  {
    rule: 'configurable vendor accepts its models',
    vendor: 'acme',
    request: { model: 'acme-imagine-video-1.5', prompt: 'a cat', resolution: '1080p' },
  },
  {
    rule: 'configurable vendor names its models in messages',
    vendor: 'acme',
    request: { model: 'acme-imagine-video', prompt: 'a', resolution: '1080p' },
    field: 'resolution',
    message: /1080p needs acme-imagine-video-1\.5/,
  },
  // prompt
  { rule: 'prompt required for text-to-video', request: { model: LATEST }, field: 'prompt', message: /required for text-to-video/ },
  { rule: 'blank prompt counts as missing', request: { model: LATEST, prompt: '   ' }, field: 'prompt' },
  { rule: 'image alone needs no prompt', request: { model: LATEST, image: IMAGE } },
  { rule: 'last_frame alone needs no prompt', request: { model: LATEST, last_frame: IMAGE } },
  { rule: 'reference images alone need no prompt', request: { model: LATEST, reference_images: [IMAGE] } },
  { rule: 'reference audio alone needs no prompt', request: { model: LATEST, reference_audios: [{ voice_id: 'eve' }] } },
  // durations
  { rule: 'duration 1 is the minimum', request: { model: LATEST, prompt: 'a', duration: 1 } },
  { rule: 'duration 15 is the maximum', request: { model: LATEST, prompt: 'a', duration: 15 } },
  { rule: 'duration 0 is refused', request: { model: LATEST, prompt: 'a', duration: 0 }, field: 'duration', message: /from 1 to 15/ },
  { rule: 'duration 16 is refused', request: { model: LATEST, prompt: 'a', duration: 16 }, field: 'duration' },
  { rule: 'fractional duration is refused', request: { model: LATEST, prompt: 'a', duration: 2.5 }, field: 'duration' },
  // resolutions
  { rule: '480p and 720p on classic', request: { model: CLASSIC, prompt: 'a', resolution: '720p' } },
  {
    rule: 'unknown resolution',
    request: { model: LATEST, prompt: 'a', resolution: '4k' },
    field: 'resolution',
    message: /480p, 720p, 1080p/,
  },
  { rule: '1080p text-to-video on 1.5', request: { model: LATEST, prompt: 'a', resolution: '1080p' } },
  { rule: '1080p image-to-video on 1.5', request: { model: LATEST, prompt: 'a', image: IMAGE, resolution: '1080p' } },
  {
    rule: '1080p refused on classic',
    request: { model: CLASSIC, prompt: 'a', resolution: '1080p' },
    field: 'resolution',
    message: /1080p needs svc-imagine-video-1\.5 and text-to-video or image-to-video/,
  },
  {
    rule: '1080p refused with last_frame',
    request: { model: LATEST, image: IMAGE, last_frame: IMAGE, resolution: '1080p' },
    field: 'resolution',
    message: /text-to-video or image-to-video/,
  },
  {
    rule: '1080p refused with reference audio',
    request: { model: LATEST, prompt: 'a', reference_audios: [{ voice_id: 'eve' }], resolution: '1080p' },
    field: 'resolution',
  },
  { rule: 'reference-image mode allows 720p', request: { model: LATEST, prompt: 'a', reference_images: [IMAGE], resolution: '720p' } },
  {
    rule: 'reference-image mode refuses 1080p',
    request: { model: LATEST, prompt: 'a', reference_images: [IMAGE], resolution: '1080p' },
    field: 'resolution',
    message: /at most 720p/,
  },
  // aspect ratios
  ...['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'].map((ratio) => ({
    rule: `aspect ratio ${ratio}`,
    request: { model: LATEST, prompt: 'a', aspect_ratio: ratio },
  })),
  {
    rule: 'unknown aspect ratio',
    request: { model: LATEST, prompt: 'a', aspect_ratio: '21:9' },
    field: 'aspect_ratio',
    message: /1:1, 16:9/,
  },
  // image objects
  { rule: 'image by file_id', request: { model: LATEST, image: { file_id: 'file_123' } } },
  { rule: 'image as a base64 data URI', request: { model: LATEST, image: DATA_IMAGE } },
  {
    rule: 'image with both url and file_id',
    request: { model: LATEST, image: { url: IMAGE.url, file_id: 'f' } },
    field: 'image',
    message: /exactly one of url or file_id/,
  },
  { rule: 'image with neither url nor file_id', request: { model: LATEST, image: {} }, field: 'image' },
  { rule: 'image url that is not a URL', request: { model: LATEST, image: { url: 'cat.png' } }, field: 'image.url' },
  { rule: 'last_frame with both', request: { model: LATEST, last_frame: { url: IMAGE.url, file_id: 'f' } }, field: 'last_frame' },
  {
    rule: 'reference image element checked',
    request: { model: LATEST, prompt: 'a', reference_images: [IMAGE, {}] },
    field: 'reference_images[1]',
  },
  { rule: 'empty reference image list', request: { model: LATEST, prompt: 'a', reference_images: [] }, field: 'reference_images' },
  {
    rule: 'empty reference audio list',
    request: { model: LATEST, prompt: 'a', reference_audios: [] },
    field: 'reference_audios',
    message: /must not be empty/,
  },
  {
    rule: 'reference audios that are not a list',
    request: asWritten({ model: LATEST, prompt: 'a', reference_audios: 'eve' }),
    field: 'reference_audios',
    message: /must be a list/,
  },
  {
    rule: 'an image object with an extra type key (no effect, per the spec)',
    request: asWritten({ model: LATEST, prompt: 'a', image: { type: 'image_url', url: IMAGE.url } }),
  },
  {
    rule: 'a reference image with an extra type key',
    request: asWritten({ model: LATEST, prompt: 'a', reference_images: [{ type: 'image_url', url: IMAGE.url }] }),
  },
  // model capabilities
  { rule: 'first and last frame on 1.5', request: { model: LATEST, image: IMAGE, last_frame: IMAGE } },
  {
    rule: 'classic rejects last_frame',
    request: { model: CLASSIC, prompt: 'a', last_frame: IMAGE },
    field: 'last_frame',
    message: /needs svc-imagine-video-1\.5/,
  },
  {
    rule: 'classic rejects image with reference images',
    request: { model: CLASSIC, prompt: 'a', image: IMAGE, reference_images: [IMAGE] },
    field: 'image',
    message: /cannot combine image/,
  },
  { rule: 'classic accepts reference images alone', request: { model: CLASSIC, prompt: 'a', reference_images: [IMAGE] } },
  {
    rule: '1.5 pins a first frame with references',
    request: { model: LATEST, prompt: 'a', image: IMAGE, reference_images: [IMAGE], reference_audios: [{ voice_id: 'eve' }] },
  },
  // reference audio
  {
    rule: 'three reference audios',
    request: {
      model: LATEST,
      prompt: 'a',
      reference_audios: [{ voice_id: 'eve' }, { voice_id: 'leo' }, { url: 'https://example.com/me.wav' }],
    },
  },
  {
    rule: 'four reference audios',
    request: {
      model: LATEST,
      prompt: 'a',
      reference_audios: [{ voice_id: 'eve' }, { voice_id: 'leo' }, { voice_id: 'ara' }, { voice_id: 'rex' }],
    },
    field: 'reference_audios',
    message: /At most 3/,
  },
  {
    rule: 'reference audio refused on classic',
    request: { model: CLASSIC, prompt: 'a', reference_audios: [{ voice_id: 'eve' }] },
    field: 'reference_audios',
    message: /need svc-imagine-video-1\.5/,
  },
  { rule: 'voice ids are case-insensitive', request: { model: LATEST, prompt: 'a', reference_audios: [{ voice_id: 'EVE' }] } },
  {
    rule: "a voice outside the built-in list is the gateway's to judge",
    request: { model: LATEST, prompt: 'a', reference_audios: [{ voice_id: 'Nova_2-b' }] },
  },
  {
    rule: 'an empty voice id',
    request: { model: LATEST, prompt: 'a', reference_audios: [{ voice_id: '' }] },
    field: 'reference_audios[0].voice_id',
    message: /voice id such as eve/,
  },
  {
    rule: 'a voice id that is not an id',
    request: { model: LATEST, prompt: 'a', reference_audios: [{ voice_id: 'eve' }, { voice_id: 'ev e!' }] },
    field: 'reference_audios[1].voice_id',
    message: /letters, digits, - and _/,
  },
  {
    rule: 'reference audio with both voice_id and url',
    request: { model: LATEST, prompt: 'a', reference_audios: [{ voice_id: 'eve', url: 'https://example.com/a.wav' }] },
    field: 'reference_audios[0]',
  },
  {
    rule: 'reference audio url must be http(s)',
    request: { model: LATEST, prompt: 'a', reference_audios: [{ url: 'ftp://example.com/a.wav' }] },
    field: 'reference_audios[0].url',
  },
  // storage and output
  {
    rule: 'storage with filename and 30-day expiry',
    request: { model: LATEST, prompt: 'a', storage_options: { filename: 'cat.mp4', expires_after: 2_592_000, public_url: true } },
  },
  {
    rule: 'storage filename required',
    request: { model: LATEST, prompt: 'a', storage_options: { filename: '' } },
    field: 'storage_options.filename',
  },
  {
    rule: 'storage expiry over 30 days',
    request: { model: LATEST, prompt: 'a', storage_options: { filename: 'a.mp4', expires_after: 2_592_001 } },
    field: 'storage_options.expires_after',
    message: /2592000/,
  },
  {
    rule: 'storage public_url must be true or false',
    request: asWritten({ model: LATEST, prompt: 'a', storage_options: { filename: 'a.mp4', public_url: 'yes' } }),
    field: 'storage_options.public_url',
    message: /true or false/,
  },
  {
    rule: 'storage expiry below 1 s',
    request: { model: LATEST, prompt: 'a', storage_options: { filename: 'a.mp4', expires_after: 0 } },
    field: 'storage_options.expires_after',
    message: /from 1 to 2592000/,
  },
  {
    rule: 'storage expiry in fractions of a second',
    request: { model: LATEST, prompt: 'a', storage_options: { filename: 'a.mp4', expires_after: 1.5 } },
    field: 'storage_options.expires_after',
    message: /whole number/,
  },
  { rule: 'storage expiry of 1 s', request: { model: LATEST, prompt: 'a', storage_options: { filename: 'a.mp4', expires_after: 1 } } },
  { rule: 'user must be text', request: asWritten({ model: LATEST, prompt: 'a', user: 42 }), field: 'user', message: /must be text/ },
  {
    rule: 'upload_url must be http(s)',
    request: { model: LATEST, prompt: 'a', output: { upload_url: 'not a url' } },
    field: 'output.upload_url',
  },
  {
    rule: 'upload_url accepted',
    request: { model: LATEST, prompt: 'a', output: { upload_url: 'https://bucket.example.com/put?sig=1' }, user: 'u1' },
  },
  // compatibility aliases
  { rule: 'compat: seconds is an alias of duration', request: { model: LATEST, prompt: 'a', seconds: 12 } },
  {
    rule: 'compat: seconds follows the duration rule',
    request: { model: LATEST, prompt: 'a', seconds: 20 },
    field: 'seconds',
    message: /from 1 to 15/,
  },
  {
    rule: 'compat: size follows the resolution rules',
    request: { model: CLASSIC, prompt: 'a', size: '1080p' },
    field: 'size',
    message: /1080p needs/,
  },
  {
    rule: 'compat: conflicting alias',
    request: { model: LATEST, prompt: 'a', duration: 5, seconds: 6 },
    field: 'seconds',
    message: /another name for duration/,
  },
  { rule: 'compat: agreeing alias', request: { model: LATEST, prompt: 'a', duration: 5, seconds: 5 } },
  { rule: 'native: seconds forwarded unchanged', layer: 'native', request: { model: LATEST, prompt: 'a', seconds: 20, size: '8k' } },
  { rule: 'native: duration still checked', layer: 'native', request: { model: LATEST, prompt: 'a', duration: 20 }, field: 'duration' },
  { rule: 'native: classic last_frame refused', layer: 'native', request: { model: CLASSIC, last_frame: IMAGE }, field: 'last_frame' },
];

describe('validateGeneration', () => {
  it.each(generationRows)('$rule', (row) => {
    const result = outcome(() =>
      validateGeneration(row.request, { layer: row.layer ?? 'compat', ...(row.vendor ? { vendor: row.vendor } : {}) }),
    );
    expect(result.field).toBe(row.field);
    if (row.message) expect(result.message).toMatch(row.message);
  });

  it('checks every rule the same way on both layers', () => {
    for (const layer of ['compat', 'native'] as const) {
      expect(outcome(() => validateGeneration({ model: CLASSIC, prompt: 'a', resolution: '1080p' }, { layer })).field).toBe('resolution');
      expect(outcome(() => validateGeneration({ model: LATEST, prompt: 'a' }, { layer })).field).toBeUndefined();
    }
  });
});

interface SourceRow {
  rule: string;
  operation: 'edit' | 'extend';
  request: EditRequest | ExtensionRequest;
  layer?: Layer;
  field?: string;
  message?: RegExp;
}

const sourceRows: SourceRow[] = [
  { rule: 'edit an .mp4 link with a query string', operation: 'edit', request: { model: LATEST, prompt: 'make it snow', video: MP4 } },
  { rule: 'edit a stored file', operation: 'edit', request: { model: LATEST, prompt: 'snow', video: { file_id: 'file_1' } } },
  { rule: 'edit needs a prompt', operation: 'edit', request: { model: LATEST, prompt: '', video: MP4 }, field: 'prompt' },
  {
    rule: 'edit source without the .mp4 suffix',
    operation: 'edit',
    request: { model: LATEST, prompt: 'a', video: { url: 'https://example.com/watch?v=1' } },
    field: 'video.url',
    message: /\.mp4/,
  },
  {
    rule: 'edit source where .mp4 is only in the query',
    operation: 'edit',
    request: { model: LATEST, prompt: 'a', video: { url: 'https://example.com/v?name=a.mp4' } },
    field: 'video.url',
  },
  {
    rule: 'edit source with both url and file_id',
    operation: 'edit',
    request: { model: LATEST, prompt: 'a', video: { url: MP4.url, file_id: 'f' } },
    field: 'video',
  },
  { rule: 'edit on another vendor model', operation: 'edit', request: { model: 'other-model', prompt: 'a', video: MP4 }, field: 'model' },
  { rule: 'extend by the default length', operation: 'extend', request: { model: LATEST, prompt: 'go on', video: MP4 } },
  { rule: 'extend by 2 s', operation: 'extend', request: { model: LATEST, prompt: 'go on', video: MP4, duration: 2 } },
  { rule: 'extend by 10 s', operation: 'extend', request: { model: LATEST, prompt: 'go on', video: MP4, duration: 10 } },
  {
    rule: 'extend by 1 s is too short',
    operation: 'extend',
    request: { model: LATEST, prompt: 'go on', video: MP4, duration: 1 },
    field: 'duration',
    message: /from 2 to 10/,
  },
  {
    rule: 'extend by 11 s is too long',
    operation: 'extend',
    request: { model: LATEST, prompt: 'go on', video: MP4, duration: 11 },
    field: 'duration',
  },
  {
    rule: 'compat: extend seconds alias',
    operation: 'extend',
    request: { model: LATEST, prompt: 'go on', video: MP4, seconds: 12 },
    field: 'seconds',
  },
  {
    rule: 'extend needs a source',
    operation: 'extend',
    layer: 'native',
    request: { model: LATEST, prompt: 'go on', video: { url: 'https://example.com/clip.mov' } },
    field: 'video.url',
  },
];

describe('validateEdit and validateExtension', () => {
  it.each(sourceRows)('$rule', (row) => {
    const options = { layer: row.layer ?? 'compat' } as const;
    const result = outcome(() => (row.operation === 'edit' ? validateEdit(row.request, options) : validateExtension(row.request, options)));
    expect(result.field).toBe(row.field);
    if (row.message) expect(result.message).toMatch(row.message);
  });
});
