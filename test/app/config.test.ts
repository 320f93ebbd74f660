import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_STORE_URL, loadConfig, readEnvironment } from '../../src/config.ts';
import { describePrices } from '../../src/interactions/settings-answers.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';

const minimal = { DISCORD_TOKEN: 'discord-token-value', GATEWAY_BASE_URL: 'http://127.0.0.1:8787' };

function problemsOf(environment: Record<string, string>): string[] {
  const result = loadConfig(environment);
  return result.ok ? [] : result.problems;
}

describe('configuration from the environment', () => {
  it('fills every default from the two required variables', () => {
    const result = loadConfig(minimal);
    expect(result).toEqual({
      ok: true,
      config: {
        discordToken: 'discord-token-value',
        discordApiUrl: undefined,
        gatewayBaseUrl: 'http://127.0.0.1:8787',
        gatewayWsUrl: 'ws://127.0.0.1:8787',
        gatewayApiKey: undefined,
        gatewayLayer: 'compat',
        gatewayVendor: 'svc',
        gatewayEditPath: '/videos/edits',
        gatewayExtensionPath: '/videos/extensions',
        keyEncryptionSecret: undefined,
        keyEncryptionSecretPrevious: undefined,
        storeUrl: DEFAULT_STORE_URL,
        devGuildId: undefined,
        logLevel: 'info',
        taskPollIntervalMs: 5_000,
        downloadAllowedHosts: undefined,
        sharding: { count: 'auto', ids: undefined, perProcess: 1 },
        prices: DEFAULT_PRICES,
        userInstalls: { enabled: false, dailyVideos: 5, dailyUsd: 2 },
        forgetMembersWhoLeave: false,
        opusCodec: 'auto',
      },
    });
  });

  it('reads SHARD_COUNT, SHARD_IDS and SHARDS_PER_PROCESS', () => {
    const result = loadConfig({ ...minimal, SHARD_COUNT: '8', SHARD_IDS: '0-3, 6', SHARDS_PER_PROCESS: '2' });
    expect(result.ok && result.config.sharding).toEqual({ count: 8, ids: '0-3, 6', perProcess: 2 });
    expect(loadConfig({ ...minimal, SHARD_COUNT: 'AUTO', SHARD_IDS: '5' }).ok).toBe(true);
  });

  it("takes the machine's shards from its ordinal with SHARD_IDS=auto-ordinal: POD_INDEX first, else the host name", () => {
    const fromPodIndex = loadConfig(
      { ...minimal, SHARD_COUNT: '8', SHARD_IDS: 'auto-ordinal', SHARDS_PER_MACHINE: '2', POD_INDEX: '3' },
      () => 'bot-1',
    );
    expect(fromPodIndex.ok && fromPodIndex.config.sharding).toEqual({
      count: 8,
      ids: { ordinal: 3, perMachine: 2, source: 'POD_INDEX=3' },
      perProcess: 1,
    });
    const fromHostName = loadConfig({ ...minimal, SHARD_IDS: 'auto-ordinal', SHARDS_PER_MACHINE: '4' }, () => 'video-bot-2');
    expect(fromHostName.ok && fromHostName.config.sharding.ids).toEqual({ ordinal: 2, perMachine: 4, source: 'host name "video-bot-2"' });
    // SHARDS_PER_MACHINE defaults to one shard per machine.
    const single = loadConfig({ ...minimal, SHARD_IDS: 'auto-ordinal', POD_INDEX: '5' }, () => 'bot-9');
    expect(single.ok && single.config.sharding.ids).toEqual({ ordinal: 5, perMachine: 1, source: 'POD_INDEX=5' });
  });

  it.each([
    [
      { SHARD_IDS: 'auto-ordinal' },
      'SHARD_IDS=auto-ordinal takes the machine\'s ordinal from POD_INDEX, or else from the number its host name ends in (bot-3: 3), but POD_INDEX is unset and the host name "laptop" ends in no number. Set POD_INDEX, or list the shards in SHARD_IDS.',
    ],
    [{ SHARD_IDS: 'auto-ordinal', POD_INDEX: 'three' }, 'POD_INDEX must be the machine\'s ordinal, a whole number from 0 (got "three").'],
    [
      { SHARD_COUNT: '8', SHARD_IDS: 'auto-ordinal', SHARDS_PER_MACHINE: '2', POD_INDEX: '4' },
      'SHARD_IDS=auto-ordinal gives machine 4 (POD_INDEX=4) shards 8-9 with SHARDS_PER_MACHINE=2, but SHARD_COUNT is 8 (shards 0 to 7): ordinals 0 to 3 fit: run 4 machines or raise SHARD_COUNT.',
    ],
    [
      { SHARD_IDS: 'auto-ordinal', SHARDS_PER_MACHINE: '0', POD_INDEX: '1' },
      'SHARDS_PER_MACHINE must be a whole number of shards per machine, at least 1 (got "0").',
    ],
    [
      { SHARD_IDS: '0-1', SHARDS_PER_MACHINE: '2' },
      'SHARDS_PER_MACHINE applies only with SHARD_IDS=auto-ordinal (got SHARD_IDS="0-1"): set both, or neither.',
    ],
  ])('refuses SHARD_IDS=auto-ordinal with %o, naming the variables', (variables, problem) => {
    const result = loadConfig({ ...minimal, ...variables }, () => 'laptop');
    expect(result.ok ? [] : result.problems).toEqual([problem]);
  });

  it.each([
    [{ SHARD_COUNT: '0' }, 'SHARD_COUNT must be "auto" (Discord\'s recommendation) or a whole number of shards from 1 to 10000 (got "0").'],
    [
      { SHARD_COUNT: 'two' },
      'SHARD_COUNT must be "auto" (Discord\'s recommendation) or a whole number of shards from 1 to 10000 (got "two").',
    ],
    [{ SHARD_COUNT: '2', SHARD_IDS: '0-2' }, 'SHARD_IDS names shard 2, but SHARD_COUNT is 2 (shards 0 to 1).'],
    [{ SHARD_IDS: '3-1' }, 'SHARD_IDS has a range that runs backwards: "3-1".'],
    [{ SHARD_IDS: '0;1' }, 'SHARD_IDS must list shard ids and ranges such as 0-3 or 0,2,5 (got "0;1").'],
    [{ SHARDS_PER_PROCESS: '0' }, 'SHARDS_PER_PROCESS must be a whole number of shards per worker process, at least 1 (got "0").'],
  ])('refuses %o naming the variable', (variables, problem) => {
    expect(problemsOf({ ...minimal, ...variables })).toEqual([problem]);
  });

  it('derives wss from an https gateway and keeps an explicit websocket url', () => {
    const derived = loadConfig({ ...minimal, GATEWAY_BASE_URL: 'https://gw.example/' });
    expect(derived.ok && derived.config.gatewayWsUrl).toBe('wss://gw.example');
    const explicit = loadConfig({ ...minimal, GATEWAY_WS_URL: 'wss://voice.example/' });
    expect(explicit.ok && explicit.config.gatewayWsUrl).toBe('wss://voice.example');
  });

  it('takes DISCORD_API_URL with or without the API version (discord.js adds /v10 itself)', () => {
    for (const written of [
      'http://127.0.0.1:8900/api',
      'http://127.0.0.1:8900/api/',
      'http://127.0.0.1:8900/api/v10',
      'http://127.0.0.1:8900/api/v9/',
    ]) {
      const result = loadConfig({ ...minimal, DISCORD_API_URL: written });
      expect(result.ok && result.config.discordApiUrl).toBe('http://127.0.0.1:8900/api');
    }
  });

  it('names each missing required variable', () => {
    const problems = problemsOf({});
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^DISCORD_TOKEN is required/);
    expect(problems[1]).toMatch(/^GATEWAY_BASE_URL is required/);
  });

  it('treats an empty assignment as unset', () => {
    expect(problemsOf({ ...minimal, DISCORD_TOKEN: '  ' })[0]).toMatch(/^DISCORD_TOKEN is required/);
    expect(loadConfig({ ...minimal, DISCORD_API_URL: '', GATEWAY_LAYER: '' }).ok).toBe(true);
  });

  it.each([
    ['DISCORD_API_URL', 'discord.local', /^DISCORD_API_URL must be an http\(s\) URL/],
    ['GATEWAY_BASE_URL', 'ftp://gw', /^GATEWAY_BASE_URL must be an http\(s\) URL/],
    ['GATEWAY_WS_URL', 'http://gw', /^GATEWAY_WS_URL must be a ws\(s\) URL/],
    ['GATEWAY_LAYER', 'v2', /^GATEWAY_LAYER must be "compat" or "native"/],
    ['GATEWAY_VENDOR', 'two words', /^GATEWAY_VENDOR must be a single word/],
    ['GATEWAY_EDIT_PATH', 'videos/edits', /^GATEWAY_EDIT_PATH must be a path starting with \/ under the layer prefix/],
    ['GATEWAY_EDIT_PATH', '/videos/edits?x=1', /^GATEWAY_EDIT_PATH must be a path starting with \//],
    [
      'GATEWAY_EXTENSION_PATH',
      'https://gw.example/v1/videos/extensions',
      /^GATEWAY_EXTENSION_PATH must be a path starting with \/ under the layer prefix, such as \/videos\/extensions/,
    ],
    ['KEY_ENCRYPTION_SECRET', 'short', /^KEY_ENCRYPTION_SECRET must be at least 16 characters/],
    ['STORE_URL', 'postgres://db', /^STORE_URL must be sqlite:\/\/<file> or redis:\/\/<host>:<port>/],
    ['DEV_GUILD_ID', 'my-server', /^DEV_GUILD_ID must be a Discord server id/],
    ['LOG_LEVEL', 'loud', /^LOG_LEVEL must be one of debug, info, warn, error/],
    ['TASK_POLL_INTERVAL_MS', '5s', /^TASK_POLL_INTERVAL_MS must be a whole number of milliseconds/],
    ['KEY_ENCRYPTION_SECRET_PREVIOUS', 'an-old-secret-value', /^KEY_ENCRYPTION_SECRET_PREVIOUS is set without KEY_ENCRYPTION_SECRET/],
  ])('rejects an invalid %s with a message naming it', (name, value, message) => {
    const problems = problemsOf({ ...minimal, [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it('reads the edit and extension paths, relative to the layer prefix', () => {
    const result = loadConfig({ ...minimal, GATEWAY_EDIT_PATH: '/video/edit', GATEWAY_EXTENSION_PATH: ' /video/extend ' });
    expect(result.ok && [result.config.gatewayEditPath, result.config.gatewayExtensionPath]).toEqual(['/video/edit', '/video/extend']);
  });

  it('never repeats a secret in a problem', () => {
    const secret = 'short-secret';
    const problems = problemsOf({ ...minimal, KEY_ENCRYPTION_SECRET: secret.slice(0, 10), STORE_URL: 'redis://user:hunter2@' });
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems.join('\n')).not.toContain(secret.slice(0, 10));
  });

  it('names every problem at once, each with its variable and why, in the order of the README', () => {
    const result = loadConfig(
      {
        GATEWAY_BASE_URL: 'ftp://gw',
        GATEWAY_LAYER: 'v2',
        KEY_ENCRYPTION_SECRET_PREVIOUS: 'an-old-secret-value',
        TASK_POLL_INTERVAL_MS: '5s',
        SHARD_COUNT: 'two',
        SHARD_IDS: 'auto-ordinal',
        OPS_PORT: '70000',
        USER_INSTALLS: 'yes',
        DOWNLOAD_ALLOWED_HOSTS: '10.0.0.5,storage.internal/videos',
      },
      () => 'laptop',
    );
    const problems = [
      'DISCORD_TOKEN is required: the bot token from the Discord developer portal.',
      'GATEWAY_BASE_URL must be an http(s) URL (got "ftp://gw").',
      'GATEWAY_LAYER must be "compat" or "native" (got "v2").',
      'KEY_ENCRYPTION_SECRET_PREVIOUS is set without KEY_ENCRYPTION_SECRET: set the new secret too, or remove the previous one.',
      'TASK_POLL_INTERVAL_MS must be a whole number of milliseconds, at least 100 (got "5s").',
      'SHARD_COUNT must be "auto" (Discord\'s recommendation) or a whole number of shards from 1 to 10000 (got "two").',
      expect.stringMatching(
        /^SHARD_IDS=auto-ordinal takes the machine's ordinal from POD_INDEX, .* the host name "laptop" ends in no number/,
      ),
      'OPS_PORT must be a TCP port from 1 to 65535 (0: any free port, logged) for /healthz, /readyz and /metrics, or unset to serve none (got "70000").',
      'USER_INSTALLS must be "on" or "off" (got "yes").',
      expect.stringMatching(/^DOWNLOAD_ALLOWED_HOSTS must be a comma-separated list .* \(got "storage\.internal\/videos"\)\.$/),
    ];
    expect(result).toEqual({ ok: false, problems, message: expect.any(String) });
    expect(!result.ok && result.message.split('\n')).toEqual(problems);
  });

  it('names a problem between two variables beside those of each one', () => {
    const problems = problemsOf({
      ...minimal,
      SHARD_COUNT: '4',
      SHARD_IDS: '2-5',
      SHARDS_PER_PROCESS: 'two',
      PRICES_FILE: join(tmpdir(), 'no-such-prices-file.json'),
    });
    expect(problems).toEqual([
      'SHARD_IDS names shard 5, but SHARD_COUNT is 4 (shards 0 to 3).',
      'SHARDS_PER_PROCESS must be a whole number of shards per worker process, at least 1 (got "two").',
      expect.stringMatching(/^PRICES_FILE cannot be read \(.*no-such-prices-file\.json: .*ENOENT/),
    ]);
  });

  it.each([
    ['the encryption secret, too short', { KEY_ENCRYPTION_SECRET: 'tooshort-7f3a' }, 'tooshort-7f3a'],
    ['the previous secret, without the new one', { KEY_ENCRYPTION_SECRET_PREVIOUS: 'previous-secret-9c2e51' }, 'previous-secret-9c2e51'],
    ['the password in STORE_URL', { STORE_URL: 'redis://bot:hunter2-password@' }, 'hunter2-password'],
    [
      'the token and the key, beside other problems',
      { DISCORD_TOKEN: 'token-d41d8cd9', GATEWAY_API_KEY: 'key-8f00b204', LOG_LEVEL: 'loud' },
      'd41d8cd9',
    ],
    ['the key, beside other problems', { GATEWAY_API_KEY: 'key-8f00b204', GATEWAY_LAYER: 'v9' }, '8f00b204'],
  ])('never shows %s in a problem', (_what, secrets, secret) => {
    const problems = problemsOf({ ...minimal, ...secrets, GATEWAY_VENDOR: 'two words' });
    expect(problems.length).toBeGreaterThan(1);
    expect(problems.join('\n')).not.toContain(secret);
  });

  it('reads .env under the environment, which wins', () => {
    const directory = mkdtempSync(join(tmpdir(), 'env-'));
    const file = join(directory, '.env');
    writeFileSync(file, 'DISCORD_TOKEN=from-file\nGATEWAY_LAYER=native\n');
    const environment = readEnvironment(file, { DISCORD_TOKEN: 'from-env' });
    expect(environment.DISCORD_TOKEN).toBe('from-env');
    expect(environment.GATEWAY_LAYER).toBe('native');
    expect(readEnvironment(join(directory, 'missing.env'), { A: '1' })).toEqual({ A: '1' });
  });

  it('lets an empty environment variable fall back to the .env value (empty counts as unset)', () => {
    const directory = mkdtempSync(join(tmpdir(), 'env-'));
    const file = join(directory, '.env');
    writeFileSync(file, 'DISCORD_TOKEN=from-file-token\nGATEWAY_BASE_URL=http://127.0.0.1:8787\n');
    // As after `DISCORD_TOKEN= npm start`, or a blank line copied from .env.example.
    const environment = readEnvironment(file, { DISCORD_TOKEN: '', GATEWAY_BASE_URL: '  ' });
    expect(environment.DISCORD_TOKEN).toBe('from-file-token');
    const result = loadConfig(environment);
    expect(result.ok && result.config.discordToken).toBe('from-file-token');
    expect(result.ok && result.config.gatewayBaseUrl).toBe('http://127.0.0.1:8787');
  });

  it('reads DOWNLOAD_ALLOWED_HOSTS as host names or IP addresses, as URLs write them, each with an optional port', () => {
    const result = loadConfig({ ...minimal, DOWNLOAD_ALLOWED_HOSTS: ' Storage.Internal , 10.0.0.5:9000,[::1],[::1]:8080,,' });
    expect(result.ok && result.config.downloadAllowedHosts).toEqual(['storage.internal', '10.0.0.5:9000', '[::1]', '[::1]:8080']);
  });

  it.each(['http://storage.internal', 'storage.internal:0', 'storage.internal:70000', 'storage.internal/videos', '*.internal', 'a b'])(
    'names DOWNLOAD_ALLOWED_HOSTS when an entry is "%s"',
    (entry) => {
      expect(problemsOf({ ...minimal, DOWNLOAD_ALLOWED_HOSTS: `10.0.0.5,${entry}` })).toEqual([
        `DOWNLOAD_ALLOWED_HOSTS must be a comma-separated list of host names or IP addresses, each with an optional port, without scheme or path, such as storage.internal,10.0.0.5:9000 (got "${entry}").`,
      ]);
    },
  );

  describe('user installs', () => {
    it('are off unless USER_INSTALLS=on, with the limits a member has a day through their own install', () => {
      const result = loadConfig({ ...minimal, USER_INSTALLS: 'on', USER_INSTALL_DAILY_VIDEOS: '3', USER_INSTALL_DAILY_USD: '0.5' });
      expect(result.ok && result.config.userInstalls).toEqual({ enabled: true, dailyVideos: 3, dailyUsd: 0.5 });
      const off = loadConfig({ ...minimal, USER_INSTALLS: 'OFF', USER_INSTALL_DAILY_VIDEOS: '0' });
      expect(off.ok && off.config.userInstalls).toEqual({ enabled: false, dailyVideos: 0, dailyUsd: 2 });
    });

    it('names each variable that is not a setting it takes', () => {
      expect(problemsOf({ ...minimal, USER_INSTALLS: 'yes', USER_INSTALL_DAILY_VIDEOS: '2.5', USER_INSTALL_DAILY_USD: '-1' })).toEqual([
        'USER_INSTALLS must be "on" or "off" (got "yes").',
        expect.stringMatching(/^USER_INSTALL_DAILY_VIDEOS must be a whole number .* \(got "2\.5"\)\.$/),
        expect.stringMatching(/^USER_INSTALL_DAILY_USD must be the dollars .* \(got "-1"\)\.$/),
      ]);
    });
  });

  it('runs the Opus codec OPUS_CODEC names: auto (native where it built) or opusscript, nothing else', () => {
    const forced = loadConfig({ ...minimal, OPUS_CODEC: 'opusscript' });
    expect(forced.ok && forced.config.opusCodec).toBe('opusscript');
    expect(problemsOf({ ...minimal, OPUS_CODEC: 'native' })).toEqual(['OPUS_CODEC must be "auto" or "opusscript" (got "native").']);
  });

  describe('PRICES_FILE', () => {
    let directory: string;
    beforeEach(() => {
      directory = mkdtempSync(join(tmpdir(), 'prices-'));
    });
    afterEach(() => rmSync(directory, { recursive: true, force: true }));

    function pricesFile(content: string): string {
      const file = join(directory, 'prices.json');
      writeFileSync(file, content);
      return file;
    }

    it('prices estimates with what the file names, the defaults for the rest', () => {
      const file = pricesFile('{"video": {"*": {"per_second_usd": {"1080p": 0.2}}}, "voice": {"svc-voice-pro": {"per_minute_usd": 0.1}}}');
      const result = loadConfig({ ...minimal, PRICES_FILE: file });
      expect(result.ok && describePrices(result.config.prices)).toEqual([
        'video, any model: $0.05/s at 480p, $0.08/s at 720p, $0.20/s at 1080p',
        'voice, any model: $0.05/min',
        'voice, `svc-voice-pro`: $0.10/min',
      ]);
    });

    it('stops the start on a bad file, naming PRICES_FILE and the field', () => {
      const file = pricesFile('{"video": {"*": {"per_second_usd": {"720p": "cheap"}}}}');
      expect(problemsOf({ ...minimal, PRICES_FILE: file })).toEqual([
        `PRICES_FILE (${file}): video.*.per_second_usd.720p must be a price in dollars, 0 or more (got "cheap").`,
      ]);
      const broken = pricesFile('{"video": {');
      expect(problemsOf({ ...minimal, PRICES_FILE: broken })).toEqual([
        expect.stringMatching(/^PRICES_FILE \(.*prices\.json\): it is not JSON/),
      ]);
    });

    it('stops the start on a file it cannot read, naming PRICES_FILE and the path', () => {
      const missing = join(directory, 'no-such-prices.json');
      expect(problemsOf({ ...minimal, PRICES_FILE: missing })).toEqual([
        expect.stringMatching(new RegExp(`^PRICES_FILE cannot be read \\(${missing.replaceAll('.', '\\.')}: .*ENOENT`)),
      ]);
      expect(problemsOf({ ...minimal, PRICES_FILE: directory })).toEqual([expect.stringMatching(/^PRICES_FILE cannot be read \(.*EISDIR/)]);
    });
  });
});
