import { RealtimeClient, type RealtimeSessionConfig } from '../gateway/realtime/client.ts';
import type { Logger } from '../lib/log.ts';
import type { GatewayAccessResolver } from '../ports/gateway-access.ts';
import type { VoiceSettings } from '../ports/voice-settings.ts';
import { ENGLISH, languageName } from '../i18n/index.ts';
import { turnOwners, withoutMember, type RecordedTurn } from './conversation-record.ts';
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

/**
 * The earlier turns in words, for a gateway that does not take them as conversation items: each member's
 * turn named by who spoke it (`names`: display names by user id), as the transcript names them.
 */
function earlierTurnsNote(turns: readonly RecordedTurn[], names: ReadonlyMap<string, string>): string {
  const speaker = (turn: RecordedTurn) => {
    if (turn.speaker === 'bot') return 'You';
    const named = turn.members.map((userId) => names.get(userId) ?? 'a member');
    return named.length === 0 ? 'A member' : named.join(' and ');
  };
  const lines = turns.map((turn) => `${speaker(turn)}: ${turn.text}`);
  return `You were restarted in the middle of this conversation. What was said before, oldest first:\n${lines.join('\n')}`;
}

/** An item of a session's context holding members' words (see TurnsOfSession.owned). */
export interface OwnedItem {
  itemId: string;
  members: readonly string[];
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
  /** A member's display name, naming them in the earlier turns; undefined when it cannot be looked up. */
  memberName?(userId: string): Promise<string | undefined>;
  log: Logger;
}

export class RealtimeOpener {
  readonly #options: RealtimeOpenerOptions;
  readonly #languageNote: string;
  /** The earlier turns, until a session took them (or its instructions did). */
  #toRestore: readonly RecordedTurn[] | undefined;
  /** The earlier turns in the instructions, once the gateway did not take them as items, and their speakers' names. */
  #earlierTurnsNote: { turns: readonly RecordedTurn[]; names: ReadonlyMap<string, string>; text: string } | undefined;
  /** The items each session was given of the earlier turns, until the session takes them (`restoredItems`). */
  readonly #restored = new WeakMap<RealtimeClient, OwnedItem[]>();

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
      instructions: [settings.instructions, this.#languageNote, this.#earlierTurnsNote?.text]
        .filter((part) => part !== undefined)
        .join('\n\n'),
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

  /** The items `client` was given of the earlier turns, with whose words each holds; once. */
  restoredItems(client: RealtimeClient): OwnedItem[] {
    const items = this.#restored.get(client) ?? [];
    this.#restored.delete(client);
    return items;
  }

  /**
   * `userId` is forgotten: their turns (and the bot's answers to them) go from the earlier turns still to be
   * given to a session, and from the instructions' note of them. Whether the instructions changed: the live
   * session is to be configured again (`config()`).
   */
  forget(userId: string): boolean {
    if (this.#toRestore) {
      const kept = withoutMember(this.#toRestore, userId).turns;
      this.#toRestore = kept.length > 0 ? kept : undefined;
    }
    const note = this.#earlierTurnsNote;
    if (!note) return false;
    const kept = withoutMember(note.turns, userId).turns;
    if (kept.length === note.turns.length) return false;
    this.#earlierTurnsNote = kept.length > 0 ? { turns: kept, names: note.names, text: earlierTurnsNote(kept, note.names) } : undefined;
    return true;
  }

  async #restore(client: RealtimeClient, turns: readonly RecordedTurn[], manual: boolean): Promise<void> {
    const { log } = this.#options;
    const taken = await client.addMessages(
      turns.map((turn) => ({ role: turn.speaker === 'user' ? 'user' : 'assistant', text: turn.text })),
      RESTORE_TIMEOUT_MS,
    );
    if (taken.ok) {
      const owners = turnOwners(turns);
      this.#restored.set(
        client,
        taken.itemIds.map((itemId, index) => ({ itemId, members: owners[index] ?? [] })),
      );
      log.info('the earlier turns of the conversation are in the new realtime session', { turns: turns.length });
    } else {
      log.warn('the gateway did not take the earlier turns as items; they go in the instructions', { reason: taken.message });
      const names = await this.#names(turns);
      this.#earlierTurnsNote = { turns, names, text: earlierTurnsNote(turns, names) };
      client.updateSession(this.config(manual));
    }
    this.#toRestore = undefined;
  }

  /** The display names of the members who spoke `turns`, those that can be looked up. */
  async #names(turns: readonly RecordedTurn[]): Promise<Map<string, string>> {
    const members = [...new Set(turns.flatMap((turn) => turn.members))];
    const names = await Promise.all(members.map(async (userId) => [userId, await this.#options.memberName?.(userId)] as const));
    return new Map(names.filter((entry): entry is readonly [string, string] => entry[1] !== undefined));
  }
}
