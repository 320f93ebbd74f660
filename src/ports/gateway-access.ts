import type { GatewayCredentials } from '../gateway/types.ts';
import type { Result } from '../lib/result.ts';

// Which gateway key and layer a server's requests use: the server settings decide it, video and voice
// ask for it.

/** The server's credentials, or why it has none the bot can use (for the member). */
export type GatewayAccess = Result<GatewayCredentials>;

export interface GatewayAccessResolver {
  resolveGatewayAccess(guildId: string): Promise<GatewayAccess>;
}
