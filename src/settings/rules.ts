import { refuse, type Notice, type Outcome } from '../wording/notice.ts';
import type { Feature, ServerRules } from './guild-settings.ts';

// Who may use the bot on a server, and where, by its moderators' rules (`/config rules`): a member they
// denied is refused everything the bot does there, and videos are made only in the channels they chose.
// Pure, over rules read once per interaction; the roles a feature needs are access.ts's.

/** Let through, or refused by a moderators' rule, as a notice the edge words. */
export type RulesVerdict = Outcome<object, object, Notice<'rules.refusal.denied' | 'rules.refusal.video-channels'>>;

/** Refused when the moderators denied the member the bot on this server; the server's owner and admins included. */
export function memberRefusal(rules: Pick<ServerRules, 'denied'>, userId: string): RulesVerdict {
  return rules.denied.includes(userId) ? refuse('rules.refusal.denied') : { ok: true };
}

/** Where a member asked: the channel, and a thread's parent channel (a thread of an allowed channel is allowed). */
export interface MemberPlace {
  channelIds: readonly string[];
  /** What they used, as the refusal names it (`/video generate`, **Animate image**). */
  what: string;
}

/** Refused when `feature` is kept to some channels and the member is in none of them; only video has such a rule. */
export function channelRefusal(rules: Pick<ServerRules, 'videoChannels'>, feature: Feature, place: MemberPlace): RulesVerdict {
  const allowed = feature === 'video' ? rules.videoChannels : [];
  if (allowed.length === 0 || place.channelIds.some((id) => allowed.includes(id))) return { ok: true };
  return refuse('rules.refusal.video-channels', {
    what: place.what,
    channels: { phrase: 'list', items: allowed.map((id) => `<#${id}>`), type: 'disjunction' },
  });
}
