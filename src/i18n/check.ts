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

/** A placeholder's name and how the message uses it: a value (`{n}`, `{n, number}`, a date), a plural or a select. */
function placeholdersOf(elements: readonly MessageFormatElement[], found: Set<string>): Set<string> {
  for (const element of elements) {
    if (isArgumentElement(element) || isNumberElement(element) || isDateElement(element) || isTimeElement(element)) {
      found.add(`{${element.value}}`);
    } else if (isPluralElement(element) || isSelectElement(element)) {
      found.add(`{${element.value}, ${isPluralElement(element) ? 'plural' : 'select'}}`);
      for (const option of Object.values(element.options)) placeholdersOf(option.value, found);
    } else if (isTagElement(element)) {
      placeholdersOf(element.children, found);
    }
  }
  return found;
}

/** The placeholders of a message, sorted, or why it is no ICU message. */
export function messagePlaceholders(message: string): { ok: true; placeholders: string[] } | { ok: false; error: string } {
  try {
    return { ok: true, placeholders: [...placeholdersOf(parse(message, PARSE_OPTIONS), new Set())].sort() };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
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
