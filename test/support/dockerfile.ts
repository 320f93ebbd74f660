import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The Dockerfile read as tests need it (these machines have no docker): its instructions, the command the
// image runs, and a folder laid out as the image's working directory, to run that command in.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where the runtime stage's `COPY --from=build` takes what the build stage made: its WORKDIR. */
const BUILD_STAGE_WORKDIR = '/app/';

export interface Instruction {
  keyword: string;
  rest: string;
}

/** The Dockerfile's instructions, continuation lines joined and comments left out. */
export function dockerfileInstructions(): Instruction[] {
  return readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), rest: rest.join(' ') };
    });
}

/** The instructions of the last stage: what the image is. */
function runtimeStage(): Instruction[] {
  const all = dockerfileInstructions();
  return all.slice(all.findLastIndex((instruction) => instruction.keyword === 'FROM'));
}

/** The image's CMD, in exec form (a JSON array of strings: no shell between Docker and the command). */
export function imageCommand(): [string, ...string[]] {
  const cmd = runtimeStage().findLast((instruction) => instruction.keyword === 'CMD');
  if (!cmd) throw new Error('the Dockerfile has no CMD');
  const parsed: unknown = JSON.parse(cmd.rest);
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((part) => typeof part === 'string'))
    throw new Error(`the Dockerfile's CMD is not in exec form: ${cmd.rest}`);
  return parsed as [string, ...string[]];
}

/**
 * A new folder laid out as the image's WORKDIR: a symbolic link to the repo's file or folder for each
 * source the runtime stage copies, where it copies it (the repo's node_modules for the build stage's). No
 * .env, as in the image (.dockerignore). The caller removes it.
 */
export function imageWorkdir(): string {
  const workdir = mkdtempSync(join(tmpdir(), 'image-workdir-'));
  for (const { keyword, rest } of runtimeStage()) {
    if (keyword !== 'COPY') continue;
    const parts = rest.split(/\s+/);
    const fromBuild = parts.some((part) => part.startsWith('--from='));
    const paths = parts.filter((part) => !part.startsWith('--'));
    const destination = paths.at(-1) ?? '';
    for (const source of paths.slice(0, -1)) {
      const inRepo = fromBuild ? source.replace(BUILD_STAGE_WORKDIR, '') : source;
      const target = join(workdir, destination.endsWith('/') ? join(destination, basename(source)) : destination);
      mkdirSync(dirname(target), { recursive: true });
      symlinkSync(join(ROOT, inRepo), target);
    }
  }
  return workdir;
}
