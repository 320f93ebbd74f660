// The members' turns: whether one waits for its answer on the realtime session, and who spoke each.

/**
 * The members' turns on one realtime session: a turn heard and not answered yet, and, answering only turns
 * that name the bot, the turns whose transcript is still to decide whether they are answered at all.
 */
export class TurnsOfSession {
  /** A user turn the gateway heard start and has not answered yet (speech_started or a commit, until response.created). */
  #awaitingAnswer = false;
  /** Turns committed while answering only when named, whose transcript (and so whether to answer) is still to come. */
  #awaitingTranscript = 0;

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
}

/** Who spoke each turn: the member whose audio made up most of it. Kept across realtime sessions. */
export class TurnSpeakers {
  /** Packets per speaker since the last turn ended. */
  readonly #packets = new Map<string, number>();
  #lastTurnSpeaker: string | undefined;

  /** Who spoke most of the last turn that ended; undefined until someone was heard. */
  get lastTurnSpeaker(): string | undefined {
    return this.#lastTurnSpeaker;
  }

  packet(userId: string): void {
    this.#packets.set(userId, (this.#packets.get(userId) ?? 0) + 1);
  }

  /** A turn ended: its speaker is the one heard most since the last (a turn nobody was heard in keeps the previous one). */
  turnEnded(): void {
    let speaker: string | undefined;
    let most = 0;
    for (const [userId, packets] of this.#packets) {
      if (packets > most) [speaker, most] = [userId, packets];
    }
    this.#packets.clear();
    if (speaker !== undefined) this.#lastTurnSpeaker = speaker;
  }
}
