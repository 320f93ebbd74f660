import type { GatewayCredentials } from '../gateway/types.ts';
import type { Result } from '../lib/result.ts';

// Which gateway key and layer a server's requests use: the server settings decide it, video and voice
// ask for it.

/** The server's credentials, or why it has none the bot can use (for the member). */
export type GatewayAccess = Result<GatewayCredentials>;

export interface GatewayAccessResolver {
  /**
   * The key a server's requests use, or for a member's own install of the app (a user-install scope,
   * src/ports/user-install.ts) the operator's; `locale`: the language of whoever reads why there is none
   * (the member who asked, or a card's channel), English unless told.
   */
  resolveGatewayAccess(guildId: string, locale?: string): Promise<GatewayAccess>;
}
