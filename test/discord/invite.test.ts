import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BOT_PERMISSIONS, botPermissionsInteger, inviteUrl } from '../../src/discord/invite.ts';

// The invite link's permissions are exactly the ones README asks the operator to give, and README's
// integer is the one discord.js's flags add up to.

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function section(heading: string): string {
  const start = README.indexOf(heading);
  if (start < 0) throw new Error(`README has no ${heading}`);
  const end = README.indexOf('\n#', start + heading.length);
  return README.slice(start, end < 0 ? undefined : end);
}

describe('the invite link', () => {
  it("carries README's permissions integer, which is the permissions README lists", () => {
    const integers = [...README.matchAll(/(?:permissions=|integer\s+`)(\d+)/g)].map((match) => match[1]);
    expect(integers.length).toBeGreaterThanOrEqual(3);
    for (const integer of integers) expect(integer).toBe(botPermissionsInteger().toString());
    expect(botPermissionsInteger()).toBe(309_240_908_800n);
  });

  it('asks for every permission README lists, and only those', () => {
    const listed = [
      ...section('### Permissions to give the bot')
        .split('Without one of these')[0]!
        .matchAll(/\*\*([^*]+)\*\*/g),
    ].map((match) => match[1]!.replace(/\s+/g, ' '));
    expect(new Set(listed)).toEqual(new Set(BOT_PERMISSIONS.map(([name]) => name)));
  });

  it('names the application, both scopes and the integer', () => {
    const url = new URL(inviteUrl('1234567890'));
    expect(url.origin + url.pathname).toBe('https://discord.com/oauth2/authorize');
    expect(url.searchParams.get('client_id')).toBe('1234567890');
    expect(url.searchParams.get('scope')).toBe('bot applications.commands');
    expect(url.searchParams.get('permissions')).toBe('309240908800');
    expect(section('## Set up on Discord')).toContain(inviteUrl('APPLICATION_ID'));
  });
});
