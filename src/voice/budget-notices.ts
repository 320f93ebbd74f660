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

export function budgetWarning(msLeft: number, reason: string, now: number): BudgetNotice {
  const seconds = Math.max(1, Math.round(msLeft / 1000));
  const howLong = seconds >= 50 ? 'About a minute' : `${seconds} second${seconds === 1 ? '' : 's'}`;
  const why = `I leave once ${lowerFirst(reason)}`;
  return {
    text: `⏳ ${howLong} of this conversation is left: ${why}`,
    spoken: `${howLong} of this conversation is left: ${spokenTimes(why, now)}`,
  };
}

export function budgetSpent(reason: string, now: number): BudgetNotice {
  return { text: reason, spoken: `${spokenTimes(reason, now)} I am leaving now. Goodbye.` };
}

/** Discord timestamps as words a voice can say: "in 3 hours". */
export function spokenTimes(text: string, now: number): string {
  return text.replace(DISCORD_TIMESTAMP, (_match, seconds: string) => inWords(Number(seconds) * 1000 - now));
}

function inWords(ms: number): string {
  const minutes = Math.max(1, Math.round(ms / 60_000));
  if (minutes < 60) return `in ${count(minutes, 'minute')}`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `in ${count(hours, 'hour')}`;
  return `in ${count(Math.round(hours / 24), 'day')}`;
}

function count(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

function lowerFirst(text: string): string {
  return text.length === 0 ? text : `${text[0]!.toLowerCase()}${text.slice(1)}`;
}
