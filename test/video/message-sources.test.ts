import { word } from '../../src/wording/notice.ts';
import { describe, expect, it } from 'vitest';
import { ENGLISH } from '../../src/i18n/index.ts';
import { missingSource, pickImage, pickVideo, type EmbedMedia, type MessageMedia } from '../../src/video/message-sources.ts';
import type { AttachmentInput } from '../../src/video/requests.ts';

// What the message commands find on a message: the picture to animate, the .mp4 to extend or edit.

const CDN = 'https://cdn.discordapp.com/attachments/1/2';
const file = (filename: string, contentType: string | undefined): AttachmentInput => ({
  url: `${CDN}/${filename}?ex=1&is=2&hm=3`,
  filename,
  contentType,
  size: 10,
});
const message = (attachments: AttachmentInput[], embeds: EmbedMedia[] = []): MessageMedia => ({ attachments, embeds });
const linkEmbed = (url: string, proxyUrl: string | undefined): EmbedMedia => ({
  type: 'image',
  image: undefined,
  thumbnail: { url, proxyUrl },
});

describe('the picture to animate', () => {
  it('is the first attached PNG, JPEG, WebP or GIF, by its type or, without one, by its name', () => {
    expect(
      pickImage(message([file('notes.txt', 'text/plain'), file('cat.webp', 'image/webp'), file('dog.png', 'image/png')]))?.filename,
    ).toBe('cat.webp');
    expect(pickImage(message([file('photo.JPG', undefined)]))?.filename).toBe('photo.JPG');
    expect(pickImage(message([file('scan.tiff', 'image/tiff'), file('vector.svg', 'image/svg+xml')]))).toBeUndefined();
  });

  it("else an embedded picture, at Discord's copy: a rich embed's image, or a link's image embed's thumbnail", () => {
    const rich: EmbedMedia = {
      type: 'rich',
      image: { url: 'https://example.com/a.png', proxyUrl: 'https://media.discordapp.net/a.png' },
      thumbnail: undefined,
    };
    expect(pickImage(message([], [rich]))).toEqual({
      url: 'https://media.discordapp.net/a.png',
      filename: 'a.png',
      contentType: undefined,
    });
    expect(pickImage(message([], [linkEmbed('https://example.com/pics/b.gif', undefined)]))?.url).toBe('https://example.com/pics/b.gif');
    // An article's thumbnail is not the picture the member shared.
    expect(
      pickImage(message([], [{ type: 'article', image: undefined, thumbnail: { url: 'https://example.com/c.png', proxyUrl: undefined } }])),
    ).toBeUndefined();
  });

  it('takes only http(s) links from an embed', () => {
    expect(pickImage(message([], [linkEmbed('javascript:alert(1)', 'file:///etc/passwd')]))).toBeUndefined();
    expect(pickImage(message([], [linkEmbed('https://example.com/d.png', 'attachment://d.png')]))?.url).toBe('https://example.com/d.png');
  });

  it('prefers an attachment to an embed', () => {
    expect(pickImage(message([file('mine.png', 'image/png')], [linkEmbed('https://example.com/e.png', undefined)]))?.filename).toBe(
      'mine.png',
    );
  });
});

describe('the video to extend or edit', () => {
  it('is the first .mp4 attachment', () => {
    expect(
      pickVideo(message([file('clip.mov', 'video/quicktime'), file('clip.mp4', 'video/mp4'), file('other.mp4', 'video/mp4')]))?.filename,
    ).toBe('clip.mp4');
    expect(pickVideo(message([file('untyped.mp4', undefined)]))?.filename).toBe('untyped.mp4');
    expect(pickVideo(message([file('fake.mp4', 'text/html'), file('clip.webm', 'video/webm')]))).toBeUndefined();
  });
});

describe('a message without what the command needs', () => {
  it('is answered with what the command needs, and what the message has', () => {
    expect(word(ENGLISH, missingSource('Animate image', 'image', message([])))).toBe(
      '**Animate image** works on a message with a picture (PNG, JPEG, WebP or GIF, attached or embedded); this message has none.',
    );
    expect(
      word(ENGLISH, missingSource('Extend video', 'video', message([file('clip.mov', 'video/quicktime'), file('a.png', 'image/png')]))),
    ).toBe('**Extend video** works on a message with an .mp4 attachment; this message has none (it has clip.mov and a.png).');
  });
});
