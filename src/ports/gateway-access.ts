import type { GatewayCredentials } from '../gateway/types.ts';
import type { Outcome } from '../wording/notice.ts';

// Which gateway key and layer a server's requests use: the server settings decide it, video and voice
// ask for it.

/** The server's credentials, or why it has none the bot can use. */
export type GatewayAccess = Outcome<GatewayCredentials>;

export interface GatewayAccessResolver {
  /**
   * The key a server's requests use, or for a member's own install of the app (a user-install scope,
   * src/ports/user-install.ts) the operator's.
   */
  resolveGatewayAccess(guildId: string): Promise<GatewayAccess>;
}
