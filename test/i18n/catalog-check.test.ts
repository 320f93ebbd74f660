import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { readNumber, readString } from '../../src/lib/json.ts';
import { readCatalogFiles } from '../../src/i18n/catalog-files.ts';
import { checkCatalogs } from '../../src/i18n/check.ts';

// `npm run check` refuses catalogs that disagree with English: a missing or extra key, a placeholder
// renamed or turned from a plural into plain text, a message that is no ICU message, a file named by no
// Discord locale. test/i18n/broken-catalogs/ breaks each rule once.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BROKEN = new URL('./broken-catalogs/', import.meta.url);

async function runCheck(directory?: string): Promise<{ exitCode: number; stderr: string }> {
  const args = ['--experimental-strip-types', '--disable-warning=ExperimentalWarning', join(ROOT, 'scripts/check-catalogs.ts')];
  return promisify(execFile)(process.execPath, directory ? [...args, directory] : args, { cwd: ROOT }).then(
    ({ stderr }) => ({ exitCode: 0, stderr }),
    (error: unknown) => ({ exitCode: readNumber(error, 'code') ?? -1, stderr: readString(error, 'stderr') ?? '' }),
  );
}

const scratch = mkdtempSync(join(tmpdir(), 'catalogs-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the catalog check', () => {
  it("passes the bot's own catalogs", async () => {
    expect(checkCatalogs(readCatalogFiles(new URL('../../src/i18n/catalogs/', import.meta.url)))).toEqual([]);
    expect(await runCheck()).toEqual({ exitCode: 0, stderr: '' });
  });

  it('names every broken key, by file', () => {
    expect(checkCatalogs(readCatalogFiles(BROKEN)).sort()).toEqual(
      [
        'de.json: farewell: missing',
        'de.json: greeting: placeholders {nom}, en.json has {name}',
        'de.json: videos: placeholders {count}, en.json has {count, plural}',
        'de.json: surplus: not in en.json',
        'fr.json: videos: not a valid ICU message (EXPECT_ARGUMENT_CLOSING_BRACE)',
        'ja.json: farewell is not a string',
        'ja.json: farewell: missing',
        "xx-YY.json: xx-YY is not one of Discord's locale codes",
      ].sort(),
    );
  });

  it('fails `npm run check` on broken catalogs, printing each problem', async () => {
    const { exitCode, stderr } = await runCheck(fileURLToPath(BROKEN));
    expect(exitCode).toBe(1);
    expect(stderr).toContain('de.json: greeting: placeholders {nom}, en.json has {name}');
    expect(stderr).toContain('fr.json: videos: not a valid ICU message');
  });

  it('refuses a file that is not JSON, and a set of catalogs without English', () => {
    writeFileSync(join(scratch, 'de.json'), '{ "greeting": ');
    expect(checkCatalogs(readCatalogFiles(pathToFileURL(`${scratch}/`)))).toEqual([
      'de.json: not a JSON object of messages',
      'en.json: missing (every other catalog is checked against it)',
    ]);
  });
});
