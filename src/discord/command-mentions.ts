import { Routes, type REST } from 'discord.js';
import { readString } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';

// A command named in a message as a mention a member clicks to run it (`</voice ignore-me:123>`), which
// needs the id Discord gave the command when it was registered: read from Discord (the server's own
// commands, then the global ones) and kept a while. When the id cannot be had in time, the command is
// named as text (`/voice ignore-me`), which a member can still type.

/** Registered ids are kept this long; a registration (which may change them) forgets them at once. */
const KEPT_MS = 10 * 60_000;
/** A message waits at most this long for the ids: it goes out with the command as text rather than late. */
const LOOKUP_DEADLINE_MS = 2_000;

interface Registered {
  at: number;
  ids: Promise<Map<string, string>>;
}

export interface CommandMentionsOptions {
  rest: REST;
  /** The application's id, once logged in. */
  applicationId: () => string | undefined;
  log: Logger;
  now?: () => number;
}

export class CommandMentions {
  readonly #options: CommandMentionsOptions;
  /** Command ids by name, per scope (`global`, or a server's id). */
  readonly #scopes = new Map<string, Registered>();

  constructor(options: CommandMentionsOptions) {
    this.#options = options;
  }

  /** `path` (`voice ignore-me`: the command's name, then its subcommand's) as a clickable mention in `guildId`, else as text. */
  async mention(guildId: string | undefined, path: string): Promise<string> {
    const name = path.split(' ')[0] ?? path;
    try {
      const id = await Promise.race([
        this.#idOf(guildId, name),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), LOOKUP_DEADLINE_MS).unref()),
      ]);
      if (id !== undefined) return `</${path}:${id}>`;
    } catch (error) {
      this.#options.log.debug('could not read the registered commands; naming one as text', { error });
    }
    return `\`/${path}\``;
  }

  /** The commands were registered again: their ids are read afresh. */
  forget(): void {
    this.#scopes.clear();
  }

  async #idOf(guildId: string | undefined, name: string): Promise<string | undefined> {
    if (guildId !== undefined) {
      const own = (await this.#ids(guildId).catch(() => new Map<string, string>())).get(name);
      if (own !== undefined) return own;
    }
    return (await this.#ids('global')).get(name);
  }

  #ids(scope: string): Promise<Map<string, string>> {
    const now = (this.#options.now ?? Date.now)();
    const kept = this.#scopes.get(scope);
    if (kept && now - kept.at < KEPT_MS) return kept.ids;
    const applicationId = this.#options.applicationId();
    if (applicationId === undefined) return Promise.resolve(new Map<string, string>());
    const route = scope === 'global' ? Routes.applicationCommands(applicationId) : Routes.applicationGuildCommands(applicationId, scope);
    const ids = this.#options.rest.get(route).then((listed: unknown) => {
      const byName = new Map<string, string>();
      for (const command of Array.isArray(listed) ? listed : []) {
        const id = readString(command, 'id');
        const name = readString(command, 'name');
        if (id !== undefined && name !== undefined) byName.set(name, id);
      }
      return byName;
    });
    // A failed read is not kept: the next message asks again.
    ids.catch(() => {
      if (this.#scopes.get(scope)?.ids === ids) this.#scopes.delete(scope);
    });
    this.#scopes.set(scope, { at: now, ids });
    return ids;
  }
}
