import { formatList, t, type Locale } from '../i18n/index.ts';
import type { Result } from '../lib/result.ts';
import type { Feature, GuildSettings } from './guild-settings.ts';

// Who may use /video and /voice on a server. The Manage Server check itself is `isServerManager()` in
// src/discord/member.ts (it reads the interaction); this part only needs the member's roles.

export type AccessVerdict = Result;

/** Everyone when the server allowed no roles; otherwise members with one of them, and admins always. */
export function checkAccess(
  memberRoleIds: readonly string[],
  settings: Pick<GuildSettings, 'roles'>,
  feature: Feature,
  isServerManager: boolean,
  locale: Locale,
): AccessVerdict {
  if (isServerManager) return { ok: true };
  const allowed = settings.roles[feature];
  if (allowed.length === 0 || allowed.some((role) => memberRoleIds.includes(role))) return { ok: true };
  const roles = formatList(
    locale,
    allowed.map((role) => `<@&${role}>`),
    'disjunction',
  );
  return { ok: false, message: t(locale, 'access.roles-only', { command: `/${feature}`, roles }) };
}
