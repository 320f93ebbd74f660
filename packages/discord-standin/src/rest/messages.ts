import { isRecord } from '../lib/json.ts';
import { snowflake } from '../world/snowflake.ts';
import { DEFAULT_ATTACHMENT_LIMIT, type Message, type StandInState, type StoredAttachment, type Upload } from '../world/state.ts';
import type { ParsedBody } from './body.ts';
import { IS_COMPONENTS_V2, resolveAttachmentReferences } from './components.ts';
import { invalidFormBody, RestError, type FieldErrors } from './errors.ts';
import { messageErrors } from './limits.ts';

// Messages as Discord keeps them: created, edited and deleted by REST routes, interaction responses and
// members' posts alike.

export const NONCE_WINDOW_MS = 5 * 60_000;

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The name a file goes by: the payload describes files[n] with an attachments entry whose id is "n" (its filename wins). */
function filenameOf(file: ParsedBody['files'][number], descriptors: unknown[]): string {
  const descriptor = descriptors.find((entry) => isRecord(entry) && String(entry.id) === String(file.part));
  return isRecord(descriptor) && typeof descriptor.filename === 'string' ? descriptor.filename : file.name;
}

export interface MessageDraft {
  channelId: string;
  authorId: string;
  body: ParsedBody;
  webhookId?: string;
  interaction?: Message['interaction'];
  extraFlags?: number;
}

export interface MessageListeners {
  created: (message: Message) => void;
  updated: (message: Message) => void;
  deleted: (message: Message) => void;
  uploaded: (upload: Upload) => void;
}

/** What creating and editing messages shares: content, embeds, components, flags, and files. */
export class MessageStore {
  readonly #state: StandInState;
  readonly #listeners: MessageListeners;
  readonly #nonceWindowMs: number;

  constructor(state: StandInState, listeners: MessageListeners, nonceWindowMs: number) {
    this.#state = state;
    this.#listeners = listeners;
    this.#nonceWindowMs = nonceWindowMs;
  }

  #checkUploads(channelId: string, files: ParsedBody['files']): void {
    const limit =
      this.#state.channel(channelId)?.guild.attachmentSizeLimit ??
      (this.#state.privateChannels.has(channelId) ? DEFAULT_ATTACHMENT_LIMIT : Infinity);
    if (files.some((file) => file.bytes.length > limit)) throw new RestError(413, 40005, 'Request entity too large');
  }

  #attachments(channelId: string, files: ParsedBody['files'], descriptors: unknown[]): StoredAttachment[] {
    return files.map((file) => this.#state.storeAttachment(channelId, filenameOf(file, descriptors), file.contentType, file.bytes));
  }

  /**
   * What Discord refuses in a body that creates a message (no `editing`) or edits `editing`, as its
   * `errors` tree; undefined when it passes. An interaction response is checked with this before it
   * is acknowledged, so a refused one acknowledges nothing.
   */
  errors(body: ParsedBody, editing?: Message): FieldErrors | undefined {
    const descriptors = arrayOf(body.json.attachments);
    const kept = editing ? this.#keptAttachments(editing, body.json) : [];
    const attachable = new Set([
      ...body.files.map((file) => filenameOf(file, descriptors)),
      ...kept.map((attachment) => attachment.filename),
    ]);
    return messageErrors(body.json, { editing, attachable });
  }

  #check(body: ParsedBody, editing?: Message): void {
    const errors = this.errors(body, editing);
    if (errors) throw invalidFormBody(errors);
  }

  create(draft: MessageDraft): Message {
    const { json, files } = draft.body;
    this.#check(draft.body);
    this.#checkUploads(draft.channelId, files);
    if (typeof json.nonce === 'string' || typeof json.nonce === 'number') {
      if (json.enforce_nonce === true) {
        // Discord: a repeated nonce from the same author within a few minutes returns the first message.
        const earlier = [...this.#state.messages.values()].find(
          (message) =>
            message.nonce === json.nonce &&
            message.authorId === draft.authorId &&
            message.channelId === draft.channelId &&
            Date.now() - Date.parse(message.timestamp) < this.#nonceWindowMs,
        );
        if (earlier) return earlier;
      }
    }
    const reference =
      isRecord(json.message_reference) && typeof json.message_reference.message_id === 'string'
        ? { message_id: json.message_reference.message_id }
        : undefined;
    const attachments = this.#attachments(draft.channelId, files, arrayOf(json.attachments));
    const message: Message = {
      id: snowflake(),
      channelId: draft.channelId,
      authorId: draft.authorId,
      content: typeof json.content === 'string' ? json.content : '',
      embeds: arrayOf(json.embeds),
      components: resolveAttachmentReferences(arrayOf(json.components), attachments),
      attachments,
      flags: (typeof json.flags === 'number' ? json.flags : 0) | (draft.extraFlags ?? 0),
      ...(reference ? { messageReference: reference } : {}),
      ...(isRecord(json.allowed_mentions) ? { allowedMentions: json.allowed_mentions } : {}),
      ...(typeof json.nonce === 'string' || typeof json.nonce === 'number' ? { nonce: json.nonce } : {}),
      timestamp: new Date().toISOString(),
      editedTimestamp: null,
      ...(draft.webhookId ? { webhookId: draft.webhookId } : {}),
      ...(draft.interaction ? { interaction: draft.interaction } : {}),
      edits: [],
      deleted: false,
    };
    this.#state.messages.set(message.id, message);
    this.#announceUploads(message, message.attachments);
    this.#listeners.created(message);
    return message;
  }

  edit(message: Message, body: ParsedBody): Message {
    const { json, files } = body;
    this.#check(body, message);
    this.#checkUploads(message.channelId, files);
    if ('content' in json) message.content = typeof json.content === 'string' ? json.content : '';
    if ('embeds' in json) message.embeds = arrayOf(json.embeds);
    // An edit never removes ephemeral (64), and the checks above refused one that removes IS_COMPONENTS_V2.
    if (typeof json.flags === 'number') message.flags = json.flags | (message.flags & (64 | IS_COMPONENTS_V2));
    const added = this.#attachments(message.channelId, files, arrayOf(json.attachments));
    message.attachments = [...this.#keptAttachments(message, json), ...added];
    if ('components' in json) message.components = resolveAttachmentReferences(arrayOf(json.components), message.attachments);
    // Discord clears the "thinking" state with the first edit of a deferred reply.
    message.flags &= ~128;
    message.editedTimestamp = new Date().toISOString();
    message.edits.push({ at: Date.now(), json, files: added.map((attachment) => attachment.filename) });
    this.#announceUploads(message, added);
    this.#listeners.updated(message);
    return message;
  }

  delete(message: Message): void {
    message.deleted = true;
    this.#listeners.deleted(message);
  }

  /**
   * Discord keeps only the existing attachments an edit lists by id in `attachments` (no list: all kept);
   * entries for new files carry the index of their files[n] part instead.
   */
  #keptAttachments(message: Message, json: Readonly<Record<string, unknown>>): StoredAttachment[] {
    if (!Array.isArray(json.attachments)) return message.attachments;
    const kept = new Set(json.attachments.flatMap((entry: unknown) => (isRecord(entry) && typeof entry.id === 'string' ? [entry.id] : [])));
    return message.attachments.filter((attachment) => kept.has(attachment.id));
  }

  #announceUploads(message: Message, attachments: StoredAttachment[]): void {
    for (const attachment of attachments)
      this.#listeners.uploaded({ channelId: message.channelId, messageId: message.id, attachment, at: Date.now() });
  }
}
