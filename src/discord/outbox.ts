import { openAsBlob } from 'node:fs';
import {
  ComponentType,
  DiscordAPIError,
  MessageFlags,
  Routes,
  type REST,
  type RESTPatchAPIChannelMessageJSONBody,
  type RESTPostAPIChannelMessageJSONBody,
  type APIEmbed,
  type APIActionRowComponent,
  type APIComponentInMessageActionRow,
  type APIMessageTopLevelComponent,
} from 'discord.js';
import { ENGLISH, t, type Locale } from '../i18n/index.ts';
import { isRecord, readArray, readRecord, readString } from '../lib/json.ts';
import { silentLogger, type Logger } from '../lib/log.ts';
import { onceUntilFailure } from '../lib/once-until-failure.ts';
import { graphemePrefix } from '../lib/text.ts';
import { brokenLimit, refusedFields, type BrokenLimit } from './message-limits.ts';
import { untilAborted } from './retry.ts';

// What the background services send to Discord, through the bot's REST client: status cards edited
// through the interaction token while it lives (15 min) and as channel messages after, and results
// posted as channel messages (a task can outlive any interaction token). A card or an edit over one of
// Discord's limits is not sent as it is (Discord would refuse it whole, 400 / 50035): the log names the
// limit, and the message says, in its reader's language, that it was too long to show; so does one
// Discord refuses all the same, the log naming the fields Discord named.

export const DISCORD_ERRORS = {
  unknownChannel: 10003,
  unknownMessage: 10008,
  unknownWebhook: 10015,
  invalidWebhookToken: 50027,
  missingAccess: 50001,
  missingPermissions: 50013,
  requestEntityTooLarge: 40005,
  /** The user takes no DMs from the bot (closed to it). */
  cannotMessageUser: 50007,
  /** The user shares no server with the bot and has not installed the app: the bot may not DM them. */
  noMutualGuilds: 50278,
} as const;

export interface MessagePayload {
  content?: string;
  embeds?: APIEmbed[];
  components?: APIActionRowComponent<APIComponentInMessageActionRow>[];
}

/**
 * A message laid out with Components V2 (containers, text displays, media galleries): the flag, and no
 * `content` or `embeds` (Discord refuses them beside the flag, and the flag never comes off a message).
 */
export interface ComponentsV2Message {
  flags: MessageFlags.IsComponentsV2;
  components: APIMessageTopLevelComponent[];
}

/** A status card as an edit sends it: with the file its media gallery names as `attachment://<name>`, when it has one. */
export interface CardEdit extends ComponentsV2Message {
  file?: FileToPost;
  /** Its reader's language, for the notice that stands for it if it is too long to show (default English). */
  locale?: Locale;
  /**
   * The ids of the card's earlier attachments to keep (the videos of a job's other variants): an edit
   * keeps only the existing attachments it lists.
   */
  keep?: readonly { id: string; filename: string }[];
}

export interface CardAddress {
  applicationId: string;
  interactionToken: string;
  tokenExpiresAt: number;
  channelId: string;
  messageId: string | undefined;
}

/** A message an interaction answered with, addressed through its token. */
export interface InteractionMessage {
  applicationId: string;
  interactionToken: string;
  /** `@original` (the interaction's reply) or a follow-up's id. */
  messageId: string;
}

export interface PostedMessage {
  messageId: string;
  /** The url of the file asked about (by name), or else of the message's first attachment. */
  attachmentUrl: string | undefined;
  /** That attachment's id: an edit that lists it keeps the file. */
  attachmentId?: string;
}

/** One of the bot's own recent messages in a channel: enough to recognise a post it made. */
export interface OwnMessage extends PostedMessage {
  nonce: string | undefined;
  /** The custom ids of its buttons. */
  customIds: string[];
}

/** A thread with no new message for this long (a day) is archived; Discord allows 60, 1440, 4320 or 10080. */
const THREAD_ARCHIVE_MINUTES = 1440;

/** Discord refuses a thread whose name is longer (400 / 50035). */
const MAX_THREAD_NAME_LENGTH = 100;

/** How long a deletion a member waits on may take, rate limits included, before it is given up. */
export const DELETE_DEADLINE_MS = 8_000;

/** Discord refuses a message whose content is longer (400 / 50035). */
export const MAX_CONTENT_LENGTH = 2000;

/**
 * `content` in messages Discord takes, in order: cut at the last line break or space of each piece when
 * one falls in its second half, else at the limit (between whole characters).
 */
function splitContent(content: string): string[] {
  const pieces: string[] = [];
  let rest = content;
  while (rest.length > MAX_CONTENT_LENGTH) {
    const window = rest.slice(0, MAX_CONTENT_LENGTH);
    const space = Math.max(window.lastIndexOf('\n'), window.lastIndexOf(' '));
    const end = space >= MAX_CONTENT_LENGTH / 2 ? space : graphemePrefix(rest, MAX_CONTENT_LENGTH).length || MAX_CONTENT_LENGTH;
    pieces.push(rest.slice(0, end));
    rest = end === space ? rest.slice(end + 1) : rest.slice(end);
  }
  pieces.push(rest);
  return pieces;
}

/** How many recent messages are searched for a post of the bot's (Discord's largest page). */
const RECENT_MESSAGES = 50;

/** The custom ids of a message's buttons, wherever they sit: in a row, in a Components V2 container's rows, as a section's accessory. */
function customIdsOf(raw: unknown): string[] {
  return [...(readArray(raw, 'components') ?? []), ...(readRecord(raw, 'accessory') ? [readRecord(raw, 'accessory')] : [])].flatMap(
    (component) => [...(readString(component, 'custom_id') ?? []), ...customIdsOf(component)],
  );
}

function nonceOf(raw: unknown): string | undefined {
  const nonce = isRecord(raw) ? raw.nonce : undefined;
  return typeof nonce === 'string' || typeof nonce === 'number' ? String(nonce) : undefined;
}

/** A file to upload: its bytes in memory, or (for anything big, such as a video) a file on disk, streamed from there. */
export type FileToPost = { name: string; contentType: string } & ({ data: Buffer } | { path: string });

/** A message Discord answered with; `fileName` picks which attachment's url and id are read (a job's card has several). */
function parsePostedMessage(raw: unknown, fileName?: string): PostedMessage {
  const messageId = readString(raw, 'id');
  if (!messageId) throw new Error('Discord answered a message post without a message id');
  const attachments = readArray(raw, 'attachments') ?? [];
  const picked = fileName === undefined ? attachments[0] : attachments.find((entry) => readString(entry, 'filename') === fileName);
  if (!isRecord(picked)) return { messageId, attachmentUrl: undefined };
  const attachmentId = readString(picked, 'id');
  return { messageId, attachmentUrl: readString(picked, 'url'), ...(attachmentId ? { attachmentId } : {}) };
}

export function isDiscordError(error: unknown, ...codes: number[]): error is DiscordAPIError {
  return error instanceof DiscordAPIError && codes.includes(Number(error.code));
}

/**
 * The multipart body @discordjs/rest would build from `files` (the file as `files[0]`, then the JSON as
 * `payload_json`), except that the file part reads from disk as the request goes out: @discordjs/rest
 * copies `files[].data` into a Blob, so a video given as bytes is held in memory whole, and copied.
 * It must be the global FormData: @discordjs/rest passes a body through as is only when it is an
 * instance of that class (its undici, 6.x, then encodes it and streams each part), and would try to
 * read any other FormData as a list of chunks.
 */
async function multipartFromDisk(
  payload: RESTPostAPIChannelMessageJSONBody | RESTPatchAPIChannelMessageJSONBody,
  file: { name: string; contentType: string; path: string },
): Promise<FormData> {
  const form = new FormData();
  form.append('files[0]', await openAsBlob(file.path, { type: file.contentType }), file.name);
  form.append('payload_json', JSON.stringify(payload));
  return form;
}

/** A card with one line of text: what stands for a card too long to show. */
function noticeCard(text: string): ComponentsV2Message {
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [{ type: ComponentType.Container, components: [{ type: ComponentType.TextDisplay, content: text }] }],
  };
}

export interface OutboxOptions {
  /** Where a message over Discord's limits is reported (default: nowhere). */
  log?: Logger;
}

export class DiscordOutbox {
  readonly #rest: REST;
  readonly #log: Logger;
  /** The bot's user id, asked once (again after a failure). */
  readonly #botUserId = onceUntilFailure(() => this.#askOwnUserId());

  constructor(rest: REST, options: OutboxOptions = {}) {
    this.#rest = rest;
    this.#log = options.log ?? silentLogger;
  }

  /**
   * Sends `message` through `send`; one over Discord's limits (`broken`, or refused by Discord with
   * 50035) goes as `notice` instead, logged once with the limit or the fields Discord named.
   */
  async #fitting<Message, Sent>(
    what: string,
    message: Message,
    broken: BrokenLimit | undefined,
    notice: () => Message,
    send: (message: Message) => Promise<Sent>,
  ): Promise<Sent> {
    if (broken) {
      this.#log.warn(`${what} over a Discord limit, not sent; a notice stands for it`, { ...broken });
      return send(notice());
    }
    try {
      return await send(message);
    } catch (error) {
      const fields = refusedFields(error);
      if (!fields) throw error;
      this.#log.warn(`Discord refused a ${what} as an invalid form (a limit broken); a notice stands for it`, { fields });
      return send(notice());
    }
  }

  /** What stands for a card too long to show: the same card's attachments, and a line saying so. */
  #cardNotice(edit: CardEdit): CardEdit {
    return { ...noticeCard(t(edit.locale ?? ENGLISH, 'answer.too-long')), ...(edit.keep ? { keep: edit.keep } : {}) };
  }

  /**
   * Edits a status card; the message as edited (its id, and the url of the file uploaded with the edit),
   * or undefined when there is no way to reach it (the token expired before its id was known). Through the
   * interaction token while it lives; after that (or when Discord says the token is gone) as the bot's own
   * channel message. The edit lists only the file it uploads as the card's attachments, so an edit made
   * twice (its first answer lost) leaves one file, and an edit without a file leaves none.
   */
  async editCard(card: CardAddress, edit: CardEdit, now = Date.now()): Promise<PostedMessage | undefined> {
    return this.#fitting(
      'status card edit',
      edit,
      brokenLimit({ card: edit.components }, Infinity),
      () => this.#cardNotice(edit),
      (fitting) => this.#editCardAsItIs(card, fitting, now),
    );
  }

  async #editCardAsItIs(card: CardAddress, edit: CardEdit, now: number): Promise<PostedMessage | undefined> {
    if (now < card.tokenExpiresAt) {
      try {
        return parsePostedMessage(
          await this.#patchMessage(Routes.webhookMessage(card.applicationId, card.interactionToken, '@original'), edit, false),
          edit.file?.name,
        );
      } catch (error) {
        if (!isDiscordError(error, DISCORD_ERRORS.invalidWebhookToken, DISCORD_ERRORS.unknownWebhook)) throw error;
      }
    }
    if (!card.messageId) return undefined;
    return parsePostedMessage(await this.#patchMessage(Routes.channelMessage(card.channelId, card.messageId), edit, true), edit.file?.name);
  }

  /**
   * Deletes a status card: as the bot's own channel message when its id is known, else through the
   * interaction token while it lives. `gone` when Discord no longer has it (deleted already, by anyone);
   * `unreachable` when neither way is left. A member waits on the answer, so Discord's rate limits are
   * waited out only until `deadlineMs`, then the deletion is given up (the signal's TimeoutError): it never
   * stalls their press for the 15 s a REST call may take, or longer behind a rate limit. A request already
   * on its way at the deadline may still delete the card; the next press then finds it `gone`.
   */
  async deleteCard(card: CardAddress, deadlineMs = DELETE_DEADLINE_MS, now = Date.now()): Promise<'deleted' | 'gone' | 'unreachable'> {
    const route = card.messageId
      ? Routes.channelMessage(card.channelId, card.messageId)
      : now < card.tokenExpiresAt
        ? Routes.webhookMessage(card.applicationId, card.interactionToken, '@original')
        : undefined;
    if (!route) return 'unreachable';
    try {
      // The signal alone would not end a wait behind a rate limit (the REST client sleeps it out), but it keeps
      // the retry after that wait from going out: a card the member was told is still there stays there.
      const deadline = AbortSignal.timeout(deadlineMs);
      await untilAborted(this.#rest.delete(route, { auth: card.messageId !== undefined, signal: deadline }), deadline);
      return 'deleted';
    } catch (error) {
      if (isDiscordError(error, DISCORD_ERRORS.unknownMessage)) return 'gone';
      throw error;
    }
  }

  /**
   * A status card as a new channel message, pinging nobody: the first card of a video asked for by voice,
   * or a card posted again with its video when the first is out of reach. With `nonce` (enforced), Discord
   * answers a repeat within a few minutes with the first message instead of a second.
   */
  async postCard(channelId: string, card: CardEdit, nonce?: string): Promise<PostedMessage> {
    return this.#fitting(
      'status card',
      card,
      brokenLimit({ card: card.components }, Infinity),
      () => this.#cardNotice(card),
      (fitting) => this.#postCardAsItIs(channelId, fitting, nonce),
    );
  }

  async #postCardAsItIs(channelId: string, card: CardEdit, nonce: string | undefined): Promise<PostedMessage> {
    const { file, keep: _kept, locale: _locale, ...layout } = card;
    const body: RESTPostAPIChannelMessageJSONBody = {
      ...layout,
      allowed_mentions: { parse: [] },
      ...(nonce === undefined ? {} : { nonce, enforce_nonce: true }),
      ...(file ? { attachments: [{ id: 0, filename: file.name }] } : {}),
    };
    return parsePostedMessage(await this.#send('post', Routes.channelMessages(channelId), body, file, true));
  }

  async #patchMessage(route: `/${string}`, edit: CardEdit, auth: boolean): Promise<unknown> {
    const { file, keep = [], locale: _locale, ...card } = edit;
    const body: RESTPatchAPIChannelMessageJSONBody = {
      ...card,
      attachments: [...keep.map(({ id, filename }) => ({ id, filename })), ...(file ? [{ id: 0, filename: file.name }] : [])],
      allowed_mentions: { parse: [] },
    };
    return this.#send('patch', route, body, file, auth);
  }

  /** Sends a message's body with its file, if any: streamed from disk, or from memory. */
  async #send(
    method: 'post' | 'patch',
    route: `/${string}`,
    body: RESTPostAPIChannelMessageJSONBody | RESTPatchAPIChannelMessageJSONBody,
    file: FileToPost | undefined,
    auth: boolean,
  ): Promise<unknown> {
    const request = method === 'post' ? this.#rest.post.bind(this.#rest) : this.#rest.patch.bind(this.#rest);
    if (!file) return request(route, { body, auth });
    if ('path' in file) return request(route, { body: await multipartFromDisk(body, file), passThroughBody: true, auth });
    return request(route, { body, auth, files: [{ name: file.name, data: file.data, contentType: file.contentType }] });
  }

  /**
   * Edits a message an interaction answered with (`@original`, or a follow-up's id) through its token: the
   * only way to edit a private (ephemeral) answer. Fails once the token has expired (15 minutes).
   */
  async editInteractionMessage(message: InteractionMessage, payload: MessagePayload, locale: Locale = ENGLISH): Promise<void> {
    const notice = (): MessagePayload => ({ content: t(locale, 'answer.too-long'), embeds: [], components: [] });
    await this.#fitting('answer edit', payload, brokenLimit(payload, Infinity), notice, async (body) => {
      await this.#rest.patch(Routes.webhookMessage(message.applicationId, message.interactionToken, message.messageId), {
        body,
        auth: false,
      });
    });
  }

  /**
   * A plain message that pings nobody; the id of its first part. Text the bot does not write itself (a
   * transcript line) can be longer than one message allows: it goes out as several, in order. Without
   * `linkPreviews` the links it holds show no preview (a log line's prompt may hold any link); `components`
   * (buttons) go under its first part.
   */
  async say(
    channelId: string,
    content: string,
    { linkPreviews = true, components }: { linkPreviews?: boolean; components?: MessagePayload['components'] } = {},
  ): Promise<string> {
    let firstId: string | undefined;
    for (const piece of splitContent(content)) {
      const message: unknown = await this.#rest.post(Routes.channelMessages(channelId), {
        body: {
          content: piece,
          allowed_mentions: { parse: [] },
          ...(linkPreviews ? {} : { flags: MessageFlags.SuppressEmbeds }),
          // Buttons go under the first part, which the rest continue.
          ...(components && firstId === undefined ? { components } : {}),
        },
      });
      firstId ??= parsePostedMessage(message).messageId;
    }
    if (firstId === undefined) throw new Error('nothing to say');
    return firstId;
  }

  /**
   * A short message that pings one member and nobody else (no role, no @everyone, not the author of the
   * message it replies to); a reply to `replyTo` when given, posted all the same should that message be gone.
   * Its id.
   */
  async pingMember(channelId: string, userId: string, content: string, replyTo?: string): Promise<string> {
    const body: RESTPostAPIChannelMessageJSONBody = {
      content,
      allowed_mentions: { parse: [], users: [userId], replied_user: false },
      ...(replyTo === undefined ? {} : { message_reference: { message_id: replyTo, fail_if_not_exists: false } }),
    };
    return parsePostedMessage(await this.#rest.post(Routes.channelMessages(channelId), { body })).messageId;
  }

  /** Replaces the text of one of the bot's plain messages (say()'s), pinging nobody. */
  async editText(channelId: string, messageId: string, content: string): Promise<void> {
    await this.#rest.patch(Routes.channelMessage(channelId, messageId), { body: { content, allowed_mentions: { parse: [] } } });
  }

  /** Deletes one of the bot's plain messages; `gone` when Discord no longer has it (deleted already, by anyone). */
  async deleteMessage(channelId: string, messageId: string): Promise<'deleted' | 'gone'> {
    try {
      await this.#rest.delete(Routes.channelMessage(channelId, messageId));
      return 'deleted';
    } catch (error) {
      if (isDiscordError(error, DISCORD_ERRORS.unknownMessage, DISCORD_ERRORS.unknownChannel)) return 'gone';
      throw error;
    }
  }

  /** A public thread started from a message; its channel id. */
  async startThread(channelId: string, messageId: string, name: string): Promise<string> {
    const thread: unknown = await this.#rest.post(Routes.threads(channelId, messageId), {
      body: { name: graphemePrefix(name, MAX_THREAD_NAME_LENGTH), auto_archive_duration: THREAD_ARCHIVE_MINUTES },
    });
    const id = readString(thread, 'id');
    if (!id) throw new Error('Discord answered a thread creation without an id');
    return id;
  }

  /**
   * The bot's own messages among the channel's most recent ones, newest first. Needs Read Message
   * History; Discord refuses with 50001 without it.
   */
  async recentOwnMessages(channelId: string): Promise<OwnMessage[]> {
    const botUserId = await this.#botUserId();
    const page: unknown = await this.#rest.get(Routes.channelMessages(channelId), {
      query: new URLSearchParams({ limit: String(RECENT_MESSAGES) }),
    });
    return (Array.isArray(page) ? page : [])
      .filter((message) => readString(readRecord(message, 'author'), 'id') === botUserId)
      .flatMap((message) => {
        const posted = readString(message, 'id') === undefined ? undefined : parsePostedMessage(message);
        return posted ? [{ ...posted, nonce: nonceOf(message), customIds: customIdsOf(message) }] : [];
      });
  }

  /** The bot's DM channel with a user (POST /users/@me/channels: the same channel each time), opened when it is not yet; its id. */
  async openDm(userId: string): Promise<string> {
    const channel: unknown = await this.#rest.post(Routes.userChannels(), { body: { recipient_id: userId } });
    const id = readString(channel, 'id');
    if (!id) throw new Error('Discord answered a DM channel without an id');
    return id;
  }

  async #askOwnUserId(): Promise<string> {
    const id = readString(await this.#rest.get(Routes.user()), 'id');
    if (!id) throw new Error('Discord answered /users/@me without an id');
    return id;
  }

  /**
   * A fresh (re-signed) url of a posted message's attachment named `fileName` (a job's card has one per
   * variant), or else its first: CDN urls expire after about a day.
   */
  async attachmentUrl(channelId: string, messageId: string, fileName?: string): Promise<string | undefined> {
    const message: unknown = await this.#rest.get(Routes.channelMessage(channelId, messageId));
    return parsePostedMessage(message, fileName).attachmentUrl;
  }
}
