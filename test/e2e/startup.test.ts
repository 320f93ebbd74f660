import { afterEach, describe, expect, it } from 'vitest';
import { cleanupBotDirectories, startBot } from '../support/bot-process.ts';

afterEach(cleanupBotDirectories);

describe('starting the bot with bad configuration', () => {
  it('exits with a message naming each missing variable', async () => {
    const bot = startBot({ env: {} });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toContain('DISCORD_TOKEN is required');
    expect(bot.output()).toContain('GATEWAY_BASE_URL is required');
  });

  it('names the invalid variable and does not echo the token', async () => {
    const token = 'bot-token-that-must-stay-secret';
    const bot = startBot({ env: { DISCORD_TOKEN: token, GATEWAY_BASE_URL: 'not a url', GATEWAY_LAYER: 'v3' } });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toMatch(/GATEWAY_BASE_URL must be an http\(s\) URL/);
    expect(bot.output()).toMatch(/GATEWAY_LAYER must be "compat" or "native"/);
    expect(bot.output()).not.toContain(token);
  });
});
