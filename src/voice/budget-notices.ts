import { formatDuration, formatRelativeTime, t, type Locale } from '../i18n/index.ts';

// What a conversation says, in its text channel and aloud, when its budget is about to run out and when
// it has. The reason comes from the spending port ("Your daily budget on this server ($1.00) is used
// up; it starts over <t:…:R>."): the channel shows Discord's timestamp, the voice says it in words.

/** Discord's timestamp markup, `<t:seconds:style>`. */
const DISCORD_TIMESTAMP = /<t:(\d+)(?::[a-zA-Z])?>/g;

export interface BudgetNotice {
  /** For the text channel. */
  text: string;
  /** For the voice model to say as is. */
  spoken: string;
}

/** From this many seconds left, the warning says "about a minute". */
const ABOUT_A_MINUTE_S = 50;

/**
 * What is said aloud, when the conversation speaks another language than the server's text channel
 * (`/voice settings language`): its language, and the spending port's reason in it.
 */
export interface SpokenIn {
  locale: Locale;
  reason: string;
}

function timeLeft(locale: Locale, msLeft: number): string {
  const seconds = Math.max(1, Math.round(msLeft / 1000));
  return seconds >= ABOUT_A_MINUTE_S ? t(locale, 'voice.budget.about-a-minute') : formatDuration(locale, seconds);
}

/** `reason` is the spending port's, in the server's language (`locale`) already; said aloud in `spoken`'s, else the same. */
export function budgetWarning(
  locale: Locale,
  msLeft: number,
  reason: string,
  now: number,
  spoken: SpokenIn = { locale, reason },
): BudgetNotice {
  return {
    text: `⏳ ${t(locale, 'voice.budget.warning', { left: timeLeft(locale, msLeft), reason })}`,
    spoken: t(spoken.locale, 'voice.budget.warning', {
      left: timeLeft(spoken.locale, msLeft),
      reason: spokenTimes(spoken.locale, spoken.reason, now),
    }),
  };
}

export function budgetSpent(locale: Locale, reason: string, now: number, spoken: SpokenIn = { locale, reason }): BudgetNotice {
  return { text: reason, spoken: t(spoken.locale, 'voice.budget.spent', { reason: spokenTimes(spoken.locale, spoken.reason, now) }) };
}

/** Discord timestamps as words a voice can say: "in 3 hours", "in 3 Stunden". */
export function spokenTimes(locale: Locale, text: string, now: number): string {
  return text.replace(DISCORD_TIMESTAMP, (_match, seconds: string) => inWords(locale, Number(seconds) * 1000 - now));
}

function inWords(locale: Locale, ms: number): string {
  const minutes = Math.max(1, Math.round(ms / 60_000));
  if (minutes < 60) return formatRelativeTime(locale, minutes, 'minute');
  const hours = Math.round(minutes / 60);
  if (hours < 48) return formatRelativeTime(locale, hours, 'hour');
  return formatRelativeTime(locale, Math.round(hours / 24), 'day');
}
