import { RealtimeClient, type RealtimeSessionConfig } from '../gateway/realtime/client.ts';
import type { Logger } from '../lib/log.ts';
import type { GatewayAccessResolver } from '../ports/gateway-access.ts';
import type { VoiceSettings } from '../ports/voice-settings.ts';
import { ENGLISH, languageName } from '../i18n/index.ts';
import type { RecordedTurn } from './conversation-record.ts';
import { openFailure, VoiceAccessError } from './realtime-errors.ts';
import { VOICE_TOOLS } from './tools.ts';

// The realtime sessions of one conversation (the first, renewals, reconnects): each opened with the
// server's key as it is then, and configured from the conversation's settings. The first session of a
// conversation brought back after a restart takes its earlier turns: as conversation items, or, when the
// gateway does not take those, as a note in the instructions of every session from then on.

/** Audio before the detected start of speech that server VAD keeps, so a turn's first syllable is not cut. */
const VAD_PREFIX_PADDING_MS = 300;
/** How long a new realtime session gets to take the earlier turns as items before they go in its instructions instead. */
const RESTORE_TIMEOUT_MS = 5_000;

/** What tells the model which language to answer in when the speaker's is unclear; the instruction itself stays English, which every model reads. */
function languageInstruction(language: string): string {
  return `Answer in the language the speaker uses. If the speaker's language is unclear, answer in ${languageName(ENGLISH, language)}.`;
}

/** The earlier turns in words, for a gateway that does not take them as conversation items. */
function earlierTurnsNote(turns: readonly RecordedTurn[]): string {
  const lines = turns.map((turn) => `${turn.speaker === 'user' ? 'Member' : 'You'}: ${turn.text}`);
  return `You were restarted in the middle of this conversation. What was said before, oldest first:\n${lines.join('\n')}`;
}

export interface RealtimeOpenerOptions {
  guildId: string;
  access: GatewayAccessResolver;
  wsBaseUrl: string;
  settings: VoiceSettings;
  /** The language the model answers in when the speaker's is unclear (a language tag): the conversation's. */
  spokenLanguage: string;
  /** Whether the model is given the video tools. */
  tools: boolean;
  /** The earlier turns of a conversation brought back after a restart, for its first session. */
  earlierTurns: readonly RecordedTurn[] | undefined;
  /** A session opened: it costs until it closes. */
  onOpened?(client: RealtimeClient): void;
  log: Logger;
}

export class RealtimeOpener {
  readonly #options: RealtimeOpenerOptions;
  readonly #languageNote: string;
  /** The earlier turns, until a session took them (or its instructions did). */
  #toRestore: readonly RecordedTurn[] | undefined;
  /** The earlier turns in the instructions, once the gateway did not take them as items. */
  #earlierTurnsNote: string | undefined;

  constructor(options: RealtimeOpenerOptions) {
    this.#options = options;
    // The model answers in the speaker's language; when that is unclear, in the conversation's.
    this.#languageNote = languageInstruction(options.spokenLanguage);
    this.#toRestore = options.earlierTurns && options.earlierTurns.length > 0 ? options.earlierTurns : undefined;
  }

  /** The session's configuration in either turn mode (`manual`: the bot ends turns itself). */
  config(manual: boolean): RealtimeSessionConfig {
    const { settings } = this.#options;
    return {
      voice: settings.voice,
      instructions: [settings.instructions, this.#languageNote, this.#earlierTurnsNote].filter((part) => part !== undefined).join('\n\n'),
      turnDetection: manual
        ? null
        : {
            type: 'server_vad',
            threshold: settings.vadThreshold,
            silenceDurationMs: settings.silenceMs,
            prefixPaddingMs: VAD_PREFIX_PADDING_MS,
          },
      ...(this.#options.tools ? { tools: VOICE_TOOLS } : {}),
    };
  }

  /** Opens a configured session; throws VoiceAccessError when the server has no usable key any more. */
  async open(manual: boolean): Promise<RealtimeClient> {
    const { access, guildId, wsBaseUrl, settings, log } = this.#options;
    const latest = await access.resolveGatewayAccess(guildId);
    if (!latest.ok) throw new VoiceAccessError(latest.notice);
    let client: RealtimeClient;
    try {
      client = await RealtimeClient.connect({ wsBaseUrl, apiKey: latest.apiKey, model: settings.model, session: this.config(manual), log });
    } catch (error) {
      // Said here, for every session a conversation opens: a refusal is the gateway's answer, its code says why.
      const failure = openFailure(error);
      if (failure.kind === 'refused') {
        const { code, status, param, message } = failure;
        log.warn('the gateway refused the realtime session', { code, status, param, message });
      }
      throw error;
    }
    // Every session the conversation opens (the first, renewals, reconnects) costs until it closes.
    this.#options.onOpened?.(client);
    if (this.#toRestore) await this.#restore(client, this.#toRestore, manual);
    return client;
  }

  async #restore(client: RealtimeClient, turns: readonly RecordedTurn[], manual: boolean): Promise<void> {
    const { log } = this.#options;
    const taken = await client.addMessages(
      turns.map((turn) => ({ role: turn.speaker === 'user' ? 'user' : 'assistant', text: turn.text })),
      RESTORE_TIMEOUT_MS,
    );
    if (taken.ok) {
      log.info('the earlier turns of the conversation are in the new realtime session', { turns: turns.length });
    } else {
      log.warn('the gateway did not take the earlier turns as items; they go in the instructions', { reason: taken.message });
      this.#earlierTurnsNote = earlierTurnsNote(turns);
      client.updateSession(this.config(manual));
    }
    this.#toRestore = undefined;
  }
}
