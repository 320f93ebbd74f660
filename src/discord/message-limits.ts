import {
  DiscordAPIError,
  type APIActionRowComponent,
  type APIComponentInMessageActionRow,
  type APIEmbed,
  type APIMessageTopLevelComponent,
  type APIModalInteractionResponseCallbackData,
} from 'discord.js';
import { isRecord, readArray, readRecord } from '../lib/json.ts';

// Discord's limits on one message (packages/discord-standin/README.md, "Limits it enforces" and
// "Components V2"): a message over any of them is refused whole with 400 / 50035. Checked before an
// answer is sent, so that what is refused is known by name instead of surfacing as a REST error.

export const MESSAGE_LIMITS = {
  content: 2000,
  embeds: 10,
  embedTitle: 256,
  embedDescription: 4096,
  embedFields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footerText: 2048,
  authorName: 256,
  embedTotal: 6000,
  /** Action rows of a message without Components V2, and buttons in one row. */
  actionRows: 5,
  rowComponents: 5,
  /** With Components V2: every component of the tree, and all text displays' text together. */
  cardComponents: 40,
  cardText: 4000,
  files: 10,
  /** A whole request, whatever the server's upload limit. */
  requestBytes: 25 * 1024 * 1024,
} as const;

const TEXT_DISPLAY = 10;

/** What a message carries, as far as its limits go. */
export interface MessageParts {
  content?: string;
  embeds?: readonly APIEmbed[];
  components?: readonly APIActionRowComponent<APIComponentInMessageActionRow>[];
  card?: readonly APIMessageTopLevelComponent[];
  files?: readonly { name: string; data: Buffer }[];
}

/**
 * A limit a message breaks: the field that breaks it (`embeds.0.description`, as Discord's errors name
 * it), the limit's name (as in MESSAGE_LIMITS or MODAL_LIMITS), what the message has and what Discord allows.
 */
export interface BrokenLimit {
  field: string;
  limit: string;
  actual: number;
  max: number;
}

function over(field: string, limit: string, actual: number, max: number): BrokenLimit | undefined {
  return actual > max ? { field, limit, actual, max } : undefined;
}

function embedLimit(embeds: readonly APIEmbed[]): BrokenLimit | undefined {
  const L = MESSAGE_LIMITS;
  let total = 0;
  for (const [index, embed] of embeds.entries()) {
    const at = `embeds.${index}`;
    const fields = embed.fields ?? [];
    const texts: [string, string, string | undefined, number][] = [
      [`${at}.title`, 'embedTitle', embed.title, L.embedTitle],
      [`${at}.description`, 'embedDescription', embed.description, L.embedDescription],
      [`${at}.footer.text`, 'footerText', embed.footer?.text, L.footerText],
      [`${at}.author.name`, 'authorName', embed.author?.name, L.authorName],
      ...fields.flatMap((field, place): [string, string, string, number][] => [
        [`${at}.fields.${place}.name`, 'fieldName', field.name, L.fieldName],
        [`${at}.fields.${place}.value`, 'fieldValue', field.value, L.fieldValue],
      ]),
    ];
    const broken =
      over(`${at}.fields`, 'embedFields', fields.length, L.embedFields) ??
      texts.map(([field, limit, text, max]) => over(field, limit, text?.length ?? 0, max)).find(Boolean);
    if (broken) return broken;
    total += texts.reduce((sum, [, , text]) => sum + (text?.length ?? 0), 0);
  }
  return over('embeds', 'embedTotal', total, L.embedTotal);
}

/** Every component of a Components V2 tree and the text of its text displays. */
function cardSize(components: readonly unknown[]): { count: number; text: number } {
  let count = 0;
  let text = 0;
  const walk = (component: unknown): void => {
    if (typeof component !== 'object' || component === null) return;
    count++;
    if ('type' in component && component.type === TEXT_DISPLAY && 'content' in component && typeof component.content === 'string')
      text += component.content.length;
    if ('components' in component && Array.isArray(component.components)) component.components.forEach(walk);
    if ('accessory' in component) walk(component.accessory);
  };
  components.forEach(walk);
  return { count, text };
}

/**
 * The first of Discord's limits that `message` breaks, or undefined when it keeps them all;
 * `fileBytes` is the server's upload limit for one file (the interaction's `attachmentSizeLimit`).
 */
export function brokenLimit(message: MessageParts, fileBytes: number): BrokenLimit | undefined {
  const L = MESSAGE_LIMITS;
  const files = message.files ?? [];
  const rows = message.components ?? [];
  const card = message.card ? cardSize(message.card) : { count: 0, text: 0 };
  return (
    over('content', 'content', message.content?.length ?? 0, L.content) ??
    over('embeds', 'embeds', message.embeds?.length ?? 0, L.embeds) ??
    embedLimit(message.embeds ?? []) ??
    over('components', 'actionRows', rows.length, L.actionRows) ??
    rows
      .map((row, index) => over(`components.${index}.components`, 'rowComponents', row.components.length, L.rowComponents))
      .find(Boolean) ??
    over('components', 'cardComponents', card.count, L.cardComponents) ??
    over('components', 'cardText', card.text, L.cardText) ??
    over('files', 'files', files.length, L.files) ??
    files.map((file, index) => over(`files.${index}`, 'fileBytes', file.data.length, fileBytes)).find(Boolean) ??
    over(
      'files',
      'requestBytes',
      files.reduce((sum, file) => sum + file.data.length, 0),
      L.requestBytes,
    )
  );
}

/** Discord's limits on a modal (a form), as the stand-in's README lists them ("Modals"). */
export const MODAL_LIMITS = {
  title: 45,
  components: 5,
  customId: 100,
  label: 45,
  labelDescription: 100,
  placeholder: 100,
  textInputValue: 4000,
} as const;

const ACTION_ROW = 1;
const LABEL = 18;

/** The text limits of one input of a form (a text input, or a select), at `at`. */
function inputLimit(input: unknown, at: string, withLabel: boolean): BrokenLimit | undefined {
  const L = MODAL_LIMITS;
  const length = (key: string) => {
    const value = isRecord(input) ? input[key] : undefined;
    return typeof value === 'string' ? value.length : 0;
  };
  return (
    (withLabel ? over(`${at}.label`, 'label', length('label'), L.label) : undefined) ??
    over(`${at}.placeholder`, 'placeholder', length('placeholder'), L.placeholder) ??
    over(`${at}.value`, 'textInputValue', length('value'), L.textInputValue) ??
    over(`${at}.custom_id`, 'customId', length('custom_id'), L.customId)
  );
}

/**
 * The first of Discord's limits a modal breaks (its title, how many rows it has, its labels, descriptions,
 * placeholders and prefilled values), or undefined when it keeps them all.
 */
export function brokenModalLimit(modal: APIModalInteractionResponseCallbackData): BrokenLimit | undefined {
  const L = MODAL_LIMITS;
  const components: readonly unknown[] = modal.components;
  return (
    over('title', 'title', modal.title.length, L.title) ??
    over('custom_id', 'customId', modal.custom_id.length, L.customId) ??
    over('components', 'components', components.length, L.components) ??
    components
      .map((component, index): BrokenLimit | undefined => {
        const at = `components.${index}`;
        const type = isRecord(component) ? component.type : undefined;
        if (type === ACTION_ROW)
          return (readArray(component, 'components') ?? [])
            .map((input, place) => inputLimit(input, `${at}.components.${place}`, true))
            .find(Boolean);
        if (type !== LABEL) return undefined;
        const description = isRecord(component) && typeof component.description === 'string' ? component.description.length : 0;
        const label = isRecord(component) && typeof component.label === 'string' ? component.label.length : 0;
        return (
          over(`${at}.label`, 'label', label, L.label) ??
          over(`${at}.description`, 'labelDescription', description, L.labelDescription) ??
          inputLimit(readRecord(component, 'component'), `${at}.component`, false)
        );
      })
      .find(Boolean)
  );
}

/** Discord's code for a request body it refuses field by field (400): a limit broken, among others. */
export const INVALID_FORM_BODY = 50035;

/**
 * The fields Discord named in a 400 / 50035 (Invalid Form Body), as paths with its error codes
 * (`content: BASE_TYPE_MAX_LENGTH`); undefined for any other error.
 */
export function refusedFields(error: unknown): string[] | undefined {
  if (!(error instanceof DiscordAPIError) || error.code !== INVALID_FORM_BODY) return undefined;
  const fields: string[] = [];
  const walk = (node: unknown, path: string[]): void => {
    if (!isRecord(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '_errors' && Array.isArray(value)) {
        const codes = value.map((entry) => (isRecord(entry) && typeof entry.code === 'string' ? entry.code : '?'));
        fields.push(`${path.join('.') || '(body)'}: ${codes.join(', ')}`);
      } else walk(value, [...path, key]);
    }
  };
  walk(readRecord(error.rawError, 'errors'), []);
  return fields;
}
