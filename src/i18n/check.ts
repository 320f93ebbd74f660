import {
  isArgumentElement,
  isDateElement,
  isNumberElement,
  isPluralElement,
  isSelectElement,
  isTagElement,
  isTimeElement,
  parse,
  type MessageFormatElement,
} from '@formatjs/icu-messageformat-parser';
import type { CatalogFiles } from './catalog-files.ts';
import { DISCORD_LOCALES, ENGLISH } from './locale.ts';

// What `npm run check` asks of the catalogs (scripts/check-catalogs): English is the reference; every other
// catalog is named by a Discord locale, has exactly its keys, each a valid ICU message with the same
// placeholders (a translation that drops `{count}` or turns a plural into plain text is caught here, not by
// a member).

/**
 * How the messages are parsed, here and when formatted: `<` is text (descriptions name `<IMAGE_0>`, and the
 * bot sends no rich text), and a plural or select must say what it says in the `other` case.
 */
export const PARSE_OPTIONS = { ignoreTag: true, requiresOtherClause: true } as const;

/** How a message uses a placeholder: shows it (`{n}`), as a number or a date (`{n, number}`), or chooses by it. */
export type PlaceholderUse = 'value' | 'number' | 'date' | 'plural' | 'select';

function collectUses(elements: readonly MessageFormatElement[], found: Map<string, Set<PlaceholderUse>>): void {
  const add = (name: string, use: PlaceholderUse) => found.set(name, (found.get(name) ?? new Set()).add(use));
  for (const element of elements) {
    if (isArgumentElement(element)) add(element.value, 'value');
    else if (isNumberElement(element)) add(element.value, 'number');
    else if (isDateElement(element) || isTimeElement(element)) add(element.value, 'date');
    else if (isPluralElement(element) || isSelectElement(element)) {
      add(element.value, isPluralElement(element) ? 'plural' : 'select');
      for (const option of Object.values(element.options)) collectUses(option.value, found);
    } else if (isTagElement(element)) collectUses(element.children, found);
  }
}

/** Each placeholder of a message and every way the message uses it, or why it is no ICU message. */
export function placeholderUses(message: string): { ok: true; uses: Map<string, Set<PlaceholderUse>> } | { ok: false; error: string } {
  try {
    const uses = new Map<string, Set<PlaceholderUse>>();
    collectUses(parse(message, PARSE_OPTIONS), uses);
    return { ok: true, uses };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * The placeholders of a message as a translation must keep them, sorted: `{n}` for a value shown (as it
 * is, a number or a date), `{n, plural}` and `{n, select}` for a choice; or why it is no ICU message.
 */
export function messagePlaceholders(message: string): { ok: true; placeholders: string[] } | { ok: false; error: string } {
  const parsed = placeholderUses(message);
  if (!parsed.ok) return parsed;
  const placeholders = [...parsed.uses].flatMap(([name, uses]) => [
    ...(uses.has('value') || uses.has('number') || uses.has('date') ? [`{${name}}`] : []),
    ...(uses.has('plural') ? [`{${name}, plural}`] : []),
    ...(uses.has('select') ? [`{${name}, select}`] : []),
  ]);
  return { ok: true, placeholders: placeholders.sort() };
}

/** Every problem of the catalogs, one line each naming the file and the key; none: they agree. */
export function checkCatalogs(files: CatalogFiles): string[] {
  const problems = [...files.problems];
  const english = files.catalogs.get(ENGLISH);
  if (!english) return [...problems, `${ENGLISH}.json: missing (every other catalog is checked against it)`];
  const reference = new Map<string, string[]>();
  for (const [key, message] of Object.entries(english)) {
    const parsed = messagePlaceholders(message);
    if (parsed.ok) reference.set(key, parsed.placeholders);
    else problems.push(`${ENGLISH}.json: ${key}: not a valid ICU message (${parsed.error})`);
  }
  for (const [locale, catalog] of files.catalogs) {
    if (locale === ENGLISH) continue;
    const file = `${locale}.json`;
    if (!DISCORD_LOCALES.has(locale)) problems.push(`${file}: ${locale} is not one of Discord's locale codes`);
    for (const key of Object.keys(english)) {
      if (!Object.hasOwn(catalog, key)) problems.push(`${file}: ${key}: missing`);
    }
    for (const [key, message] of Object.entries(catalog)) {
      if (!Object.hasOwn(english, key)) {
        problems.push(`${file}: ${key}: not in ${ENGLISH}.json`);
        continue;
      }
      const parsed = messagePlaceholders(message);
      if (!parsed.ok) {
        problems.push(`${file}: ${key}: not a valid ICU message (${parsed.error})`);
        continue;
      }
      const expected = reference.get(key);
      if (expected && parsed.placeholders.join(' ') !== expected.join(' ')) {
        problems.push(
          `${file}: ${key}: placeholders ${parsed.placeholders.join(' ') || '(none)'}, ${ENGLISH}.json has ${expected.join(' ') || '(none)'}`,
        );
      }
    }
  }
  return problems;
}
