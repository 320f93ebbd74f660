import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The repository stands on its own: a clone anywhere builds, tests and reads the same, so no tracked file
// names a path beside or above the checkout (the team's shared folder least of all).

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUTSIDE = /\.\.\/shared\b|(?<![\w.-])shared\/(?:spec|docs)\//;

describe('the repository', () => {
  it('names no path outside itself in any tracked file', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      .filter((file) => file !== '' && !file.endsWith('package-lock.json'));
    const naming = files.filter((file) => {
      const bytes = readFileSync(`${ROOT}/${file}`);
      return !bytes.includes(0) && OUTSIDE.test(bytes.toString('utf8'));
    });
    expect(naming).toEqual([]);
  });
});
