import { isRecord } from '../lib/json.ts';
import { RestError } from './errors.ts';

/** Discord's limits on what one message carries; a message over any of them is refused with 400 / 50035. */
const MESSAGE_LIMITS = {
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
  actionRows: 5,
  rowComponents: 5,
  customId: 100,
  buttonLabel: 80,
} as const;

function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : 0;
}

/** Field errors as Discord nests them: `{content: {_errors: [...]}}`, `{embeds: {0: {title: {_errors}}}}`. */
export function tooLong(path: (string | number)[], max: number): Record<string, unknown> {
  const leaf: Record<string, unknown> = { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${max} or fewer in length.` }] };
  return path.reduceRight<Record<string, unknown>>((inner, key) => ({ [String(key)]: inner }), leaf);
}

/** The first limit a message body breaks, as Discord's `errors` object; undefined when it keeps them all. */
export function messageLimitErrors(json: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const L = MESSAGE_LIMITS;
  if (textLength(json.content) > L.content) return tooLong(['content'], L.content);
  const embeds = Array.isArray(json.embeds) ? json.embeds : [];
  if (embeds.length > L.embeds) return tooLong(['embeds'], L.embeds);
  let total = 0;
  for (const [index, embed] of embeds.entries()) {
    if (!isRecord(embed)) continue;
    const fields = Array.isArray(embed.fields) ? embed.fields : [];
    const footer = isRecord(embed.footer) ? embed.footer.text : undefined;
    const author = isRecord(embed.author) ? embed.author.name : undefined;
    const checks: [string[], unknown, number][] = [
      [['title'], embed.title, L.embedTitle],
      [['description'], embed.description, L.embedDescription],
      [['footer', 'text'], footer, L.footerText],
      [['author', 'name'], author, L.authorName],
    ];
    for (const [path, value, max] of checks) if (textLength(value) > max) return tooLong(['embeds', index, ...path], max);
    if (fields.length > L.embedFields) return tooLong(['embeds', index, 'fields'], L.embedFields);
    for (const [fieldIndex, field] of fields.entries()) {
      if (!isRecord(field)) continue;
      if (textLength(field.name) > L.fieldName) return tooLong(['embeds', index, 'fields', fieldIndex, 'name'], L.fieldName);
      if (textLength(field.value) > L.fieldValue) return tooLong(['embeds', index, 'fields', fieldIndex, 'value'], L.fieldValue);
      total += textLength(field.name) + textLength(field.value);
    }
    total += textLength(embed.title) + textLength(embed.description) + textLength(footer) + textLength(author);
  }
  if (total > L.embedTotal) return tooLong(['embeds'], L.embedTotal);
  const rows = Array.isArray(json.components) ? json.components : [];
  if (rows.length > L.actionRows) return tooLong(['components'], L.actionRows);
  for (const [rowIndex, row] of rows.entries()) {
    const children = isRecord(row) && Array.isArray(row.components) ? row.components : [];
    if (children.length > L.rowComponents) return tooLong(['components', rowIndex, 'components'], L.rowComponents);
    for (const [index, child] of children.entries()) {
      if (!isRecord(child)) continue;
      if (textLength(child.custom_id) > L.customId) return tooLong(['components', rowIndex, 'components', index, 'custom_id'], L.customId);
      if (textLength(child.label) > L.buttonLabel) return tooLong(['components', rowIndex, 'components', index, 'label'], L.buttonLabel);
    }
  }
  return undefined;
}

export function checkMessageLimits(json: Readonly<Record<string, unknown>>): void {
  const errors = messageLimitErrors(json);
  if (errors) throw new RestError(400, 50035, 'Invalid Form Body', errors);
}
