import { isRecord } from '../lib/json.ts';
import { componentErrors, type ComponentCheck } from './components.ts';
import { mergeFieldErrors, tooLong, type FieldErrors } from './errors.ts';

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
} as const;

function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : 0;
}

/** The first text or embed limit a message body breaks, as Discord's `errors` object; undefined when it keeps them all. */
function textLimitErrors(json: Readonly<Record<string, unknown>>): FieldErrors | undefined {
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
  return undefined;
}

/**
 * Everything Discord checks in a message body (sent, edited, or the `data` of an interaction
 * response): text and embed limits, the Components V2 flag and the components. Undefined when it passes.
 */
export function messageErrors(json: Readonly<Record<string, unknown>>, check: ComponentCheck): FieldErrors | undefined {
  return mergeFieldErrors(textLimitErrors(json), componentErrors(json, check));
}
