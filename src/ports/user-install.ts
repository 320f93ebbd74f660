// A member's own install of the app (Discord's user install): what they make through it is theirs, not a
// server's. No server's key, settings, roles or budgets apply: the operator's key pays (GATEWAY_API_KEY),
// within the limits the operator sets per member and UTC day. The video part and the settings know such a
// use by its scope, which stands where a server's id stands for a server's use (the task's `guildId`, the
// usage ledger's record, the member's list of tasks): a server's id is digits, a scope never is.

const SCOPE_PREFIX = 'user-install:';

/** The scope a member's own install counts under: their tasks, their limits, their spend of the operator's key. */
export function userInstallScope(userId: string): string {
  return `${SCOPE_PREFIX}${userId}`;
}

/** Whether `scope` is a member's own install rather than a server. */
export function isUserInstallScope(scope: string): boolean {
  return scope.startsWith(SCOPE_PREFIX);
}

/**
 * Where a use through a member's own install happened, which the bot is not a member of (or, in the bot's
 * DM, may not keep writing to through the interaction): everything it shows goes through the interaction,
 * and after its token ends, to the member's DMs.
 */
export interface UserInstallPlace {
  /** The server it was asked in, when it was (one that has not added the bot); unset in a DM or a private channel. */
  guildId?: string;
}
