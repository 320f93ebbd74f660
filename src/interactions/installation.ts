import { userInstallScope, type UserInstallPlace } from '../ports/user-install.ts';

// Whose install of the app an interaction comes through. Discord names them in
// `authorizing_integration_owners`: "0" (the server's install) with the server's id, "1" (a member's own
// install) with theirs. In a server that has added the bot, a member who installed the app too brings both,
// and the server's install covers the use: the server's key, settings and role rules apply. A use the
// server's install does not cover (a server without the bot, a DM, a private channel) is the member's own:
// the operator's key within the user-install limits (src/ports/user-install.ts). A DM with the bot is the
// member's own too, whatever Discord names: there is no server to pay.

/** What an interaction says of its installs (discord.js's AuthorizingIntegrationOwners reads them so). */
interface Owned {
  guildId: string | null;
  user: { id: string };
  authorizingIntegrationOwners: { guildId: string | null; userId: string | null };
}

/** The member's own install, and where, when the server's install does not cover this interaction; undefined when it does. */
export function userInstallUse(interaction: Owned): UserInstallPlace | undefined {
  const { guildId } = interaction;
  if (!guildId) return {};
  const owners = interaction.authorizingIntegrationOwners;
  // Only a member's own install, and not the server's, names this server's use as theirs.
  if (owners.userId === null || owners.guildId === guildId) return undefined;
  return { guildId };
}

/**
 * The scope a request counts under: the server's id for a use its install covers, else the member's own
 * install (src/ports/user-install.ts). Where the video part and the settings take a server's id, they take this.
 */
export function scopeOf(interaction: Owned): string {
  const { guildId } = interaction;
  return guildId && !userInstallUse(interaction) ? guildId : userInstallScope(interaction.user.id);
}
