import type { RealtimeClient } from '../gateway/realtime/client.ts';
import type { RealtimeServerEvent } from '../gateway/realtime/events.ts';
import type { AnswerStreams } from './answer-streams.ts';
import type { FunctionCallsOfSession } from './function-calls.ts';
import type { ResponsesOfSession } from './responses.ts';
import type { SentAnnouncements } from './sent-announcements.ts';
import type { SessionLifetime } from './session-lifetime.ts';
import type { TurnsOfSession } from './turns.ts';

// The states of a voice session (session.ts draws the machine). Each holds what belongs to it, so that
// the one transition can release what the old state held.

export interface ConnectingState {
  readonly status: 'connecting';
}

/** One realtime session, and everything that lasts as long as it does: a new session starts afresh. */
export interface LiveState {
  readonly status: 'live';
  readonly client: RealtimeClient;
  /** Which stream each audio delta belongs to, and which answers a barge-in cut off. */
  readonly answers: AnswerStreams;
  /** When it opened, whether the gateway said it reached its limit, and what renews it before that. */
  readonly lifetime: SessionLifetime;
  /** The members' turns: one waiting for its answer, or for its transcript to decide. */
  readonly turns: TurnsOfSession;
  /** Responses open, a refused response.create to send again, and a hold after a refusal. */
  readonly responses: ResponsesOfSession;
  /** The model's function calls: seen, acted on this turn, outputs not gone yet. */
  readonly calls: FunctionCallsOfSession;
  /** Announcements sent on this session by event id, and the one in flight. */
  readonly announcements: SentAnnouncements;
  readonly onEvent: (event: RealtimeServerEvent) => void;
  readonly onClose: (code: number, reason: string) => void;
}

export interface ReconnectingState {
  readonly status: 'reconnecting';
  /** 1 for the first attempt after the session was lost. */
  readonly attempt: number;
  /** Until the attempt starts. */
  readonly timer: NodeJS.Timeout;
}

export interface ClosedState {
  readonly status: 'closed';
}

export type SessionState = ConnectingState | LiveState | ReconnectingState | ClosedState;

export type VoiceSessionState = SessionState['status'];
