import { z } from 'zod';
import { httpUrl } from '../lib/url.ts';
import { versionedRecord, type Collection, type Store } from '../store/index.ts';
import { isImageAttachment, isMp4Attachment, type AttachmentInput } from './requests.ts';
import { notice, type Notice } from '../wording/notice.ts';

// The message commands act on a message where it sits: Animate image takes its picture as the first frame,
// Extend video and Edit video its .mp4. What a message offers is picked here, from plain data the command
// hands in; the pick is then kept while the member fills in the command's form, because Discord sends the
// message with the command but not with the form's submission, and a bot without the Message Content
// intent cannot read a member's attachments back later.

/** A picture in an embed: Discord's copy (`proxyUrl`) and the address it came from. */
export interface EmbeddedPicture {
  url: string;
  proxyUrl: string | undefined;
}

/** An embed as far as pictures go: a link's image embed (type `image`) shows it as its thumbnail. */
export interface EmbedMedia {
  type: string | undefined;
  image: EmbeddedPicture | undefined;
  thumbnail: EmbeddedPicture | undefined;
}

/** What a message carries that could become a video's source. */
export interface MessageMedia {
  attachments: readonly AttachmentInput[];
  embeds: readonly EmbedMedia[];
}

/** A picture of an embed as a source, at Discord's copy when there is one; only an http(s) link. */
function embeddedSource(picture: EmbeddedPicture | undefined): AttachmentInput | undefined {
  const url = [picture?.proxyUrl, picture?.url]
    .map((candidate) => (candidate === undefined ? undefined : httpUrl(candidate)))
    .find((candidate) => candidate !== undefined);
  if (!url) return undefined;
  const filename = url.pathname.split('/').at(-1) || 'embedded picture';
  return { url: url.href, filename, contentType: undefined };
}

/** The picture to animate: the first attached PNG, JPEG, WebP or GIF, else the first embedded picture. */
export function pickImage(message: MessageMedia): AttachmentInput | undefined {
  const attached = message.attachments.find(isImageAttachment);
  if (attached) return attached;
  for (const embed of message.embeds) {
    const picture = embeddedSource(embed.image) ?? (embed.type === 'image' ? embeddedSource(embed.thumbnail) : undefined);
    if (picture) return picture;
  }
  return undefined;
}

/** The video to extend or edit: the first `.mp4` attachment. */
export function pickVideo(message: MessageMedia): AttachmentInput | undefined {
  return message.attachments.find(isMp4Attachment);
}

/** Why a message command (`command`, its name worded by the caller) cannot act on this message, and what it needs. */
export function missingSource(command: string, needs: 'image' | 'video', message: MessageMedia): Notice {
  const files = message.attachments.map((attachment) => attachment.filename);
  return notice('video.refusal.missing-source', {
    command,
    needs,
    files: { phrase: 'list', items: files },
    attached: files.length,
  });
}

/** The source a member picked with a message command, kept until they submit its form. */
export interface SourceForm {
  guildId: string;
  userId: string;
  source: AttachmentInput;
}

/** How long a form's pick is kept: a member writing a prompt takes minutes, not hours. */
const FORM_KEPT_MS = 30 * 60_000;

/** The version of a kept pick's record this code writes (src/store/versioned.ts). */
const SOURCE_FORM_VERSION = 1;

type StoredSourceForm = SourceForm & { v: typeof SOURCE_FORM_VERSION };

/** Reads a kept pick of any version; version 0 (no `v`, before 2026-11-29) is the same record. */
const parseSourceForm = versionedRecord<StoredSourceForm>({
  name: 'source form',
  version: SOURCE_FORM_VERSION,
  schema: z.object({
    v: z.literal(SOURCE_FORM_VERSION),
    guildId: z.string(),
    userId: z.string(),
    source: z
      .object({ url: z.string(), filename: z.string(), contentType: z.string().optional(), size: z.number().optional() })
      .transform(({ contentType, ...source }) => ({ ...source, contentType })),
  }),
  upgrade: (stored) => stored,
});

export class SourceForms {
  readonly #forms: Collection<StoredSourceForm>;

  constructor(store: Store) {
    this.#forms = store.collection('video_source_forms', parseSourceForm);
  }

  /** Keeps a pick under the id its form carries (the message command's interaction id). */
  keep(formId: string, form: SourceForm): Promise<void> {
    return this.#forms.set(formId, { v: SOURCE_FORM_VERSION, ...form }, FORM_KEPT_MS);
  }

  /** The source of a form, when it is still kept and it is this member's form on this server. */
  async find(formId: string, guildId: string, userId: string): Promise<AttachmentInput | undefined> {
    const form = await this.#forms.get(formId);
    return form && form.guildId === guildId && form.userId === userId ? form.source : undefined;
  }
}
