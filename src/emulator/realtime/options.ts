// How the emulator's realtime model plays, settable per emulator (tests speed it up).

export interface RealtimeOptions {
  /** Audio is streamed this many times faster than real time (clients must buffer). */
  paceFactor: number;
  /** Milliseconds of audio per output delta. */
  chunkMs: number;
  /** A force_message is spoken as a tone this long per character of text. */
  toneMsPerCharacter: number;
  maxToneMs: number;
  /** A closed session stays in `sessions` (for tests to inspect) this long, until the next connection. */
  closedSessionRetentionMs: number;
  /** Whether a client may write message items (history) into the conversation; false refuses them, as a gateway without them would. */
  messageItems: boolean;
}

export const DEFAULT_REALTIME_OPTIONS: RealtimeOptions = {
  paceFactor: 1.25,
  chunkMs: 100,
  toneMsPerCharacter: 60,
  maxToneMs: 5000,
  closedSessionRetentionMs: 60_000,
  messageItems: true,
};
