import { readdirSync, readFileSync } from 'node:fs';
import { isRecord, parseJsonText } from '../lib/json.ts';

// The message catalogs as files: one JSON object per locale, named by its locale (`de.json`), whose keys are
// message keys and whose values are ICU MessageFormat messages. Adding a locale is adding a file.

const CATALOG_EXTENSION = '.json';

/** A locale's messages by key. */
export type Catalog = Readonly<Record<string, string>>;

export interface CatalogFiles {
  /** Each readable catalog by its locale (the file name without `.json`). */
  catalogs: ReadonlyMap<string, Catalog>;
  /** What is wrong with a file, one line each, naming the file: not JSON, not an object of strings. */
  problems: string[];
}

/** Every `*.json` of `directory` as a catalog; a file that is not an object of strings is a problem, not a catalog. */
export function readCatalogFiles(directory: URL): CatalogFiles {
  const catalogs = new Map<string, Catalog>();
  const problems: string[] = [];
  const files = readdirSync(directory)
    .filter((file) => file.endsWith(CATALOG_EXTENSION))
    .sort();
  for (const file of files) {
    const parsed = parseJsonText(readFileSync(new URL(file, directory), 'utf8'));
    if (!parsed.ok || !isRecord(parsed.value)) {
      problems.push(`${file}: not a JSON object of messages`);
      continue;
    }
    const catalog: Record<string, string> = {};
    for (const [key, message] of Object.entries(parsed.value)) {
      if (typeof message === 'string') catalog[key] = message;
      else problems.push(`${file}: ${key} is not a string`);
    }
    catalogs.set(file.slice(0, -CATALOG_EXTENSION.length), catalog);
  }
  return { catalogs, problems };
}
