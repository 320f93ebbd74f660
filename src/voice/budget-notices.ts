import { notice, type Notice } from '../wording/notice.ts';

// What a conversation tells, in its text channel and aloud, when its budget is about to run out and when
// it has: notices around the spending port's reason ("Your daily budget on this server ($1.00) is used up;
// it starts over <t:…:R>."). The channel shows Discord's timestamp; the voice says it in words
// (spoken-lines.ts).

/** From this many seconds left, the warning says "about a minute". */
const ABOUT_A_MINUTE_S = 50;

/** A budget has `msLeft` left, then the conversation ends: `reason` is the spending port's. */
export function budgetWarning(msLeft: number, reason: Notice): Notice<'voice.budget.warning'> {
  const seconds = Math.max(1, Math.round(msLeft / 1000));
  const left = seconds >= ABOUT_A_MINUTE_S ? notice('voice.budget.about-a-minute') : { phrase: 'duration' as const, seconds };
  return notice('voice.budget.warning', { left, reason });
}

/** What is said aloud as the bot leaves a conversation whose budget ran out. */
export function budgetSpent(reason: Notice): Notice<'voice.budget.spent'> {
  return notice('voice.budget.spent', { reason });
}
