import { describe, expect, it } from 'vitest';
import { scopeOf, userInstallUse } from '../../src/interactions/installation.ts';
import { userInstallScope } from '../../src/ports/user-install.ts';

// Whose install an interaction comes through, from `authorizing_integration_owners` as Discord sends it:
// "0" with the server's id for the server's install (or "0" in the bot's DM), "1" with the member's id for
// their own install of the app.

const GUILD = '100000000000000001';
const MEMBER = '300000000000000003';
const use = (guildId: string | null, owners: { guildId?: string; userId?: string }) => ({
  guildId,
  user: { id: MEMBER },
  authorizingIntegrationOwners: { guildId: owners.guildId ?? null, userId: owners.userId ?? null },
});

describe("an interaction's install", () => {
  it("is the server's where the server's install covers it, even when the member installed the app too", () => {
    for (const interaction of [use(GUILD, { guildId: GUILD }), use(GUILD, { guildId: GUILD, userId: MEMBER })]) {
      expect(userInstallUse(interaction)).toBeUndefined();
      expect(scopeOf(interaction)).toBe(GUILD);
    }
  });

  it("is the member's own in a server that has not added the bot, and there it counts under their scope", () => {
    const interaction = use(GUILD, { userId: MEMBER });
    expect(userInstallUse(interaction)).toEqual({ guildId: GUILD });
    expect(scopeOf(interaction)).toBe(userInstallScope(MEMBER));
  });

  it("is the member's own in a DM or a private channel, whoever Discord names: no server pays there", () => {
    for (const owners of [{ userId: MEMBER }, { guildId: '0' }, { guildId: '0', userId: MEMBER }]) {
      expect(userInstallUse(use(null, owners))).toEqual({});
      expect(scopeOf(use(null, owners))).toBe(userInstallScope(MEMBER));
    }
  });
});
