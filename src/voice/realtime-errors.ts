import { RealtimeConnectionError } from '../gateway/realtime/client.ts';
import type { RealtimeServerEvent } from '../gateway/realtime/events.ts';
import type { Notice, Phrase } from '../wording/notice.ts';

// What the voice session makes of the gateway's errors: an error event of a live realtime session is
// routine (kept to the log) or news for the text channel; a failure to open a session is final or worth
// another attempt. Decided by the code (docs/gateway.md, "Error format per layer": clients decide on the
// code, never on the wording): a message saying "expired" may be about an API key as well as a session.

export type RealtimeErrorEvent = Extract<RealtimeServerEvent, { type: 'error' }>;

/**
 * What a realtime error event means to the conversation:
 * - `barge-in-race`: the bot's own cancel or truncate lost a race with the end of the answer (nothing was
 *   left to cancel, the item is gone);
 * - `active-response`: a response (a response.create, or a force_message, which is a response of its own)
 *   was refused because another was active: the bot asks again once that one ends;
 * - `session-limit`: the session reached its time limit and closes next;
 * - `item-gone`: the bot deleted an item of the context (a member asked to be forgotten) that the gateway no
 *   longer holds: what was to go is gone;
 * - `news`: anything else, which members should hear about.
 */
export type RealtimeErrorMeaning = 'barge-in-race' | 'active-response' | 'session-limit' | 'item-gone' | 'news';

/** The codes of routine errors: the spec's (docs/gateway.md, "Realtime error events"), and those other realtime services use for the same. */
const MEANING_OF_CODE: ReadonlyMap<string, Exclude<RealtimeErrorMeaning, 'news'>> = new Map([
  ['response_cancel_not_active', 'barge-in-race'],
  ['conversation_already_has_active_response', 'active-response'],
  ['session_expired', 'session-limit'],
  ['session_timeout', 'session-limit'],
]);

/**
 * A server that sends no code at all is read by its words, as a last resort; each pattern names the thing
 * it is about (a response, a session), so that an expired key is never taken for an expired session.
 */
const MEANING_OF_WORDS: readonly (readonly [RegExp, Exclude<RealtimeErrorMeaning, 'news'>])[] = [
  [/already has (an )?active response|response is already in progress|active response in progress/, 'active-response'],
  [/no active response|cancel not active|nothing to cancel/, 'barge-in-race'],
  [/session (has )?expired|maximum duration|duration limit|time limit/, 'session-limit'],
];

export function realtimeErrorMeaning(event: RealtimeErrorEvent): RealtimeErrorMeaning {
  const routine =
    event.code === undefined
      ? MEANING_OF_WORDS.find(([words]) => words.test(event.message.toLowerCase()))?.[1]
      : MEANING_OF_CODE.get(event.code);
  if (routine !== undefined) return routine;
  // An answer to the bot's own cancel or truncate, whatever its code: the same race, told by the event it answers.
  if (event.clientEventType === 'response.cancel' || event.clientEventType === 'conversation.item.truncate') return 'barge-in-race';
  if (event.clientEventType === 'conversation.item.delete') return 'item-gone';
  return 'news';
}

/** Whether a realtime error is part of normal operation rather than news for the channel. */
export function isRoutineRealtimeError(event: RealtimeErrorEvent): boolean {
  return realtimeErrorMeaning(event) !== 'news';
}

/** The realtime session may not be opened for this server any more (no usable key); `notice` says why. */
export class VoiceAccessError extends Error {
  readonly notice: Notice;

  constructor(notice: Notice) {
    super(`the server has no usable key (${notice.key})`);
    this.notice = notice;
  }
}

/**
 * A failure to open a realtime session as the log tells it: the gateway's refusal (an HTTP refusal of the
 * connection, or an error event refusing the session's configuration) with the code and status that say
 * why; the server's key no longer usable; or no answer (the connection failed, closed or timed out), the
 * one case where the gateway may be out of reach. The member is told in words of their own.
 */
export type OpenFailure =
  | { kind: 'refused'; message: string; code: string | undefined; status: number | undefined; param: string | undefined }
  | { kind: 'no-access' | 'no-answer'; message: string };

export function openFailure(error: unknown): OpenFailure {
  if (error instanceof VoiceAccessError) return { kind: 'no-access', message: error.message };
  // The client gives a code or a status only when the gateway answered: a refusal, not an absence.
  if (error instanceof RealtimeConnectionError && (error.code !== undefined || error.status !== undefined))
    return { kind: 'refused', message: error.message, code: error.code, status: error.status, param: error.param };
  return { kind: 'no-answer', message: error instanceof Error ? error.message : String(error) };
}

/** Why a failure to open the realtime session is final, as the channel is told it; undefined when retrying may help. */
export function finalFailure(error: unknown): Phrase | undefined {
  if (error instanceof VoiceAccessError) return error.notice;
  // A refused key or a model the key may not use: another attempt gets the same answer.
  if (!(error instanceof RealtimeConnectionError) || (error.status !== 401 && error.status !== 403)) return undefined;
  return { phrase: 'gateway-error', error, context: { key: 'in-use', purpose: 'voice-model' } };
}
