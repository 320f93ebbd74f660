import type { Catalog } from './catalog-files.ts';
import { placeholderUses, type PlaceholderUse } from './check.ts';

// The types of the English catalog's placeholders, written as TypeScript (message-values.ts), so that a
// message asked for without one of its values, or with a date where it counts, fails `npm run check`
// rather than a member's answer. Generated: `scripts/node scripts/check-catalogs.ts --write` writes it,
// and the check fails while it is not what the catalog gives.

/** What a placeholder takes, from every way the message uses it. */
function typeOf(uses: ReadonlySet<PlaceholderUse>): string {
  // A count, a chosen number or a number shown as one: a number, also where it is shown as it is too.
  if (uses.has('plural') || uses.has('number')) return 'number';
  if (uses.has('date')) return uses.has('value') ? 'string | number' : 'Date | number';
  if (uses.has('select')) return 'string';
  return 'string | number';
}

/** A key or a name as TypeScript writes it in a type: bare where it may be, else in single quotes. */
function propertyName(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : `'${name.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/** The TypeScript of message-values.ts for a catalog (the English one); a message that does not parse is left out (the check names it). */
export function messageValuesSource(catalog: Catalog): string {
  const lines = Object.entries(catalog).map(([key, message]) => {
    const parsed = placeholderUses(message);
    if (!parsed.ok) return undefined;
    const fields = [...parsed.uses].sort(([a], [b]) => a.localeCompare(b)).map(([name, uses]) => `${propertyName(name)}: ${typeOf(uses)}`);
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
