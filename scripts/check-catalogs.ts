// `npm run check`'s check of the message catalogs (src/i18n/catalogs/, or the directory given): English is
// the reference, every other catalog has exactly its keys, each a valid ICU message with the same
// placeholders; and src/i18n/message-values.ts, the placeholders' types, is what the English catalog gives.
// Prints each problem and exits 1, or says nothing and exits 0. `--write` writes message-values.ts anew
// (after a change of en.json).
//   scripts/node scripts/check-catalogs.ts [--write] [directory]

import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { readCatalogFiles } from '../src/i18n/catalog-files.ts';
import { checkCatalogs } from '../src/i18n/check.ts';
import { ENGLISH } from '../src/i18n/locale.ts';
import { messageValuesSource } from '../src/i18n/message-types.ts';

const write = process.argv.includes('--write');
const given = process.argv.slice(2).find((argument) => argument !== '--write');
const directory = given ? pathToFileURL(given.endsWith('/') ? given : `${given}/`) : new URL('../src/i18n/catalogs/', import.meta.url);
const files = readCatalogFiles(directory);
const problems = checkCatalogs(files);

// The types are the bot's own catalogs' (another directory is only checked).
const english = files.catalogs.get(ENGLISH);
if (!given && english) {
  const typesFile = new URL('../src/i18n/message-values.ts', import.meta.url);
  const source = messageValuesSource(english);
  if (write) writeFileSync(typesFile, source);
  else if (readFileSync(typesFile, 'utf8') !== source)
    problems.push('src/i18n/message-values.ts: not what en.json gives; write it with `scripts/node scripts/check-catalogs.ts --write`');
}

if (problems.length > 0) {
  process.stderr.write(`message catalogs (${directory.pathname}):\n${problems.map((problem) => `  ${problem}\n`).join('')}`);
  process.exitCode = 1;
}
