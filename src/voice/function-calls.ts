import type { RealtimeFunctionCall } from '../gateway/realtime/events.ts';

/** Call ids remembered so that the same call seen twice (its done event, then response.done) runs once. */
const REMEMBERED_CALLS = 64;

/** What the model is told of a call in an answer the member spoke over. */
const CUT_OFF_OUTPUT = JSON.stringify({ status: 'not_done', message: 'The member spoke over this request, so it was not carried out.' });
/** What the model is told of a second, different call in one turn. */
const ONE_PER_TURN_OUTPUT = JSON.stringify({
  status: 'not_done',
  message: 'Only one action is carried out per request; this one was not. Ask again for it.',
});
/** What the model is told of a call that failed on the bot's side. */
export const FAILED_CALL_OUTPUT = JSON.stringify({ status: 'failed', message: 'Something went wrong on my side; nothing was done.' });

/**
 * The model's function calls on one realtime session: which were seen (a call is announced twice), the one
 * acted on this turn, and how many outputs have not gone yet.
 */
export class FunctionCallsOfSession {
  /** The call acted on this turn (name and arguments), and the output it will get. */
  #acted: { signature: string; output: Promise<string> } | undefined;
  /** Calls already handled, of this turn and recent ones. */
  readonly #seen = new Set<string>();
  /** Function calls whose output (and the response.create after it) has not gone yet. */
  #running = 0;

  /** An output (and the response.create after it) has not gone yet. */
  get running(): boolean {
    return this.#running > 0;
  }

  /** Whether the call is new: its arguments' done event and response.done announce the same call. */
  firstSeen(callId: string): boolean {
    if (this.#seen.has(callId)) return false;
    this.#seen.add(callId);
    if (this.#seen.size > REMEMBERED_CALLS) this.#seen.delete(this.#seen.values().next().value!);
    return true;
  }

  /**
   * The output a call gets. One call per turn is acted on (`run`): the same call again gets the same
   * output, another is told only one is done per request. A call in an answer the member spoke over
   * (`cutOff`) is not run: the next turn says what they want now.
   */
  outputFor(call: RealtimeFunctionCall, cutOff: boolean, run: () => Promise<string>): Promise<string> {
    if (cutOff) return Promise.resolve(CUT_OFF_OUTPUT);
    const signature = `${call.name}\u0000${call.arguments}`;
    if (this.#acted?.signature === signature) return this.#acted.output;
    if (this.#acted) return Promise.resolve(ONE_PER_TURN_OUTPUT);
    const output = run();
    this.#acted = { signature, output };
    return output;
  }

  /** An output is being worked on. */
  started(): void {
    this.#running++;
  }

  /** An output is done (sent, or dropped with its session). */
  finished(): void {
    this.#running--;
  }

  /** A turn ended: the next one may act again. */
  turnEnded(): void {
    this.#acted = undefined;
  }
}
