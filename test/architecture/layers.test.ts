import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { readNumber, readString } from '../../src/lib/json.ts';

// The layer rules that `npm run check` enforces (.dependency-cruiser.mjs), run on a small tree that
// breaks each of them once: every rule must fail, by name, on the import that breaks it.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CRUISER = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');

/** Each file of the tree, and the rule its import breaks ('' for files that are only imported). */
const BREAKING_IMPORTS: [file: string, source: string, rule: string][] = [
  ['src/lib/bottom.ts', "import { part } from '../video/part.ts';\nexport const bottom = part;", 'lib-is-the-bottom'],
  [
    'src/gateway/client.ts',
    "import { settings } from '../settings/settings.ts';\nexport const client = settings;",
    'gateway-client-stands-alone',
  ],
  ['src/emulator/server.ts', "import { client } from '../gateway/client.ts';\nexport const server = client;", 'emulator-stands-alone'],
  ['src/discord/outbox.ts', "import { part } from '../video/part.ts';\nexport const outbox = part;", 'discord-adapter-is-a-leaf'],
  ['src/i18n/index.ts', "import { part } from '../video/part.ts';\nexport const t = part;", 'i18n-knows-only-lib'],
  ['src/store/index.ts', "import { part } from '../video/part.ts';\nexport const store = part;", 'store-is-a-leaf'],
  ['src/store/interface.ts', 'export type Parse<T> = (raw: unknown) => T;', ''],
  ['src/voice/stored.ts', "import type { Parse } from '../store/interface.ts';\nexport type Stored = Parse<1>;", 'store-through-its-index'],
  ['src/wording/words.ts', "import { part } from '../video/part.ts';\nexport const words = part;", 'wording-knows-only-the-gateway'],
  ['src/ports/port.ts', "import type { Part } from '../video/part.ts';\nexport type Port = Part;", 'ports-are-interfaces'],
  [
    'src/video/part.ts',
    "import type { Voice } from '../voice/voice.ts';\nexport type Part = Voice;\nexport const part = 1;",
    'parts-meet-through-ports',
  ],
  ['src/voice/voice.ts', "import { app } from '../app.ts';\nexport type Voice = typeof app;", 'no-reaching-up'],
  ['src/app.ts', "import { command } from '../commands/first.ts';\nexport const app = command;", 'src-does-not-import-commands'],
  ['commands/first.ts', "import { second } from './second.ts';\nexport const command = second;", 'commands-are-independent'],
  ['commands/second.ts', 'export const second = 2;', ''],
  [
    'src/settings/settings.ts',
    "import { helper } from '../../test/helper.ts';\nexport const settings = helper;",
    'production-code-imports-no-tests',
  ],
  ['test/helper.ts', 'export const helper = 3;', ''],
  [
    'bench/rig.ts',
    "import { start } from '../packages/discord-standin/src/standin/start.ts';\nexport const rig = start;",
    'standin-through-its-entry-point',
  ],
  ['packages/discord-standin/src/standin/start.ts', "export { standIn as start } from '../index.ts';", ''],
  ['packages/discord-standin/src/index.ts', 'export const standIn = 4;', ''],
  [
    'packages/discord-standin/src/dave/call.ts',
    "import { api } from '../rest/api.ts';\nexport const call = api;",
    'dave-does-not-know-rest',
  ],
  ['packages/discord-standin/src/rest/api.ts', 'export const api = 5;', ''],
  [
    'src/voice/speaker.ts',
    "import { standIn } from '../../packages/discord-standin/src/index.ts';\nexport const speaker = standIn;",
    'bot-does-not-import-the-standin',
  ],
  [
    'packages/discord-standin/src/lib/log.ts',
    "import { bottom } from '../../../../src/lib/bottom.ts';\nexport const log = bottom;",
    'standin-stands-alone',
  ],
  [
    'src/voice/codec.ts',
    "import { heap } from '../../packages/opusscript-codec/src/heap.ts';\nexport const codec = heap;",
    'opusscript-codec-through-its-entry-point',
  ],
  ['packages/opusscript-codec/src/heap.ts', 'export const heap = 6;', ''],
  [
    'packages/opusscript-codec/src/index.ts',
    "import { log } from '../../discord-standin/src/lib/log.ts';\nexport const codec = log;",
    'opusscript-codec-stands-alone',
  ],
  ['src/video/one.ts', "import type { Two } from './two.ts';\nexport type One = { two?: Two };", 'no-cycle'],
  // The cycle is reported once, from the file where the cruise meets it first.
  ['src/video/two.ts', "import type { One } from './one.ts';\nexport type Two = { one?: One };", ''],
  ['src/video/lost.ts', "import { gone } from './gone.ts';\nexport const lost = gone;", 'not-to-unresolvable'],
];

const tree = mkdtempSync(join(tmpdir(), 'layers-'));
afterAll(() => rmSync(tree, { recursive: true, force: true }));

/** What `npm run check` prints for the tree: its exit code, and each violation's rule and the file it starts from. */
async function cruise(): Promise<{ exitCode: number; violations: { rule: string; from: string }[] }> {
  for (const [file, source] of BREAKING_IMPORTS) {
    mkdirSync(join(tree, dirname(file)), { recursive: true });
    writeFileSync(join(tree, file), `${source}\n`);
  }
  writeFileSync(
    join(tree, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true },
    }),
  );
  const args = [CRUISER, '--config', join(ROOT, '.dependency-cruiser.mjs'), 'src', 'commands', 'bench', 'test', 'packages'];
  const { stdout, exitCode } = await promisify(execFile)(process.execPath, args, { cwd: tree }).then(
    ({ stdout }) => ({ stdout, exitCode: 0 }),
    (error: unknown) => ({ stdout: readString(error, 'stdout') ?? '', exitCode: readNumber(error, 'code') ?? -1 }),
  );
  // "  error no-cycle: src/video/one.ts → ", "  error lib-is-the-bottom: src/lib/bottom.ts → src/video/part.ts"
  const violations = [...stdout.matchAll(/^\s*error (\S+): (\S+)/gm)].map(([, rule = '', from = '']) => ({ rule, from }));
  return { exitCode, violations };
}

describe('the layer check', () => {
  it('fails on each broken layer rule and on an import cycle, naming the rule and the import', async () => {
    const { exitCode, violations } = await cruise();
    expect(exitCode).not.toBe(0);
    for (const [file, , rule] of BREAKING_IMPORTS) {
      if (rule === '') continue;
      expect(violations, `${file} should break ${rule}`).toContainEqual({ rule, from: file });
    }
  });
});
