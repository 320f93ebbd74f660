import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// `npm run emulator -- --port N --config FILE`, as a real process.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const directory = mkdtempSync(join(tmpdir(), 'emulator-cli-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  const child = spawn(join(ROOT, 'scripts', 'node'), [join(ROOT, 'src', 'emulator', 'cli.ts'), ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return { child, output: () => output };
}

async function listeningUrl(process: ReturnType<typeof run>): Promise<string> {
  for (;;) {
    const match = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(process.output());
    if (match?.[1]) return match[1];
    await once(process.child.stdout, 'data');
  }
}

describe('the emulator command', () => {
  it('serves the keys and groups of a config file, and only those', async () => {
    const file = join(directory, 'config.json');
    writeFileSync(file, JSON.stringify({ keys: { 'team-key-123456': { group: 'team', quota_usd: 5 } }, groups: { team: { models: ['svc-imagine-video-1.5'] } } }));
    const emulator = run(['--port', '0', '--config', file]);
    try {
      const url = await listeningUrl(emulator);
      const models = await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer team-key-123456' } });
      expect(await models.json()).toEqual({ object: 'list', data: [{ id: 'svc-imagine-video-1.5', object: 'model', owned_by: 'svc' }] });
      expect((await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer emulator-key' } })).status).toBe(401);
    } finally {
      emulator.child.kill('SIGTERM');
      await once(emulator.child, 'exit');
    }
  });

  it('reads the port and config from EMULATOR_PORT and EMULATOR_CONFIG', async () => {
    const file = join(directory, 'vendor.json');
    writeFileSync(file, JSON.stringify({ vendor: 'acme' }));
    const emulator = run([], { EMULATOR_PORT: '0', EMULATOR_CONFIG: file });
    try {
      const url = await listeningUrl(emulator);
      const models = (await (await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer emulator-key' } })).json()) as { data: { id: string }[] };
      expect(models.data.map((model) => model.id)).toContain('acme-imagine-video-1.5');
    } finally {
      emulator.child.kill('SIGTERM');
      await once(emulator.child, 'exit');
    }
  });

  it.each([
    [{ timing: { generation_ms: -5 } }, 'timing.generation_ms must be a positive whole number'],
    [{ keys: { k: { group: 'missing', quota_usd: 1 } } }, 'which is not in groups'],
    [{ limits: { speed: 3 } }, 'limits.speed is not a setting'],
  ])('exits 2 naming the bad setting in %j', async (config, message) => {
    const file = join(directory, `bad-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(config));
    const emulator = run(['--port', '0', '--config', file]);
    const [code]: unknown[] = await once(emulator.child, 'exit');
    expect(code).toBe(2);
    expect(emulator.output()).toContain(message);
  });

  it('exits 2 for a file that is not JSON or a bad flag', async () => {
    const file = join(directory, 'broken.json');
    writeFileSync(file, '{ nope');
    const broken = run(['--config', file]);
    expect((await once(broken.child, 'exit'))[0]).toBe(2);
    expect(broken.output()).toContain('is not valid JSON');
    const flag = run(['--speed', 'fast']);
    expect((await once(flag.child, 'exit'))[0]).toBe(2);
    expect(flag.output()).toContain('usage: --port N --config FILE');
  });
});
