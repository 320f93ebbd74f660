import { describe, expect, it } from 'vitest';
import { cardText } from '../support/cards.ts';
import { videoWorld } from '../support/video-e2e.ts';

// Which video addresses the bot as a process fetches, as its environment configures it (GATEWAY_BASE_URL,
// DOWNLOAD_ALLOWED_HOSTS); test/video/downloads.test.ts covers what it fetches and posts, in this process.

describe('the bot as a process, configured through its environment', () => {
  const e2e = videoWorld({ layer: 'native' });

  async function generate(): Promise<string> {
    const run = e2e.video('generate', { prompt: 'a lighthouse at dusk' });
    return e2e.world.discord.waitFor(
      () => {
        const text = run.record.original ? cardText(run.record.original) : '';
        return text.includes('**Done**') || text.includes('could not be shown') ? text : undefined;
      },
      20_000,
      'a finished card',
    );
  }

  it("refuses a video address on another host than GATEWAY_BASE_URL's when it is not public, and fetches it once DOWNLOAD_ALLOWED_HOSTS lists it", async () => {
    // The emulator names its videos at 127.0.0.1; the bot knows the gateway as localhost.
    const byName = e2e.world.emulator.baseUrl.replace('127.0.0.1', 'localhost');
    await e2e.world.bot.stop();
    await e2e.world.restartBot({ GATEWAY_BASE_URL: byName });
    expect(await generate()).toContain('not on the public internet');

    await e2e.world.bot.stop();
    await e2e.world.restartBot({ GATEWAY_BASE_URL: byName, DOWNLOAD_ALLOWED_HOSTS: 'storage.invalid, 127.0.0.1' });
    expect(await generate()).toContain('**Done**');
  }, 60_000);
});
