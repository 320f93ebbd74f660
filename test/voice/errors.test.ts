import { describe, expect, it } from 'vitest';
import type { RealtimeServerEvent } from '../../src/gateway/realtime/events.ts';
import { isRoutineRealtimeError } from '../../src/voice/realtime-errors.ts';

// Which realtime errors are told in the text channel: decided by their codes (the spec's and other realtime
// services'), and only for a server that gives no code, by their words.

function error(fields: Partial<Extract<RealtimeServerEvent, { type: 'error' }>>): Extract<RealtimeServerEvent, { type: 'error' }> {
  return { type: 'error', code: undefined, message: '', errorType: undefined, param: undefined, clientEventId: undefined, ...fields };
}

describe('routine realtime errors', () => {
  it.each([
    [
      "an answer to the bot's own cancel, whatever its code",
      error({ code: 'x', message: 'Cannot do that.', clientEventType: 'response.cancel' }),
    ],
    [
      "an answer to the bot's own truncate",
      error({ code: 'item_not_found', message: 'No such item.', clientEventType: 'conversation.item.truncate' }),
    ],
    ["the emulator's cancel race", error({ code: 'response_cancel_not_active', message: 'There is no active response to cancel.' })],
    ['a cancel race worded otherwise', error({ message: 'Cancellation failed: no active response found' })],
    ["the emulator's session limit", error({ code: 'session_expired', message: 'The session reached its maximum duration.' })],
    [
      "the emulator's refusal of a response while another is active",
      error({ code: 'conversation_already_has_active_response', message: 'A response is already in progress.' }),
    ],
    [
      'the same refusal worded as other realtime services word it',
      error({
        code: 'conversation_already_has_active_response',
        message:
          'Conversation already has an active response in progress: resp_1. Wait until the response is finished before creating a new one.',
      }),
    ],
    ['the same refusal without a code', error({ message: 'A response is already in progress' })],
    [
      'a session limit worded otherwise',
      error({ code: 'session_timeout', message: 'Your session hit the maximum duration of 120 minutes.' }),
    ],
  ])('%s is not told', (_label, event) => {
    expect(isRoutineRealtimeError(event)).toBe(true);
  });

  it.each([
    ['a quota problem', error({ code: 'insufficient_quota', message: 'You exceeded your current quota.' })],
    ['a server error', error({ code: 'server_error', message: 'The server had an error while processing your request.' })],
    ['a refused setting', error({ code: 'invalid_value', message: 'Invalid voice.', clientEventType: 'session.update' })],
    [
      'an expired API key, whose words say "expired" but whose code is no session limit',
      error({ code: 'invalid_api_key', message: 'API key expired.' }),
    ],
    ['an expired API key from a server that gives no code', error({ message: 'Your API key has expired.' })],
    ['an unknown code worded like a routine refusal', error({ code: 'busy', message: 'A response is already in progress.' })],
  ])('%s is told', (_label, event) => {
    expect(isRoutineRealtimeError(event)).toBe(false);
  });
});
