// The seam between the stand-in's gateway (which answers the bot's op 4 and tracks who is in which voice
// channel) and its voice server (TLS websocket, UDP, RTP encryption, Opus).

export interface BotVoiceSession {
  guildId: string;
  channelId: string;
  userId: string;
  sessionId: string;
}

/** PCM the way Discord carries it: 48 kHz, 2 channels, interleaved signed 16-bit. */
export interface Pcm48kStereo {
  samples: Int16Array;
}

export interface ReceivedBotAudio {
  /** Wall-clock arrival of the first packet of this frame, ms since the epoch. */
  receivedAt: number;
  rtpTimestamp: number;
  sequence: number;
  /** Decoded 20 ms frame: 960 samples per channel, 48 kHz stereo interleaved. */
  pcm: Int16Array;
}

export interface VoiceUserOptions {
  /**
   * Whether the user's client speaks DAVE (default true). A client without it makes the channel's call
   * downgrade to protocol 0 (transport encryption only) while it is there, as in Discord's transitory
   * phase before end-to-end encryption became mandatory.
   */
  dave?: boolean;
}

export interface VoiceStandIn {
  /** `host:port` for VOICE_SERVER_UPDATE (no scheme). */
  readonly endpoint: string;
  /** Called by the gateway when the bot asks to join (op 4); returns the token for VOICE_SERVER_UPDATE. */
  expectBot(session: BotVoiceSession): { token: string };
  /** The bot left the guild's voice channel (op 4 with channel_id null). */
  botLeft(guildId: string): void;
  /** A simulated user is now in (or has left) a voice channel; the gateway dispatches VOICE_STATE_UPDATE. */
  userJoined(guildId: string, channelId: string, userId: string, options?: VoiceUserOptions): void;
  userLeft(guildId: string, userId: string): void;
  close(): Promise<void>;
}
