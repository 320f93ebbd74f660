import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { botPermissionsInteger } from '../../src/discord/invite.ts';
import type { User } from 'discord-standin';
import { startWorld, type World } from '../support/world.ts';

// A first run on Discord, as README's "Set up on Discord" describes it: the invite link in the log, a
// server that adds the bot gets nothing posted unasked, and /config show says what is missing in one look.

let world: World;

beforeAll(async () => {
  // No operator key and no encryption secret: what a fresh clone with only DISCORD_TOKEN and GATEWAY_BASE_URL has.
  world = await startWorld({ env: { GATEWAY_API_KEY: '' } });
}, 60_000);
afterAll(() => world?.stop());

function firstLineOfShow(user: User, guildId: string, channelId: string): Promise<string> {
  return world.discord
    .runCommand({ user, guildId, channelId, command: 'config', subcommand: 'show' })
    .reply()
    .then((message) => message.content.split('\n')[0] ?? '');
}

describe('a first run on Discord', () => {
  it("logs the invite link: the application's id, both scopes and README's permissions integer", async () => {
    const line = await world.bot.waitForLog((entry) => entry.msg === 'invite link');
    const url = new URL(String(line.url));
    expect(url.origin + url.pathname).toBe('https://discord.com/oauth2/authorize');
    expect(url.searchParams.get('client_id')).toBe(world.discord.applicationId);
    expect(url.searchParams.get('scope')).toBe('bot applications.commands');
    expect(url.searchParams.get('permissions')).toBe('309240908800');
    expect(url.searchParams.get('permissions')).toBe(botPermissionsInteger().toString());
  });

  it('posts nothing in a server that adds it; /config show says first what is missing: a key and the encryption secret', async () => {
    const joined = world.discord.createGuild({ name: 'just added the bot' });
    const first = await firstLineOfShow(joined.admin, joined.id, joined.textChannelId);
    expect(first).toMatch(
      /^\*\*Missing:\*\* a gateway key: `\/video` and `\/voice` cannot work until a server admin sets one with `\/config key`/,
    );
    expect(first).toContain('KEY_ENCRYPTION_SECRET');
    // Only the answer to /config show (an interaction's, private): nothing the bot posted of its own.
    for (const channelId of [joined.textChannelId, joined.voiceChannelId]) {
      expect(
        world.discord.messages(channelId).filter((message) => message.interaction === undefined && message.webhookId === undefined),
      ).toEqual([]);
    }
  });

  it('says nothing is missing once the operator has set a key and the secret', async () => {
    await world.bot.stop();
    await world.restartBot({ GATEWAY_API_KEY: 'emulator-key', KEY_ENCRYPTION_SECRET: 'a-secret-of-at-least-16-characters' });
    const { guild } = world;
    expect(await firstLineOfShow(guild.admin, guild.id, guild.textChannelId)).toBe(
      '**Missing:** nothing; `/video` and `/voice` are ready to use.',
    );
  });
});
