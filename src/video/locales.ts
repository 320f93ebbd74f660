import { resolveLocale, type Locale } from '../i18n/index.ts';
import type { InteractionContext } from '../ports/interaction-context.ts';

// Whose language the video part speaks: a refusal only the member reads in theirs, the card the whole
// channel reads in the server's (English when the bot speaks neither).

/** The language of a private answer to whoever asked for a video. */
export function memberLocaleOf(context: Pick<InteractionContext, 'locale' | 'guildLocale'>): Locale {
  return resolveLocale(context.locale, context.guildLocale, 'member');
}

/** The language of a video's card and of what the bot posts about it: the server's. */
export function channelLocaleOf(context: Pick<InteractionContext, 'locale' | 'guildLocale'>): Locale {
  return resolveLocale(context.locale, context.guildLocale, 'channel');
}
