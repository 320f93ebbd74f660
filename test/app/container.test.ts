import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { readRecord, readString } from '../../src/lib/json.ts';
import { CHART_FONT_FILES } from '../../src/settings/usage-chart.ts';
import { FIRST_FRAME_DECODER } from '../../src/video/first-frame.ts';
import { dockerfileInstructions as instructions, imageCommand } from '../support/dockerfile.ts';

// The Dockerfile and compose.yaml cannot be built on these machines (no docker): this checks what can be
// checked without it. Every file the Dockerfile copies from the repo exists, every npm script it or
// compose.yaml runs is defined, the bot is the image's first process, and .dockerignore keeps data, .env and
// node_modules out.

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const exists = (path: string) => existsSync(new URL(path, ROOT));
const packageJson: unknown = JSON.parse(read('package.json'));
const scripts = (typeof packageJson === 'object' && packageJson !== null && 'scripts' in packageJson ? packageJson.scripts : {}) as Record<
  string,
  string
>;

/** The npm scripts a shell command or exec-form array runs (`npm start`, `npm run X`). */
function npmScripts(command: string): string[] {
  return [...command.matchAll(/npm"?,?\s*"?(start|run"?,?\s*"?([\w:-]+))/g)].map((match) => match[2] ?? match[1]!);
}

describe('the container image', () => {
  it('copies only files that exist in the repo (besides what the build stage made)', () => {
    const copies = instructions().filter((instruction) => instruction.keyword === 'COPY' && !instruction.rest.includes('--from='));
    expect(copies.length).toBeGreaterThan(0);
    for (const { rest } of copies) {
      const parts = rest.split(/\s+/).filter((part) => !part.startsWith('--'));
      const sources = parts.slice(0, -1);
      expect(sources.length).toBeGreaterThan(0);
      for (const source of sources) expect(exists(source), `COPY ${source}`).toBe(true);
    }
  });

  it('runs only npm scripts and files that exist: npm ci from the lock file, a HEALTHCHECK on /healthz', () => {
    const all = instructions();
    const runs = all.filter((instruction) => ['RUN', 'CMD', 'HEALTHCHECK', 'ENTRYPOINT'].includes(instruction.keyword));
    const text = runs.map((instruction) => instruction.rest).join('\n');
    expect(text).toContain('npm ci --omit=dev');
    expect(exists('package-lock.json')).toBe(true);
    for (const script of npmScripts(text)) expect(scripts[script], `npm script ${script}`).toBeDefined();
    expect(all.find((instruction) => instruction.keyword === 'HEALTHCHECK')?.rest).toMatch(/\/healthz/);
  });

  it("runs the bot's start script itself, which execs Node: the bot is the container's first process and gets docker stop's SIGTERM", () => {
    const all = instructions();
    // No ENTRYPOINT or shell form in front of it, and not npm (npm 11 exits on a signal without passing it on).
    expect(all.some((instruction) => instruction.keyword === 'ENTRYPOINT')).toBe(false);
    expect(imageCommand()).toEqual(['scripts/bot']);
    // What `npm start` runs outside the container, too.
    expect(scripts.start).toBe('scripts/bot');
    // scripts/bot replaces itself with scripts/node, which replaces itself with Node on src/main.ts: all are copied.
    expect(read('scripts/bot')).toContain('src/main.ts');
    expect(read('scripts/bot')).toMatch(/^exec "\$here\/node" /m);
    expect(read('scripts/node')).toMatch(/^exec "\$node_bin" /m);
    for (const file of ['scripts/bot', 'scripts/node', 'src/main.ts']) expect(exists(file)).toBe(true);
    // test/e2e/stopping.test.ts runs this command and stops it with SIGTERM.
  });

  it('runs Node 22 slim as a non-root user, builds native modules in the build stage, keeps the SQLite folder in a volume', () => {
    const all = instructions();
    const froms = all.filter((instruction) => instruction.keyword === 'FROM').map((instruction) => instruction.rest);
    expect(froms.length).toBe(2);
    expect(froms[0]).toMatch(/^node:22\S* AS build$/);
    expect(froms[1]).toMatch(/^node:22-\S*slim$/);
    const runtime = all.slice(all.findIndex((instruction) => instruction.keyword === 'FROM' && instruction.rest === froms[1]));
    expect(runtime.find((instruction) => instruction.keyword === 'USER')?.rest).toBe('node');
    expect(runtime.some((instruction) => instruction.keyword === 'RUN' && instruction.rest.includes('npm ci'))).toBe(false);
    expect(runtime.find((instruction) => instruction.keyword === 'VOLUME')?.rest).toBe('["/app/data"]');
    // STORE_URL's default is relative to the working directory: /app/data is the volume.
    const defaults = loadConfig({ DISCORD_TOKEN: 'discord-token-value', GATEWAY_BASE_URL: 'http://127.0.0.1:8787' });
    expect(defaults.ok && defaults.config.storeUrl).toBe('sqlite://data/bot.sqlite');
    expect(runtime.find((instruction) => instruction.keyword === 'WORKDIR')?.rest).toBe('/app');
  });

  it('installs and copies the workspace packages the bot depends on, and keeps the Discord stand-in out', () => {
    const dependencies = Object.keys(readRecord(packageJson, 'dependencies') ?? {});
    const workspaces = readdirSync(new URL('packages/', ROOT)).map((folder) => ({
      folder: `packages/${folder}`,
      name: readString(JSON.parse(read(`packages/${folder}/package.json`)), 'name'),
    }));
    const used = workspaces.filter(({ name }) => name !== undefined && dependencies.includes(name));
    expect(used.map(({ name }) => name)).toContain('opusscript-codec');
    expect(dependencies).not.toContain('discord-standin');
    const all = instructions();
    const runtimeStart = all.findLastIndex((instruction) => instruction.keyword === 'FROM');
    const npmCi = all.findIndex((instruction) => instruction.keyword === 'RUN' && instruction.rest.includes('npm ci'));
    const copied = (from: number, to: number) =>
      all
        .slice(from, to)
        .filter((instruction) => instruction.keyword === 'COPY' && !instruction.rest.includes('--from='))
        .flatMap(({ rest }) =>
          rest
            .split(/\s+/)
            .filter((part) => !part.startsWith('--'))
            .slice(0, -1),
        );
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim());
    for (const { folder } of used) {
      // npm ci needs the workspace's package.json to link it; the bot needs its source at run time.
      expect(copied(0, npmCi), `COPY ${folder}/package.json before npm ci`).toContain(`${folder}/package.json`);
      expect(copied(runtimeStart, all.length), `COPY ${folder} into the runtime image`).toContain(folder);
      expect(ignored, `.dockerignore lets ${folder} in`).toContain(`!${folder}`);
    }
    expect(ignored).toContain('packages/*');
    expect(ignored).not.toContain('!packages/discord-standin');
    expect(all.some((instruction) => instruction.keyword === 'COPY' && instruction.rest.includes('discord-standin'))).toBe(false);
  });

  it('copies the first-frame decoder, which the bot runs as a program of its own from its source folder, and installs its core', () => {
    const all = instructions();
    const runtimeStart = all.findLastIndex((instruction) => instruction.keyword === 'FROM');
    const copied = all
      .slice(runtimeStart)
      .filter((instruction) => instruction.keyword === 'COPY' && !instruction.rest.includes('--from='))
      .map(({ rest }) => rest.split(/\s+/).filter((part) => !part.startsWith('--'))[0]);
    // The bot spawns Node on a program of its source folder: it is in the image wherever src is.
    const decoder = relative(fileURLToPath(ROOT), FIRST_FRAME_DECODER);
    expect(decoder.split(sep)[0]).toBe('src');
    expect(exists(decoder)).toBe(true);
    expect(copied).toContain('src');
    // @ffmpeg/core is optional (README, "Third-party licences"), and the image keeps it: its npm ci omits only dev.
    expect(readRecord(packageJson, 'optionalDependencies')?.['@ffmpeg/core']).toBeDefined();
    const npmCi = all.find((instruction) => instruction.keyword === 'RUN' && instruction.rest.includes('npm ci'))?.rest;
    expect(npmCi).toContain('--omit=dev');
    expect(npmCi).not.toContain('optional');
    expect(npmCi).not.toContain('@ffmpeg');
  });

  it("keeps only the Noto Sans JP weight the usage chart reads, and the font package's licences", () => {
    const all = instructions();
    const buildStage = all.slice(
      0,
      all.findLastIndex((instruction) => instruction.keyword === 'FROM'),
    );
    const prune = buildStage.find((instruction) => instruction.keyword === 'RUN' && instruction.rest.includes('noto-sans-jp'));
    expect(prune, 'a RUN in the build stage removes the unused weights').toBeDefined();
    // The installed package's layout, as empty files, in a folder standing for the build stage's /app.
    const installed = fileURLToPath(new URL('node_modules/@expo-google-fonts/noto-sans-jp/', ROOT));
    const app = mkdtempSync(join(tmpdir(), 'font-prune-'));
    try {
      const copy = join(app, 'node_modules/@expo-google-fonts/noto-sans-jp');
      const files = readdirSync(installed, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
      for (const file of files) {
        const to = join(copy, relative(installed, join(file.parentPath, file.name)));
        mkdirSync(dirname(to), { recursive: true });
        writeFileSync(to, '');
      }
      execFileSync('sh', ['-c', prune!.rest], { cwd: app });
      const left = readdirSync(copy, { recursive: true }).map(String).sort();
      const weights = left.filter((entry) => /^\d00\w+$/.test(entry));
      expect(weights).toEqual(['400Regular']);
      // Every file of the package that the chart reads is still there.
      const chartReads = CHART_FONT_FILES.filter((file) => !relative(installed, file).startsWith('..'));
      expect(chartReads.length).toBeGreaterThan(0);
      for (const file of chartReads) expect(left).toContain(relative(installed, file));
      for (const kept of ['package.json', 'LICENSE', 'LICENSE_FONT']) expect(left).toContain(kept);
      expect(files.length).toBeGreaterThan(left.length);
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  });

  it('keeps data, .env and node_modules out of the image', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim());
    for (const entry of ['data', '.env', 'node_modules']) expect(ignored).toContain(entry);
  });

  it("compose.yaml builds this Dockerfile and runs only npm scripts that exist; the bot's ops port matches the image's", () => {
    const compose = read('compose.yaml');
    expect(compose).toMatch(/^\s+build: \.$/m);
    for (const script of npmScripts(compose)) expect(scripts[script], `npm script ${script}`).toBeDefined();
    // A service's process gets docker stop's SIGTERM itself: no npm in between.
    expect(compose).not.toMatch(/command: \[\s*'npm'/);
    // Docker's default 10 s before SIGKILL is shorter than the bot's stop may take (sharded: 15 s, src/main.ts).
    const grace = /^ {4}stop_grace_period: (\d+)s$/m.exec(compose.slice(compose.indexOf('\n  bot:'), compose.indexOf('\n  redis:')));
    expect(Number(grace?.[1])).toBeGreaterThan(15);
    expect(compose).toContain('profiles: [emulator]');
    expect(compose).toMatch(/STORE_URL: redis:\/\/redis:6379/);
    expect(read('Dockerfile')).toContain('OPS_PORT=9464');
    expect(compose).toMatch(/OPS_PORT: ['"]9464['"]/);
  });

  it("compose.yaml's Redis keeps the bot's records: AOF on a volume, no eviction", () => {
    const compose = read('compose.yaml');
    const redis = compose.slice(compose.indexOf('\n  redis:'), compose.indexOf('\n  emulator:'));
    expect(redis).toMatch(/command: \[.*'--appendonly', 'yes'.*\]/);
    expect(redis).toMatch(/'--maxmemory-policy', 'noeviction'/);
    expect(redis).toMatch(/volumes:\n\s+- redis-data:\/data/);
  });
});
