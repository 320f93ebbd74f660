import type { DiscordStandIn, Message } from 'discord-standin';

// Reading the bot's status cards (Components V2 messages) as a member sees them, and checking them
// against Discord's rules for such messages. The stand-in enforces the same rules at its REST boundary;
// this check also runs where no REST call is made (a card rendered in a unit test).

const IS_COMPONENTS_V2 = 1 << 15;
const TYPES = { actionRow: 1, button: 2, section: 9, textDisplay: 10, thumbnail: 11, mediaGallery: 12, container: 17 } as const;
const LIMITS = { components: 40, textLength: 4000, galleryItems: { min: 1, max: 10 } } as const;

type Json = Readonly<Record<string, unknown>>;

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every component of a message, nested ones too (a container's children, a row's buttons, a section's accessory), depth first. */
export function allComponents(components: readonly unknown[]): Json[] {
  return components
    .filter(isJson)
    .flatMap((component) => [
      component,
      ...allComponents(Array.isArray(component.components) ? component.components : []),
      ...(isJson(component.accessory) ? allComponents([component.accessory]) : []),
    ]);
}

/** A card, or anything shaped like one: a stand-in message, or the payload the bot renders. */
export interface CardLike {
  components: readonly unknown[];
}

/** The text a member reads on a card: its text displays, in order, one per line. */
export function cardText(card: CardLike | undefined): string {
  if (!card) return '';
  return allComponents(card.components)
    .filter((component) => component.type === TYPES.textDisplay && typeof component.content === 'string')
    .map((component) => String(component.content))
    .join('\n');
}

/** Waits until the card (read afresh each time) says `words`, and returns its text then. */
export function cardSaying(discord: DiscordStandIn, card: () => CardLike | undefined, words: string, timeoutMs = 10_000): Promise<string> {
  return discord.waitFor(
    () => {
      const text = cardText(card());
      return text.includes(words) ? text : undefined;
    },
    timeoutMs,
    `a card saying "${words}"`,
  );
}

/** The media urls of a card's galleries, in order (`attachment://<name>` for a file uploaded with it). */
export function galleryItems(card: CardLike | undefined): string[] {
  if (!card) return [];
  return allComponents(card.components)
    .filter((component) => component.type === TYPES.mediaGallery)
    .flatMap((gallery): unknown[] => (Array.isArray(gallery.items) ? gallery.items : []))
    .flatMap((item) => {
      const url = isJson(item) && isJson(item.media) ? item.media.url : undefined;
      return typeof url === 'string' ? [url] : [];
    });
}

export interface CardButton {
  label: string;
  customId?: string;
  url?: string;
}

/** A card's buttons, in order: their labels and custom ids, or urls for link buttons. */
export function cardButtons(card: CardLike | undefined): CardButton[] {
  if (!card) return [];
  return allComponents(card.components)
    .filter((component) => component.type === TYPES.button)
    .map((button) => ({
      label: typeof button.label === 'string' ? button.label : '',
      ...(typeof button.custom_id === 'string' ? { customId: button.custom_id } : {}),
      ...(typeof button.url === 'string' ? { url: button.url } : {}),
    }));
}

/** The task ref (`v…`) a card shows in its footer. */
export function cardRef(card: CardLike | undefined): string | undefined {
  return /\bref (v[0-9a-z]+)/.exec(cardText(card))?.[1];
}

/** The gateway's task id a card shows (`task_…` on the compatibility layer, `req_…` on the native one). */
export function cardGatewayId(card: CardLike | undefined): string | undefined {
  return /\btask `([^`]+)`/.exec(cardText(card))?.[1];
}

export interface ComponentsV2Payload {
  flags?: unknown;
  content?: unknown;
  embeds?: unknown;
  components?: unknown;
}

/**
 * What a message body breaks of Discord's rules for Components V2 messages, in words (empty when none):
 * the flag set, no content or embeds beside it, at most 40 components in all and 4000 characters of text
 * displays, galleries of 1 to 10 items, and every `attachment://` name one of `files` (the files the
 * message has: uploaded with this request or kept from before).
 */
export function componentsV2Problems(payload: ComponentsV2Payload, files: readonly string[]): string[] {
  const problems: string[] = [];
  if (typeof payload.flags !== 'number' || (payload.flags & IS_COMPONENTS_V2) === 0) problems.push('the IS_COMPONENTS_V2 flag is not set');
  if (typeof payload.content === 'string' && payload.content !== '') problems.push('it has content');
  if (Array.isArray(payload.embeds) && payload.embeds.length > 0) problems.push('it has embeds');
  const top = Array.isArray(payload.components) ? payload.components : [];
  if (top.length === 0) problems.push('it has no components');
  const components = allComponents(top);
  if (components.length > LIMITS.components) problems.push(`${components.length} components, over ${LIMITS.components}`);
  const textLength = components
    .filter((component) => component.type === TYPES.textDisplay)
    .reduce((sum, component) => sum + (typeof component.content === 'string' ? component.content.length : 0), 0);
  if (textLength > LIMITS.textLength) problems.push(`${textLength} characters of text, over ${LIMITS.textLength}`);
  for (const gallery of components.filter((component) => component.type === TYPES.mediaGallery)) {
    const count = Array.isArray(gallery.items) ? gallery.items.length : 0;
    if (count < LIMITS.galleryItems.min || count > LIMITS.galleryItems.max)
      problems.push(`a media gallery of ${count} items, not ${LIMITS.galleryItems.min}-${LIMITS.galleryItems.max}`);
  }
  for (const url of galleryItems({ components: top })) {
    if (url.startsWith('attachment://') && !files.includes(url.slice('attachment://'.length)))
      problems.push(`${url} names no file of the message (${files.join(', ') || 'none'})`);
    else if (!url.startsWith('attachment://') && !/^https?:\/\//.test(url)) problems.push(`${url} is not an http(s) or attachment:// url`);
  }
  for (const button of components.filter((component) => component.type === TYPES.button)) {
    if ((typeof button.url === 'string') === (typeof button.custom_id === 'string'))
      problems.push(`button "${String(button.label)}" needs a url or a custom id`);
  }
  return problems;
}

/**
 * What the edits of a card message break of the Components V2 rules, each prefixed with its edit's
 * number: every edit that carries components (the first one of a deferred reply on) is checked, against
 * the files the message had then (those uploaded by earlier edits, unless an edit dropped them, and its own).
 */
export function cardEditProblems(message: Message): string[] {
  let files: string[] =
    message.attachments.length > 0 && message.edits.length === 0 ? message.attachments.map((file) => file.filename) : [];
  return message.edits.flatMap((edit, index) => {
    const listed = Array.isArray(edit.json.attachments) ? edit.json.attachments.filter(isJson) : undefined;
    // An edit that lists attachments keeps only the existing ones it lists by id; uploads are listed by their part's index.
    if (listed !== undefined)
      files = files.filter((name) => listed.some((entry) => entry.filename === name && typeof entry.id === 'string'));
    files = [...files, ...edit.files];
    if (!('components' in edit.json)) return [];
    const flags = typeof edit.json.flags === 'number' ? edit.json.flags : message.flags;
    return componentsV2Problems({ ...edit.json, flags }, files).map((problem) => `edit ${index + 1}: ${problem}`);
  });
}
