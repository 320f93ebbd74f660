import { refuse, type Notice, type Outcome } from '../wording/notice.ts';
import type { Feature, GuildSettings } from './guild-settings.ts';

// Who may use /video and /voice on a server. The Manage Server check itself is `isServerManager()` in
// src/discord/member.ts (it reads the interaction); this part only needs the member's roles.

/** Let in, or why not: the roles that would do, as a notice the edge words. */
export type AccessVerdict = Outcome<object, object, Notice<'access.roles-only'>>;

/** Everyone when the server allowed no roles; otherwise members with one of them, and admins always. */
export function checkAccess(
  memberRoleIds: readonly string[],
  settings: Pick<GuildSettings, 'roles'>,
  feature: Feature,
  isServerManager: boolean,
): AccessVerdict {
  if (isServerManager) return { ok: true };
  const allowed = settings.roles[feature];
  if (allowed.length === 0 || allowed.some((role) => memberRoleIds.includes(role))) return { ok: true };
  return refuse('access.roles-only', {
    command: `/${feature}`,
    roles: { phrase: 'list', items: allowed.map((role) => `<@&${role}>`), type: 'disjunction' },
  });
}
