// discord-standin: a local Discord that the real discord.js and @discordjs/voice run against offline,
// DAVE included. This is the package's one entry point; README.md says how to use it.

// The stand-in: start it, set up its world, act as users, inject faults, observe the bot.
export { DiscordStandIn, startDiscordStandIn, type StandInOptions } from './standin/standin.ts';
export type {
  AttachmentValue,
  AutocompleteRun,
  ButtonClickOptions,
  CommandRun,
  MessageCommandOptions,
  ModalSubmitOptions,
  OptionValue,
  PostMessageOptions,
} from './standin/actions.ts';
export type { DropShardOptions, FailRouteOptions, RateLimitOptions } from './standin/faults.ts';
export { InteractionHandle, type AutocompleteChoice } from './standin/interaction-handle.ts';
export type { CreateGuildOptions, CreatePrivateChannelOptions, CreateUserOptions, TestGuild } from './standin/world.ts';
export {
  PERMISSIONS,
  USER_INSTALL_APP_PERMISSIONS,
  type DeniableBotPermission,
  type Message,
  type PrivateChannel,
  type Upload,
  type User,
} from './world/state.ts';
export { shardOfGuild, snowflake } from './world/snowflake.ts';
export { PRIVILEGED_INTENT_BITS, type PrivilegedIntent } from './world/privileged-intents.ts';
export type { RecordedRequest } from './rest/api.ts';
export { USER_INSTALL_FOLLOW_UP_LIMIT, type Callback, type InteractionRecord } from './rest/interactions.ts';
export type { IdentifyOutcome, IdentifyRecord, ShardPair, ShardSession } from './gateway/gateway.ts';
// A gateway client frame by frame, for tests of the gateway itself.
export { RawGateway, field, type Frame } from './gateway/raw-gateway.ts';

// Voice: the voice server alone (without REST and the gateway), @discordjs/voice in a test's own process,
// and what the bot played.
export {
  startVoiceServer,
  type BotAudioFrame,
  type BotPacketProblems,
  type DaveCallState,
  type DaveEvent,
  type HeldWelcome,
  type SimulatedDaveState,
  type SpeakOptions,
  type SpeakResult,
  type VoiceServer,
  type VoiceServerOptions,
  type VoiceUserOptions,
} from './voice/server.ts';
export { InProcessVoiceGateway, parseVoiceStateRequest, type VoiceStateRequest } from './voice/adapter.ts';
export { isSilenceFrame, joinFramePcm } from './voice/bot-recorder.ts';
export { isDaveOp, VoiceOp } from './voice/protocol.ts';
export { trustCertificateInThisProcess } from './voice/tls-trust.ts';
export { openRtpPacket, sealRtpPacket } from './voice/rtp-crypto.ts';
export { buildIpDiscoveryResponse, classifyDatagram } from './voice/udp-datagrams.ts';
// An independent DAVE frame encryptor, to check a decoder against.
export { FrameEncryptor } from './dave/frame.ts';

// Audio: PCM layouts, tones, their analysis, and Opus.
export { DISCORD_PCM, REALTIME_PCM, concatPcm, pcmDurationMs, slicePcm, type PcmFormat } from './audio/format.ts';
export { generateSilence, generateTone, speechLikeTone, type ToneOptions } from './audio/tone.ts';
export { analyzeTone, audible, byTone, dominantFrequency, rms, type ToneAnalysis } from './audio/analysis.ts';
export { CORRUPT_OPUS_PACKET, OPUS_SILENCE_FRAME, OpusFrameDecoder, OpusFrameEncoder, encodePcmToOpusPackets } from './audio/opus.ts';

// Logs: hand the stand-in any logger of this shape, or make one.
export { createLogger, silentLogger, type Logger } from './lib/log.ts';
