import { describe, expect, it } from 'vitest';
import {
  InputError,
  buildGenerationRequest,
  endUserId,
  generationMode,
  hasExpiredAttachmentLink,
  optionForField,
  optionNamedIn,
  parseVoiceList,
  storageOptionsFor,
  type AttachmentInput,
  type GenerationInput,
} from '../../src/video/requests.ts';
import { generationInput } from '../support/video-request.ts';

const picture = (name: string, contentType = 'image/png'): AttachmentInput => ({
  url: `https://cdn.example/attachments/1/2/${name}?ex=1&is=2&hm=3`,
  filename: name,
  contentType,
  size: 1000,
});

const base: GenerationInput = { ...generationInput('a cat surfing'), model: 'svc-imagine-video-1.5' };

describe('building a generation request from /video options', () => {
  it('sends only what the user chose, with the end-user id', () => {
    expect(buildGenerationRequest({ ...base, duration: 5, aspectRatio: '9:16' }, 'user-1', undefined)).toEqual({
      model: 'svc-imagine-video-1.5',
      prompt: 'a cat surfing',
      duration: 5,
      aspect_ratio: '9:16',
      user: 'user-1',
    });
  });

  const modes: [string, Partial<GenerationInput>][] = [
    ['text-to-video', {}],
    ['image-to-video', { image: picture('first.png') }],
    ['reference', { referenceImages: [picture('style.png')] }],
    ['reference', { voices: ['eve'] }],
    ['reference', { image: picture('first.png'), referenceImages: [picture('style.png')] }],
    ['first-last-frame', { lastFrame: picture('last.png') }],
    ['first-last-frame', { image: picture('first.png'), lastFrame: picture('last.png') }],
  ];
  it.each(modes)('detects %s mode from the fields sent', (mode, extra) => {
    expect(generationMode(buildGenerationRequest({ ...base, ...extra }, 'u', undefined))).toBe(mode);
  });

  it('turns attachments into image objects with the attachment url, and voices into reference audios', () => {
    const request = buildGenerationRequest(
      {
        ...base,
        referenceImages: [picture('a.png'), picture('b.jpg', 'image/jpeg')],
        voices: ['eve', 'leo'],
        referenceAudio: { url: 'https://cdn.example/v.mp3', filename: 'v.mp3', contentType: 'audio/mpeg', size: 10 },
      },
      'u',
      undefined,
    );
    expect(request.reference_images).toEqual([{ url: picture('a.png').url }, { url: picture('b.jpg').url }]);
    expect(request.reference_audios).toEqual([{ voice_id: 'eve' }, { voice_id: 'leo' }, { url: 'https://cdn.example/v.mp3' }]);
  });

  it('names the option of an attachment of the wrong kind', () => {
    const wrongImage = () =>
      buildGenerationRequest({ ...base, referenceImages: [picture('a.png'), picture('clip.mp4', 'video/mp4')] }, 'u', undefined);
    expect(wrongImage).toThrow(InputError);
    expect(wrongImage).toThrow(/`reference_image_2` must be a PNG, JPEG, WebP or GIF picture/);
    const wrongAudio = () => buildGenerationRequest({ ...base, referenceAudio: picture('x.png') }, 'u', undefined);
    expect(wrongAudio).toThrow(/`reference_audio` must be an audio file/);
  });

  it('leaves judging voices to the gateway (its list may differ), and names too many voices', () => {
    expect(buildGenerationRequest({ ...base, voices: ['eve', 'nova'] }, 'u', undefined).reference_audios).toEqual([
      { voice_id: 'eve' },
      { voice_id: 'nova' },
    ]);
    const four = () =>
      buildGenerationRequest(
        {
          ...base,
          voices: ['eve', 'leo', 'ara'],
          referenceAudio: { url: 'https://a/v.mp3', filename: 'v.mp3', contentType: 'audio/mpeg', size: 1 },
        },
        'u',
        undefined,
      );
    expect(four).toThrow(/at most 3 voices/);
  });

  it('reads up to three voices however they are separated', () => {
    expect(parseVoiceList('Eve, leo  ARA')).toEqual(['eve', 'leo', 'ara']);
    expect(parseVoiceList(undefined)).toEqual([]);
  });

  it('asks the gateway to keep the video only when the server wants it', () => {
    expect(storageOptionsFor({ keepDays: 0, publicLink: false }, 'v.mp4')).toBeUndefined();
    expect(storageOptionsFor({ keepDays: 7, publicLink: true }, 'v.mp4')).toEqual({
      filename: 'v.mp4',
      expires_after: 604_800,
      public_url: true,
    });
  });

  it.each([
    ['reference_images[0].url', 'reference_image'],
    ['reference_images[2]', 'reference_image_3'],
    ['reference_audios[1].voice_id', 'voice'],
    ['reference_audios[2].url', 'voice` / `reference_audio'],
    ['last_frame.url', 'last_frame'],
    ['image', 'image'],
    ['video.url', 'video` / `task'],
    ['seconds', 'duration'],
    ['resolution', 'resolution'],
  ])('maps the gateway field %s to the option %s', (field, option) => {
    expect(optionForField(field)).toBe(option);
  });

  it.each([
    ['Unknown voice_id "nobody". Available voices: eve, leo', 'voice'],
    ['reference_audios: at most 3 elements', 'voice` / `reference_audio'],
    ['1080p is not allowed with reference_images', 'reference_image'],
    ['duration must be between 1 and 15', 'duration'],
    ['Something upstream went wrong', undefined],
  ])('finds the option a native error text names: %s', (text, option) => {
    expect(optionNamedIn(text)).toBe(option);
  });
});

describe('attachment links of a request sent again', () => {
  const now = Date.UTC(2026, 0, 2);
  const link = (expiresAt: number) =>
    `https://cdn.discordapp.com/attachments/1/2/a.png?ex=${Math.floor(expiresAt / 1000).toString(16)}&is=65a0b1c2&hm=0f1e2d`;

  it('finds an expired Discord attachment anywhere in the stored request', () => {
    expect(hasExpiredAttachmentLink({ model: 'm', image: { url: link(now - 1000) } }, now)).toBe(true);
    expect(hasExpiredAttachmentLink({ reference_images: [{ url: link(now + 60_000) }, { url: link(now - 1) }] }, now)).toBe(true);
    expect(hasExpiredAttachmentLink({ reference_audios: [{ voice_id: 'eve' }, { url: link(now - 1) }] }, now)).toBe(true);
  });

  it('leaves links that still work, and links that do not expire, alone', () => {
    expect(hasExpiredAttachmentLink({ image: { url: link(now + 60_000) } }, now)).toBe(false);
    expect(hasExpiredAttachmentLink({ image: { url: 'https://example.com/a.png?ex=1' } }, now)).toBe(false);
    expect(hasExpiredAttachmentLink({ image: { url: 'data:image/png;base64,AAAA' }, prompt: 'ex=1&is=2&hm=3' }, now)).toBe(false);
  });
});

describe('the end-user id sent to the gateway', () => {
  const salt = Buffer.alloc(32, 7);
  it('is stable per user and differs between users', () => {
    expect(endUserId(salt, '123456789012345678')).toBe(endUserId(salt, '123456789012345678'));
    expect(endUserId(salt, '123456789012345678')).not.toBe(endUserId(salt, '123456789012345679'));
  });

  it('does not contain the Discord id and depends on the installation salt', () => {
    const id = endUserId(salt, '123456789012345678');
    expect(id).not.toContain('123456789012345678');
    expect(endUserId(Buffer.alloc(32, 8), '123456789012345678')).not.toBe(id);
  });
});
