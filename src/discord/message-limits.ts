import type { APIActionRowComponent, APIComponentInMessageActionRow, APIEmbed, APIMessageTopLevelComponent } from 'discord.js';

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

/** A limit a message breaks: its name (as in MESSAGE_LIMITS), what the message has and what Discord allows. */
export interface BrokenLimit {
  limit: string;
  actual: number;
  max: number;
}

function over(limit: string, actual: number, max: number): BrokenLimit | undefined {
  return actual > max ? { limit, actual, max } : undefined;
}

function embedLimit(embeds: readonly APIEmbed[]): BrokenLimit | undefined {
  const L = MESSAGE_LIMITS;
  let total = 0;
  for (const embed of embeds) {
    const fields = embed.fields ?? [];
    const texts: [string, string | undefined, number][] = [
      ['embedTitle', embed.title, L.embedTitle],
      ['embedDescription', embed.description, L.embedDescription],
      ['footerText', embed.footer?.text, L.footerText],
      ['authorName', embed.author?.name, L.authorName],
      ...fields.flatMap((field): [string, string, number][] => [
        ['fieldName', field.name, L.fieldName],
        ['fieldValue', field.value, L.fieldValue],
      ]),
    ];
    const broken =
      over('embedFields', fields.length, L.embedFields) ??
      texts.map(([limit, text, max]) => over(limit, text?.length ?? 0, max)).find(Boolean);
    if (broken) return broken;
    total += texts.reduce((sum, [, text]) => sum + (text?.length ?? 0), 0);
  }
  return over('embedTotal', total, L.embedTotal);
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
    over('content', message.content?.length ?? 0, L.content) ??
    over('embeds', message.embeds?.length ?? 0, L.embeds) ??
    embedLimit(message.embeds ?? []) ??
    over('actionRows', rows.length, L.actionRows) ??
    rows.map((row) => over('rowComponents', row.components.length, L.rowComponents)).find(Boolean) ??
    over('cardComponents', card.count, L.cardComponents) ??
    over('cardText', card.text, L.cardText) ??
    over('files', files.length, L.files) ??
    files.map((file) => over('fileBytes', file.data.length, fileBytes)).find(Boolean) ??
    over(
      'requestBytes',
      files.reduce((sum, file) => sum + file.data.length, 0),
      L.requestBytes,
    )
  );
}
