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
import type { Catalog } from './catalog-files.ts';
import { PARSE_OPTIONS } from './check.ts';

// The types of the English catalog's placeholders, written as TypeScript (message-values.ts), so that a
// message asked for without one of its values, or with a date where it counts, fails `npm run check`
// rather than a member's answer. Generated: `scripts/node scripts/check-catalogs.ts --write` writes it,
// and the check fails while it is not what the catalog gives.

/** What a placeholder takes, from how the message uses it. */
type ValueKind = 'number' | 'text' | 'date' | 'value';

const TYPE_OF_KIND: Record<ValueKind, string> = {
  number: 'number',
  text: 'string',
  date: 'Date | number',
  value: 'string | number',
};

/** A placeholder used two ways takes what both take: a plural's count shown as `{count}` is a number. */
function narrower(a: ValueKind | undefined, b: ValueKind): ValueKind {
  if (a === undefined || a === b || a === 'value') return b;
  return b === 'value' ? a : 'value';
}

function collect(elements: readonly MessageFormatElement[], found: Map<string, ValueKind>): void {
  const add = (name: string, kind: ValueKind) => found.set(name, narrower(found.get(name), kind));
  for (const element of elements) {
    if (isArgumentElement(element)) add(element.value, 'value');
    else if (isNumberElement(element)) add(element.value, 'number');
    else if (isDateElement(element) || isTimeElement(element)) add(element.value, 'date');
    else if (isPluralElement(element) || isSelectElement(element)) {
      add(element.value, isPluralElement(element) ? 'number' : 'text');
      for (const option of Object.values(element.options)) collect(option.value, found);
    } else if (isTagElement(element)) collect(element.children, found);
  }
}

/** A key or a name as TypeScript writes it in a type: bare where it may be, else in single quotes. */
function propertyName(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : `'${name.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/** The TypeScript of message-values.ts for a catalog (the English one); a message that does not parse is left out (the check names it). */
export function messageValuesSource(catalog: Catalog): string {
  const lines = Object.entries(catalog).map(([key, message]) => {
    const found = new Map<string, ValueKind>();
    try {
      collect(parse(message, PARSE_OPTIONS), found);
    } catch {
      return undefined;
    }
    const fields = [...found].sort(([a], [b]) => a.localeCompare(b)).map(([name, kind]) => `${propertyName(name)}: ${TYPE_OF_KIND[kind]}`);
    return `  ${propertyName(key)}: ${fields.length === 0 ? 'undefined' : `{ ${fields.join('; ')} }`};`;
  });
  return [
    '// Generated from catalogs/en.json by `scripts/node scripts/check-catalogs.ts --write`; `npm run check` fails',
    '// while it differs from what the catalog gives. Each message key and the values its placeholders take',
    '// (undefined: it has none).',
    '',
    'export interface MessagePlaceholders {',
    ...lines.filter((line) => line !== undefined),
    '}',
    '',
  ].join('\n');
}
