import { execFile, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { generate } from 'selfsigned';
import { Agent, fetch as undiciFetch } from 'undici';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isRecord, parseJsonText, readString } from '../../src/lib/json.ts';

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

/** The start-up line ('gateway emulator listening'), once the process printed it. */
async function startupLine(process: ReturnType<typeof run>): Promise<Readonly<Record<string, unknown>>> {
  for (;;) {
    for (const line of process.output().split('\n')) {
      const parsed = parseJsonText(line);
      if (parsed.ok && isRecord(parsed.value) && parsed.value.msg === 'gateway emulator listening') return parsed.value;
    }
    if (process.child.exitCode !== null) throw new Error(`the emulator ended: ${process.output()}`);
    await once(process.child.stdout, 'data');
  }
}

async function stop(process: ReturnType<typeof run>): Promise<void> {
  process.child.kill('SIGTERM');
  await once(process.child, 'exit');
}

/** The status a separate Node process gets for GET `url` with the default key, with `env` as its environment. */
async function statusFromAnotherProcess(url: string, env: Record<string, string>): Promise<string> {
  const script =
    "fetch(process.argv[1], { headers: { authorization: 'Bearer emulator-key' } }).then((r) => process.stdout.write(String(r.status)), (e) => process.stdout.write(String(e.cause?.code ?? e)))";
  const { stdout } = await promisify(execFile)(join(ROOT, 'scripts', 'node'), ['-e', script, url], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  return stdout;
}

describe('the emulator command', () => {
  it('serves the keys and groups of a config file, and only those', async () => {
    const file = join(directory, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        keys: { 'team-key-123456': { group: 'team', quota_usd: 5 } },
        groups: { team: { models: ['svc-imagine-video-1.5'] } },
      }),
    );
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
      const models = (await (await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer emulator-key' } })).json()) as {
        data: { id: string }[];
      };
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
    [
      { keys: { 'team-key-123456': { group: 'default', quota_usd: 1, limits: { concurrent_tasks: 0 } } } },
      'keys.team…56.limits.concurrent_tasks must be a positive whole number',
    ],
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

  it('with --tls, serves https and wss and prints the certificate file that clients trust with NODE_EXTRA_CA_CERTS', async () => {
    const emulator = run(['--tls', '--port', '0']);
    try {
      const line = await startupLine(emulator);
      const url = readString(line, 'url') ?? '';
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(readString(line, 'realtime')).toBe(`${url.replace('https:', 'wss:')}/native/v1/realtime?model=svc-voice-latest`);
      const caFile = readString(line, 'caFile') ?? '';
      expect(readFileSync(caFile, 'utf8')).toContain('BEGIN CERTIFICATE');
      expect(await statusFromAnotherProcess(`${url}/v1/models`, { NODE_EXTRA_CA_CERTS: caFile })).toBe('200');
      expect(await statusFromAnotherProcess(`${url}/v1/models`, {})).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    } finally {
      await stop(emulator);
    }
    // Stopping removes the file: the next start makes a new certificate.
    expect(existsSync(readString(await startupLine(emulator), 'caFile') ?? '')).toBe(false);
  });

  it('reads --host, --public-url and --tls from EMULATOR_HOST, EMULATOR_PUBLIC_URL and EMULATOR_TLS=1', async () => {
    const emulator = run([], {
      EMULATOR_PORT: '0',
      EMULATOR_TLS: '1',
      EMULATOR_HOST: '127.0.0.2',
      EMULATOR_PUBLIC_URL: 'https://gateway.example.test:9443',
    });
    try {
      const line = await startupLine(emulator);
      expect(line.url).toBe('https://gateway.example.test:9443');
      expect(line.realtime).toBe('wss://gateway.example.test:9443/native/v1/realtime?model=svc-voice-latest');
      const listening = readString(line, 'listening') ?? '';
      expect(listening).toMatch(/^https:\/\/127\.0\.0\.2:\d+$/);
      const ca = readFileSync(readString(line, 'caFile') ?? '', 'utf8');
      expect(new X509Certificate(ca).subjectAltName).toContain('DNS:gateway.example.test');
      const agent = new Agent({ connect: { ca } });
      try {
        expect(
          (await undiciFetch(`${listening}/v1/models`, { headers: { authorization: 'Bearer emulator-key' }, dispatcher: agent })).status,
        ).toBe(200);
      } finally {
        await agent.close();
      }
    } finally {
      await stop(emulator);
    }
  });

  it('serves the certificate of --cert and --key (or EMULATOR_TLS_CERT and EMULATOR_TLS_KEY), and prints no certificate file', async () => {
    const own = await generate([{ name: 'commonName', value: 'own test certificate' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    const certFile = join(directory, 'own-cert.pem');
    const keyFile = join(directory, 'own-key.pem');
    writeFileSync(certFile, own.cert);
    writeFileSync(keyFile, own.private);
    for (const emulator of [
      run(['--port', '0', '--cert', certFile, '--key', keyFile]),
      run([], { EMULATOR_PORT: '0', EMULATOR_TLS_CERT: certFile, EMULATOR_TLS_KEY: keyFile }),
    ]) {
      try {
        const line = await startupLine(emulator);
        expect(line.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
        expect(line.caFile).toBeUndefined();
        expect(await statusFromAnotherProcess(`${readString(line, 'url')}/v1/models`, { NODE_EXTRA_CA_CERTS: certFile })).toBe('200');
      } finally {
        await stop(emulator);
      }
    }
  });

  it.each([
    [['--cert', 'cert.pem'], '--cert and --key (EMULATOR_TLS_CERT and EMULATOR_TLS_KEY) go together'],
    [['--public-url', 'gateway.example.test'], '--public-url: the public URL must be an absolute http(s) URL'],
    [['--cert', '/nonexistent/cert.pem', '--key', '/nonexistent/key.pem'], 'cannot read the certificate file /nonexistent/cert.pem'],
  ])('exits 2 for %j', async (args, message) => {
    const emulator = run(args);
    expect((await once(emulator.child, 'exit'))[0]).toBe(2);
    expect(emulator.output()).toContain(message);
  });
});
