// How a server's voice conversations behave: the server settings keep it (changed with /voice
// settings), the voice part reads it when it joins a channel.

/** `server`: the gateway's voice activity detection; `discord`: a turn ends when Discord says everyone stopped. */
export type TurnDetectionMode = 'server' | 'discord';
export const TURN_DETECTION_MODES: readonly TurnDetectionMode[] = ['server', 'discord'];

/**
 * When the bot answers a turn. `auto`: every turn with one person in the channel, only turns that name
 * it with two or more; `always` and `when_named` fix one of those.
 */
export type RespondMode = 'auto' | 'always' | 'when_named';
export const RESPOND_MODES: readonly RespondMode[] = ['auto', 'always', 'when_named'];

/**
 * Whom the bot hears. `open`: everyone in the channel but those who asked not to be heard (/voice
 * ignore-me); `opt-in`: only the member who brought it in and those who agreed (/voice listen-to-me, or
 * the join message's button), never those who asked not to be heard.
 */
export type ConsentMode = 'open' | 'opt-in';
export const CONSENT_MODES: readonly ConsentMode[] = ['open', 'opt-in'];

export interface VoiceSettings {
  voice: string;
  instructions: string;
  model: string;
  turnDetection: TurnDetectionMode;
  vadThreshold: number;
  silenceMs: number;
  /** Post what is said, both ways, in a thread of the text channel. */
  transcripts: boolean;
  /** Leave after this many minutes without anyone speaking. */
  idleMinutes: number;
  respond: RespondMode;
  /** What counts as the bot's name; empty: its display name in the server. */
  wakeWords: string[];
  /** Declare the video tools to the model; undefined: on when the server lets members use /video. */
  tools?: boolean;
  /**
   * The language (a locale the bot speaks: `de`, `fr`…) the model answers in when the speaker's is unclear;
   * undefined: the server's.
   */
  language?: string | undefined;
  /** Whom the bot hears (see ConsentMode). */
  consent: ConsentMode;
  updatedBy?: string;
  updatedAt?: number;
}

export interface VoiceSettingsSource {
  /** The server's voice settings: what it chose, the defaults for the rest. */
  voiceSettings(guildId: string): Promise<VoiceSettings>;
}
