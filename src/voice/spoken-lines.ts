import type { VoiceSettings } from '../ports/voice-settings.ts';
import { formatRelativeTime, resolveLocale, type Locale } from '../i18n/index.ts';
import { word, type Notice } from '../wording/notice.ts';
import type { ChannelLines } from './channel-lines.ts';

// What the bot says aloud in a conversation on its own (it is back, it restarts, a video is ready, a budget
// runs out), worded in the conversation's language: the voice service tells it as notices, this renderer
// words them for the voice model to say as they are.

/** Discord's timestamp markup, `<t:seconds:style>`. */
const DISCORD_TIMESTAMP = /<t:(\d+)(?::[a-zA-Z])?>/g;

export class SpokenLines {
  readonly #server: Pick<ChannelLines, 'serverLanguage'>;

  /** `server`: the server's language, which a conversation without a language of its own speaks. */
  constructor(server: Pick<ChannelLines, 'serverLanguage'>) {
    this.#server = server;
  }

  /**
   * The conversation's language: what the bot says aloud in it, the language the model is told to fall back
   * to (`/voice settings language`, else the server's).
   */
  language(guildId: string, settings: Pick<VoiceSettings, 'language'>): Locale {
    // Without a language of its own, resolveLocale falls back to the server's (a supported locale already).
    return resolveLocale(settings.language, this.#server.serverLanguage(guildId), 'member');
  }

  /** A notice as the voice says it in the conversation: Discord's timestamps ("<t:…:R>") in words. */
  line(guildId: string, settings: Pick<VoiceSettings, 'language'>, told: Notice, now = Date.now()): string {
    const locale = this.language(guildId, settings);
    return spokenTimes(locale, word(locale, told), now);
  }
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
