import type { DaveCallHooks } from './call.ts';

// Faults of one DAVE call, made on demand by a test: a damaged commit or Welcome, a Welcome held back, a
// commit announced with transition id 0. The call (call.ts) knows none of them; it asks these hooks at
// the points where they step in.

/** A Welcome held back on demand (the late-Welcome fault), sent on release. */
export interface HeldWelcome {
  /** Resolves once a Welcome for the member has been held. */
  readonly held: Promise<void>;
  /** Sends the held Welcome now (or, if none is held yet, lets the next one through). */
  release(): void;
}

interface WelcomeHold {
  capture(send: () => void, sendLater: (send: () => void) => void): void;
}

export class DaveCallFaults implements DaveCallHooks {
  readonly #changed: () => void;
  #zeroNextTransitionId = false;
  readonly #damageNext = new Set<string>();
  readonly #welcomeHolds = new Map<string, WelcomeHold>();

  /** `changed`: something happened that tests may be waiting for (a Welcome was held). */
  constructor(changed: () => void) {
    this.#changed = changed;
  }

  /** The next commit is announced with transition id 0 ("execute at once": no op 23, no op 22). */
  zeroNextTransitionId(): void {
    this.#zeroNextTransitionId = true;
  }

  /** The next commit (op 29) or Welcome (op 30) sent to `userId` is damaged: it cannot process it. */
  damageNextCommit(userId: string): void {
    this.#damageNext.add(userId);
  }

  /** The next Welcome for `userId` is held until release(). */
  holdNextWelcome(userId: string): HeldWelcome {
    let captured: (() => void) | undefined;
    let later: ((send: () => void) => void) | undefined;
    let released = false;
    let onHeld: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      onHeld = resolve;
    });
    this.#welcomeHolds.set(userId, {
      capture: (send, sendLater) => {
        if (released) {
          send();
          return;
        }
        captured = send;
        later = sendLater;
        onHeld();
        this.#changed();
      },
    });
    return {
      held,
      release: () => {
        released = true;
        const send = captured;
        captured = undefined;
        if (send && later) later(send);
        else this.#welcomeHolds.delete(userId);
      },
    };
  }

  transitionId(take: () => number): number {
    if (!this.#zeroNextTransitionId) return take();
    this.#zeroNextTransitionId = false;
    return 0;
  }

  outgoing(userId: string, payload: Buffer): Buffer {
    if (!this.#damageNext.delete(userId)) return payload;
    const damaged = Buffer.from(payload);
    // The last bytes are a MAC (a commit's membership tag, a Welcome's sealed GroupInfo): it fails.
    damaged[damaged.length - 1] = (damaged[damaged.length - 1] ?? 0) ^ 0xff;
    return damaged;
  }

  welcome(userId: string, send: () => void, sendLater: (send: () => void) => void): void {
    const hold = this.#welcomeHolds.get(userId);
    if (!hold) {
      send();
      return;
    }
    this.#welcomeHolds.delete(userId);
    hold.capture(send, sendLater);
  }
}
