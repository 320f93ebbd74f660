import { isRecord } from '../lib/json.ts';
import type { StoredAttachment } from '../world/state.ts';
import { FieldErrorList, badLength, fieldError, required, tooLong, typeChoices, type FieldErrors, type FieldPath } from './errors.ts';

// A message's components as Discord checks them, with and without the IS_COMPONENTS_V2 flag
// (README.md, "Components V2"): which component may sit where, how many, how much text, and which
// files an `attachment://` url may name.

/** Message flag 1 << 15: the message is laid out by components alone. Once set it stays. */
export const IS_COMPONENTS_V2 = 1 << 15;

export const COMPONENT = {
  actionRow: 1,
  button: 2,
  stringSelect: 3,
  textInput: 4,
  userSelect: 5,
  roleSelect: 6,
  mentionableSelect: 7,
  channelSelect: 8,
  section: 9,
  textDisplay: 10,
  thumbnail: 11,
  mediaGallery: 12,
  file: 13,
  separator: 14,
  container: 17,
  label: 18,
  fileUpload: 19,
  radioGroup: 21,
  checkboxGroup: 22,
  checkbox: 23,
} as const;

const C = COMPONENT;
const SELECTS: readonly number[] = [C.stringSelect, C.userSelect, C.roleSelect, C.mentionableSelect, C.channelSelect];
/** What a message may hold at its top level, with the flag and without it (action rows only). */
const TOP_LEVEL_V2: readonly number[] = [C.actionRow, C.section, C.textDisplay, C.mediaGallery, C.file, C.separator, C.container];
const TOP_LEVEL_CLASSIC: readonly number[] = [C.actionRow];
const IN_CONTAINER: readonly number[] = [C.actionRow, C.section, C.textDisplay, C.mediaGallery, C.file, C.separator];
const IN_ACTION_ROW: readonly number[] = [C.button, ...SELECTS];
const SECTION_ACCESSORY: readonly number[] = [C.button, C.thumbnail];

export const COMPONENT_LIMITS = {
  /** Every component in the tree, nested ones included, with the flag. */
  totalComponents: 40,
  /** All text displays' content together, with the flag. */
  totalText: 4000,
  /** Action rows in a message without the flag. */
  classicRows: 5,
  rowButtons: 5,
  galleryItems: { min: 1, max: 10 },
  sectionTexts: { min: 1, max: 3 },
  selectOptions: { min: 1, max: 25 },
  customId: 100,
  buttonLabel: 80,
  mediaDescription: 1024,
} as const;

const L = COMPONENT_LIMITS;
const ATTACHMENT_SCHEME = 'attachment://';
/** Link and premium buttons carry no custom id. */
const BUTTON_STYLES_WITHOUT_CUSTOM_ID: readonly unknown[] = [5, 6];

export interface MessageBefore {
  flags: number;
  content: string;
  embeds: unknown[];
}

export interface ComponentCheck {
  /** The message an edit changes; undefined for a new message. */
  editing?: MessageBefore | undefined;
  /** The filenames an `attachment://<name>` may name: the files uploaded with the request and those the message keeps. */
  attachable: ReadonlySet<string>;
}

function used(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.length > 0;
  return true;
}

/** Whether the message a body makes (or leaves, for an edit without flags) carries IS_COMPONENTS_V2. */
export function isComponentsV2(json: Readonly<Record<string, unknown>>, editing?: MessageBefore): boolean {
  if (typeof json.flags === 'number') return (json.flags & IS_COMPONENTS_V2) !== 0;
  return editing ? (editing.flags & IS_COMPONENTS_V2) !== 0 : false;
}

/**
 * The errors of a message body's flag and components, as Discord's `errors` tree; undefined when it
 * keeps every rule. The flag comes from the body when it has `flags`, else from the message it edits:
 * Discord validates the body as it is sent, and keeps the flag on the message once set.
 */
export function componentErrors(json: Readonly<Record<string, unknown>>, check: ComponentCheck): FieldErrors | undefined {
  const found = new FieldErrorList();
  const { editing } = check;
  const had = editing ? (editing.flags & IS_COMPONENTS_V2) !== 0 : false;
  const v2 = isComponentsV2(json, editing);
  if (had && !v2)
    found.add(fieldError(['flags'], 'MESSAGE_CANNOT_REMOVE_COMPONENTS_V2_FLAG', 'The IS_COMPONENTS_V2 flag cannot be removed once set.'));
  if (v2) {
    // An edit that turns the flag on must empty what the message used: Discord does not drop it for you.
    const before: Record<string, unknown> = editing && !had ? { content: editing.content, embeds: editing.embeds } : {};
    for (const field of ['content', 'embeds', 'sticker_ids', 'poll']) {
      if (used(field in json ? json[field] : before[field]))
        found.add(
          fieldError(
            [field],
            'MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2',
            `The '${field}' field cannot be used when using MessageFlags.IS_COMPONENTS_V2`,
          ),
        );
    }
  }
  if (Array.isArray(json.components)) {
    const walk = new ComponentWalk(found, check.attachable);
    const top = json.components;
    if (!v2 && top.length > L.classicRows) found.add(tooLong(['components'], L.classicRows));
    for (const [index, component] of top.entries()) walk.component(component, ['components', index], v2 ? TOP_LEVEL_V2 : TOP_LEVEL_CLASSIC);
    if (v2 && walk.count > L.totalComponents)
      found.add(
        fieldError(
          ['components'],
          'COMPONENT_MAX_TOTAL_COMPONENTS_EXCEEDED',
          `The specified components exceed the maximum of ${L.totalComponents} components.`,
        ),
      );
    if (v2 && walk.text > L.totalText)
      found.add(
        fieldError(
          ['components'],
          'COMPONENT_MAX_TOTAL_TEXT_LENGTH_EXCEEDED',
          `The text of all text displays must be ${L.totalText} or fewer in length.`,
        ),
      );
  }
  return found.errors;
}

/** One pass over a component tree: errors at each component's path, and the totals Discord caps. */
class ComponentWalk {
  count = 0;
  text = 0;
  readonly #found: FieldErrorList;
  readonly #attachable: ReadonlySet<string>;

  constructor(found: FieldErrorList, attachable: ReadonlySet<string>) {
    this.#found = found;
    this.#attachable = attachable;
  }

  component(value: unknown, path: FieldPath, allowed: readonly number[]): void {
    this.count++;
    const type = isRecord(value) ? value.type : undefined;
    if (!isRecord(value) || typeof type !== 'number' || !allowed.includes(type)) {
      this.#found.add(typeChoices(path, allowed));
      return;
    }
    switch (type) {
      case C.actionRow:
        this.#actionRow(value, path);
        break;
      case C.button:
        this.#button(value, path);
        break;
      case C.section:
        this.#section(value, path);
        break;
      case C.textDisplay:
        if (typeof value.content !== 'string') this.#found.add(required([...path, 'content']));
        else this.text += value.content.length;
        break;
      case C.thumbnail:
        this.#media(value.media, [...path, 'media'], false);
        this.#description(value.description, [...path, 'description']);
        break;
      case C.mediaGallery:
        this.#gallery(value, path);
        break;
      case C.file:
        this.#media(value.file, [...path, 'file'], true);
        break;
      case C.container: {
        const children = Array.isArray(value.components) ? value.components : undefined;
        if (!children) this.#found.add(required([...path, 'components']));
        for (const [index, child] of (children ?? []).entries()) this.component(child, [...path, 'components', index], IN_CONTAINER);
        break;
      }
      default:
        if (SELECTS.includes(type)) this.#select(value, path);
    }
  }

  #customId(value: unknown, path: FieldPath, needed: boolean): void {
    if (typeof value !== 'string' || value.length === 0) {
      if (needed) this.#found.add(required(path));
    } else if (value.length > L.customId) this.#found.add(tooLong(path, L.customId));
  }

  #actionRow(row: Readonly<Record<string, unknown>>, path: FieldPath): void {
    const children = Array.isArray(row.components) ? row.components : [];
    if (children.length > L.rowButtons) this.#found.add(tooLong([...path, 'components'], L.rowButtons));
    // A row holds up to five buttons or one select, never both.
    const selects = children.filter((child) => isRecord(child) && typeof child.type === 'number' && SELECTS.includes(child.type));
    if (selects.length > 0 && children.length > 1)
      this.#found.add(
        fieldError([...path, 'components'], 'COMPONENT_LAYOUT_WIDTH_EXCEEDED', 'The specified component exceeds the maximum width'),
      );
    for (const [index, child] of children.entries()) this.component(child, [...path, 'components', index], IN_ACTION_ROW);
  }

  #button(button: Readonly<Record<string, unknown>>, path: FieldPath): void {
    this.#customId(button.custom_id, [...path, 'custom_id'], !BUTTON_STYLES_WITHOUT_CUSTOM_ID.includes(button.style));
    if (typeof button.label === 'string' && button.label.length > L.buttonLabel)
      this.#found.add(tooLong([...path, 'label'], L.buttonLabel));
  }

  #select(select: Readonly<Record<string, unknown>>, path: FieldPath): void {
    this.#customId(select.custom_id, [...path, 'custom_id'], true);
    if (select.type !== C.stringSelect) return;
    const options = Array.isArray(select.options) ? select.options : [];
    if (options.length < L.selectOptions.min || options.length > L.selectOptions.max)
      this.#found.add(badLength([...path, 'options'], L.selectOptions.min, L.selectOptions.max));
  }

  #section(section: Readonly<Record<string, unknown>>, path: FieldPath): void {
    const texts = Array.isArray(section.components) ? section.components : [];
    if (texts.length < L.sectionTexts.min || texts.length > L.sectionTexts.max)
      this.#found.add(badLength([...path, 'components'], L.sectionTexts.min, L.sectionTexts.max));
    for (const [index, text] of texts.entries()) this.component(text, [...path, 'components', index], [C.textDisplay]);
    if (section.accessory === undefined || section.accessory === null) this.#found.add(required([...path, 'accessory']));
    else this.component(section.accessory, [...path, 'accessory'], SECTION_ACCESSORY);
  }

  #gallery(gallery: Readonly<Record<string, unknown>>, path: FieldPath): void {
    const items = Array.isArray(gallery.items) ? gallery.items : [];
    if (items.length < L.galleryItems.min || items.length > L.galleryItems.max)
      this.#found.add(badLength([...path, 'items'], L.galleryItems.min, L.galleryItems.max));
    for (const [index, item] of items.entries()) {
      const itemPath = [...path, 'items', index];
      this.#media(isRecord(item) ? item.media : undefined, [...itemPath, 'media'], false);
      if (isRecord(item)) this.#description(item.description, [...itemPath, 'description']);
    }
  }

  #description(value: unknown, path: FieldPath): void {
    if (typeof value === 'string' && value.length > L.mediaDescription) this.#found.add(tooLong(path, L.mediaDescription));
  }

  /** An unfurled media item: a url, or `attachment://<name>` naming a file of the request or the message. */
  #media(media: unknown, path: FieldPath, attachmentOnly: boolean): void {
    const url = isRecord(media) ? media.url : undefined;
    const urlPath = [...path, 'url'];
    if (typeof url !== 'string' || url.length === 0) {
      this.#found.add(required(urlPath));
      return;
    }
    if (url.startsWith(ATTACHMENT_SCHEME)) {
      const name = url.slice(ATTACHMENT_SCHEME.length);
      if (!this.#attachable.has(name))
        this.#found.add(
          fieldError(
            urlPath,
            'UNFURLED_MEDIA_ITEM_ATTACHMENT_NOT_FOUND',
            `No attachment named "${name}" in this request or on the message.`,
          ),
        );
    } else if (attachmentOnly) {
      // Discord: a file component only takes attachment:// references.
      this.#found.add(
        fieldError(urlPath, 'UNFURLED_MEDIA_ITEM_ATTACHMENT_ONLY', 'A file component only supports attachment://<filename> urls.'),
      );
    }
  }
}

/**
 * The components as Discord stores them: each `attachment://<name>` media url replaced by the
 * attachment's own (url, proxy_url, content_type, attachment_id), and a file component given the file's
 * name and size, as the API answers them.
 */
export function resolveAttachmentReferences(components: unknown[], attachments: readonly StoredAttachment[]): unknown[] {
  const byName = new Map(attachments.map((attachment) => [attachment.filename, attachment]));
  const media = (value: unknown): unknown => {
    if (!isRecord(value) || typeof value.url !== 'string' || !value.url.startsWith(ATTACHMENT_SCHEME)) return value;
    const attachment = byName.get(value.url.slice(ATTACHMENT_SCHEME.length));
    if (!attachment) return value;
    return { ...value, url: attachment.url, proxy_url: attachment.url, content_type: attachment.contentType, attachment_id: attachment.id };
  };
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (!isRecord(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = key === 'media' || key === 'file' ? media(inner) : resolve(inner);
    if (value.type === C.file && isRecord(value.file) && typeof value.file.url === 'string') {
      const attachment = byName.get(value.file.url.slice(ATTACHMENT_SCHEME.length));
      if (attachment) Object.assign(out, { name: attachment.filename, size: attachment.bytes.length });
    }
    return out;
  };
  return components.map(resolve);
}
