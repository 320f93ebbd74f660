// `npm run check`'s check of the message catalogs (src/i18n/catalogs/, or the directory given): English is
// the reference, every other catalog has exactly its keys, each a valid ICU message with the same
// placeholders. Prints each problem and exits 1, or says nothing and exits 0.
//   scripts/node scripts/check-catalogs.ts [directory]

import { pathToFileURL } from 'node:url';
import { readCatalogFiles } from '../src/i18n/catalog-files.ts';
import { checkCatalogs } from '../src/i18n/check.ts';

const given = process.argv[2];
const directory = given ? pathToFileURL(given.endsWith('/') ? given : `${given}/`) : new URL('../src/i18n/catalogs/', import.meta.url);
const problems = checkCatalogs(readCatalogFiles(directory));
if (problems.length > 0) {
  process.stderr.write(`message catalogs (${directory.pathname}):\n${problems.map((problem) => `  ${problem}\n`).join('')}`);
  process.exitCode = 1;
}
