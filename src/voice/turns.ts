import { FRAME_MS } from './audio/format.ts';

// The members' turns: whether one waits for its answer on the realtime session, and who spoke each.

/**
 * A member is named for a turn when their audio made at least this share of its packets, or at least
 * NAMED_MS of it. Below both, their part is a cough, a word said under someone else's sentence, or the
 * silence frames that close a talk spurt (5 frames, 100 ms): nothing anyone would call speaking in the
 * turn. Either bound alone would fail one way: by share only, a member who says a sentence (2 s) in
 * someone's 20 s turn goes unnamed, though the model heard them and may act on it; by length only, a
 * turn of 0.6 s names a member whose 0.3 s was half of it anyway. With both, a short turn names anyone
 * who made a fifth of it, a long one anyone who spoke half a second.
 */
export const NAMED_SHARE = 0.2;
export const NAMED_MS = 500;
/** NAMED_MS in packets: each is one 20 ms frame. */
const NAMED_PACKETS = NAMED_MS / FRAME_MS;
/** Turns ended whose commit the gateway has not confirmed yet, at most: more means the confirmations stopped coming. */
const UNCOMMITTED_KEPT = 8;
/** Committed turns whose transcript has not come yet, at most (a gateway that transcribes nothing never claims them). */
const ITEMS_KEPT = 32;
/**
 * Items of a session's context remembered with whose words they hold, at most: a turn and its answer a few
 * seconds apart make over an hour of steady talk, longer than a realtime session lives (120 minutes, most of
 * them quieter). Older items are past what the model still reads closely, and the session is renewed anyway.
 */
const OWNED_ITEMS_KEPT = 2_048;

/** Who spoke a turn: the members named for it (see NAMED_SHARE), the one whose audio made most of it first. */
export type TurnMembers = readonly string[];

/**
 * The members' turns on one realtime session: a turn heard and not answered yet, and, answering only turns
 * that name the bot, the turns whose transcript is still to decide whether they are answered at all.
 */
export class TurnsOfSession {
  /** A user turn the gateway heard start and has not answered yet (speech_started or a commit, until response.created). */
  #awaitingAnswer = false;
  /** Turns committed while answering only when named, whose transcript (and so whether to answer) is still to come. */
  #awaitingTranscript = 0;
  /** Who spoke each turn the bot ended and the gateway has not confirmed committed yet, oldest first. */
  readonly #uncommitted: TurnMembers[] = [];
  /** Who spoke each committed turn, by its item, until its transcript comes. */
  readonly #byItem = new Map<string, TurnMembers>();
  /** The items of the session's context holding members' words or the bot's answers to them, with those members. */
  readonly #owners = new Map<string, TurnMembers>();

  /** A turn waits for its answer. */
  get awaitingAnswer(): boolean {
    return this.#awaitingAnswer;
  }

  /** A turn waits for its answer, or for its transcript to say whether it is answered. */
  get waiting(): boolean {
    return this.#awaitingAnswer || this.#awaitingTranscript > 0;
  }

  /** A turn was heard (it started, it was committed, or an answer was asked for): it waits for its answer. */
  heard(): void {
    this.#awaitingAnswer = true;
  }

  /** The answer started (response.created), or the turn goes unanswered: nothing waits for an answer any more. */
  settled(): void {
    this.#awaitingAnswer = false;
  }

  /** A turn committed while answering only when named: its transcript decides whether it is answered. */
  awaitTranscript(): void {
    this.#awaitingTranscript++;
  }

  /** A transcript came: whether it is one a committed turn waited for to be decided. */
  transcriptDecides(): boolean {
    if (this.#awaitingTranscript === 0) return false;
    this.#awaitingTranscript--;
    return true;
  }

  /** The bot ended a turn and committed it: the gateway's confirmation (`committed`) names its item. */
  ended(members: TurnMembers): void {
    this.#uncommitted.push(members);
    if (this.#uncommitted.length > UNCOMMITTED_KEPT) this.#uncommitted.shift();
  }

  /**
   * The gateway committed a turn as `itemId`: one the bot ended (the oldest it has not confirmed), or,
   * with `members`, one the gateway ended itself (server VAD), which leaves none of the bot's waiting.
   */
  committed(itemId: string | undefined, members?: TurnMembers): void {
    if (members !== undefined) this.#uncommitted.length = 0;
    const turn = members ?? this.#uncommitted.shift();
    if (turn === undefined || itemId === undefined) return;
    this.#byItem.set(itemId, turn);
    if (this.#byItem.size > ITEMS_KEPT) this.#byItem.delete(this.#byItem.keys().next().value!);
    this.owned(itemId, turn);
  }

  /**
   * An item of the session's context holds the words of `members`: their turn, the bot's answer to it (which
   * may repeat them), or an earlier turn a conversation brought back after a restart was given.
   */
  owned(itemId: string, members: TurnMembers): void {
    if (members.length === 0) return;
    this.#owners.set(itemId, members);
    if (this.#owners.size > OWNED_ITEMS_KEPT) this.#owners.delete(this.#owners.keys().next().value!);
  }

  /** `userId` is forgotten: the items of the context that hold their words (see `owned`), to delete, no longer remembered. */
  forget(userId: string): string[] {
    const items = [...this.#owners].filter(([, members]) => members.includes(userId)).map(([itemId]) => itemId);
    for (const itemId of items) this.#owners.delete(itemId);
    return items;
  }

  /** The gateway refused a commit of the bot's (an empty buffer): that turn has no item. */
  commitRefused(): void {
    this.#uncommitted.shift();
  }

  /** Who spoke the turn of `itemId`, once (its transcript came); undefined when the session never named it. */
  takeMembers(itemId: string | undefined): TurnMembers | undefined {
    if (itemId === undefined) return undefined;
    const members = this.#byItem.get(itemId);
    this.#byItem.delete(itemId);
    return members;
  }
}

/** Who spoke each turn: the members whose audio made it (see NAMED_SHARE). Kept across realtime sessions. */
export class TurnSpeakers {
  /** Packets per member since the last turn ended. */
  readonly #packets = new Map<string, number>();
  #lastTurn: TurnMembers = [];

  /** Who spoke the last turn that ended; empty until someone was heard. */
  get lastTurn(): TurnMembers {
    return this.#lastTurn;
  }

  packet(userId: string): void {
    this.#packets.set(userId, (this.#packets.get(userId) ?? 0) + 1);
  }

  /**
   * A turn ended: who spoke it, most packets first (equal counts: first heard first). A turn nobody was heard in keeps the previous one's:
   * its audio is what reached the gateway after that turn's packets were counted.
   */
  turnEnded(): TurnMembers {
    let total = 0;
    for (const packets of this.#packets.values()) total += packets;
    // The member heard most is named however little anyone said (six members' murmurs are still a turn).
    const named = [...this.#packets]
      .sort(([, a], [, b]) => b - a)
      .filter(([, packets], index) => index === 0 || packets >= NAMED_PACKETS || packets >= NAMED_SHARE * total)
      .map(([userId]) => userId);
    this.#packets.clear();
    if (named.length > 0) this.#lastTurn = named;
    return this.#lastTurn;
  }
}
