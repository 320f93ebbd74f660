import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeVariables, loadConfig } from '../../src/config.ts';

// README's configuration table is the declaration of the variables in src/config.ts, written out for
// operators: a variable added, renamed or given another default in one place and not the other fails
// here, and so does a default the bot does not take as it says.

const ROOT = new URL('../../', import.meta.url);
const minimal = { DISCORD_TOKEN: 'discord-token-value', GATEWAY_BASE_URL: 'http://127.0.0.1:8787' };

interface ReadmeRow {
  name: string;
  required: string;
  default: string;
  meaning: string;
}

/** The rows of the table under README's "## Configuration", up to its next heading. */
function readmeRows(): ReadmeRow[] {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'));
  const lines = section.slice(1, section.indexOf('\n#', 1)).split('\n');
  return lines
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [name = '', required = '', fallback = '', ...meaning] = line.slice(2, -2).split(' | ');
      return { name: name.replaceAll('`', ''), required, default: fallback, meaning: meaning.join(' | ') };
    });
}

const declared = describeVariables();

describe("README's configuration table", () => {
  it('names every variable the bot reads, in the same order, and no other', () => {
    expect(readmeRows().map((row) => row.name)).toEqual(declared.map((row) => row.name));
  });

  it('gives each variable the default and the "Required" the declaration gives it', () => {
    const written = new Map(readmeRows().map((row) => [row.name, [row.required, row.default]]));
    for (const variable of declared) {
      expect(written.get(variable.name), variable.name).toEqual([variable.required ? 'yes' : 'no', variable.default ?? '—']);
    }
  });

  it("gives each variable the declaration's sentence", () => {
    const written = new Map(readmeRows().map((row) => [row.name, row.meaning]));
    for (const variable of declared) expect(written.get(variable.name), variable.name).toBe(variable.meaning);
  });

  it('holds defaults the bot takes as they are written: writing one changes nothing', () => {
    // SHARDS_PER_MACHINE is read only with SHARD_IDS=auto-ordinal.
    const environment = { ...minimal, SHARD_IDS: 'auto-ordinal', POD_INDEX: '0' };
    const unset = loadConfig(environment);
    expect(unset.ok).toBe(true);
    const literals = readmeRows().flatMap((row) => (/^`[^`]+`$/.test(row.default) ? [[row.name, row.default.slice(1, -1)] as const] : []));
    expect(literals.length).toBeGreaterThan(10);
    for (const [name, value] of literals) expect(loadConfig({ ...environment, [name]: value }), name).toEqual(unset);
  });
});

describe('.env.example', () => {
  const assignments = readFileSync(new URL('.env.example', ROOT), 'utf8')
    .split('\n')
    .flatMap((line) => {
      const assignment = /^([A-Z_]+)=(.*)$/.exec(line);
      return assignment ? [{ name: assignment[1]!, value: assignment[2]! }] : [];
    });

  it('names only variables the bot reads, each with its default or empty', () => {
    const defaults = new Map(declared.map((row) => [row.name, row.default]));
    expect(assignments.length).toBeGreaterThan(10);
    for (const { name, value } of assignments) {
      expect(defaults.has(name), name).toBe(true);
      if (value !== '') expect(`\`${value}\``, name).toBe(defaults.get(name));
    }
  });
});
