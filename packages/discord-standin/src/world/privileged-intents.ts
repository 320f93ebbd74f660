// The privileged gateway intents, as an application's Developer Portal page turns them on ("Bot",
// "Privileged Gateway Intents"). An IDENTIFY asking for one that is off is closed with 4014 Disallowed
// intent(s); the application's flags say which are on (README.md, "Privileged intents").

/** The portal's three toggles: Presence, Server Members and Message Content. */
export type PrivilegedIntent = 'presence' | 'serverMembers' | 'messageContent';

export const PRIVILEGED_INTENT_BITS: Readonly<Record<PrivilegedIntent, number>> = {
  presence: 1 << 8,
  serverMembers: 1 << 1,
  messageContent: 1 << 15,
};

/**
 * The application flags of an app in fewer than 100 servers with a toggle on (GATEWAY_PRESENCE_LIMITED,
 * GATEWAY_GUILD_MEMBERS_LIMITED, GATEWAY_MESSAGE_CONTENT_LIMITED): what READY's and GET
 * /applications/@me's `application.flags` carry.
 */
const LIMITED_FLAGS: Readonly<Record<PrivilegedIntent, number>> = {
  presence: 1 << 13,
  serverMembers: 1 << 15,
  messageContent: 1 << 19,
};

export const DISALLOWED_INTENTS_CLOSE = { code: 4014, reason: 'Disallowed intent(s).' } as const;

const ALL: readonly PrivilegedIntent[] = ['presence', 'serverMembers', 'messageContent'];

/** Which toggles are on; every one by default, so a bot asking for any of them connects. */
export class PrivilegedIntents {
  readonly #enabled = new Set<PrivilegedIntent>(ALL);

  set(settings: Partial<Record<PrivilegedIntent, boolean>>): void {
    for (const intent of ALL) {
      const enabled = settings[intent];
      if (enabled === true) this.#enabled.add(intent);
      else if (enabled === false) this.#enabled.delete(intent);
    }
  }

  /** The privileged intents of `intents` the portal does not allow (none: an empty list). */
  disallowed(intents: number): PrivilegedIntent[] {
    return ALL.filter((intent) => (intents & PRIVILEGED_INTENT_BITS[intent]) !== 0 && !this.#enabled.has(intent));
  }

  get applicationFlags(): number {
    return ALL.reduce((flags, intent) => (this.#enabled.has(intent) ? flags | LIMITED_FLAGS[intent] : flags), 0);
  }
}
