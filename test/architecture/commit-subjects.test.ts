import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { readString } from '../../src/lib/json.ts';

// The commit-msg hook the repo installs (package.json "prepare" points core.hooksPath at .githooks) refuses
// a subject over 72 characters, so `git log --oneline` reads as the project's history.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const repo = mkdtempSync(join(tmpdir(), 'commit-subjects-'));
afterAll(() => rmSync(repo, { recursive: true, force: true }));

async function commit(message: string): Promise<{ ok: boolean; stderr: string }> {
  const git = [
    '-C',
    repo,
    '-c',
    `core.hooksPath=${join(ROOT, '.githooks')}`,
    '-c',
    'user.name=Test',
    '-c',
    'user.email=test@example.invalid',
  ];
  return promisify(execFile)('git', [...git, 'commit', '--allow-empty', '-m', message]).then(
    ({ stderr }) => ({ ok: true, stderr }),
    (error: unknown) => ({ ok: false, stderr: readString(error, 'stderr') ?? '' }),
  );
}

describe('the commit-msg hook', () => {
  it('takes a subject of 72 characters and refuses one of 73, saying why', async () => {
    await promisify(execFile)('git', ['init', '-q', repo]);
    expect(await commit(`${'a'.repeat(72)}\n\nThe why goes here.`)).toMatchObject({ ok: true });
    const refused = await commit('b'.repeat(73));
    expect(refused.ok).toBe(false);
    expect(refused.stderr).toContain('commit subject is 73 characters, over 72');
  });
});
