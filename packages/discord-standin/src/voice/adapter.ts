// For tests that run @discordjs/voice in the test's own process: a gateway adapter that answers the
// library's op 4 the way the stand-in's gateway does (VOICE_STATE_UPDATE first, then
// VOICE_SERVER_UPDATE with the voice server's endpoint and the token from expectBot), without a
// discord.js client.

import { randomBytes } from 'node:crypto';
import type { DiscordGatewayAdapterCreator, DiscordGatewayAdapterLibraryMethods } from '@discordjs/voice';
import type { VoiceStandIn } from './contract.ts';

export interface VoiceStateRequest {
  guildId: string;
  channelId: string | null;
  selfDeaf: boolean;
  selfMute: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses the library's gateway payload `{op: 4, d: {guild_id, channel_id, self_deaf, self_mute}}`. */
export function parseVoiceStateRequest(payload: unknown): VoiceStateRequest | undefined {
  if (!isRecord(payload) || payload.op !== 4 || !isRecord(payload.d)) return undefined;
  const { guild_id: guildId, channel_id: channelId, self_deaf: selfDeaf, self_mute: selfMute } = payload.d;
  if (typeof guildId !== 'string' || (typeof channelId !== 'string' && channelId !== null)) return undefined;
  return { guildId, channelId, selfDeaf: selfDeaf === true, selfMute: selfMute === true };
}

export class InProcessVoiceGateway {
  /** Every op 4 the library sent, in order. */
  readonly requests: VoiceStateRequest[] = [];
  readonly #voice: VoiceStandIn;
  readonly #botUserId: string;
  // One gateway session for the bot: Discord keeps the session id across voice joins.
  readonly #sessionId = randomBytes(16).toString('hex');
  readonly #adapters = new Map<string, DiscordGatewayAdapterLibraryMethods>();

  constructor(voice: VoiceStandIn, botUserId: string) {
    this.#voice = voice;
    this.#botUserId = botUserId;
  }

  adapterCreator(guildId: string): DiscordGatewayAdapterCreator {
    return (methods) => {
      this.#adapters.set(guildId, methods);
      return {
        sendPayload: (payload: unknown) => {
          const request = parseVoiceStateRequest(payload);
          if (!request || request.guildId !== guildId) return false;
          this.requests.push(request);
          // The real gateway answers over the network, never inside the library's call.
          setImmediate(() => this.#answer(request));
          return true;
        },
        destroy: () => {
          if (this.#adapters.get(guildId) === methods) this.#adapters.delete(guildId);
        },
      };
    };
  }

  #answer(request: VoiceStateRequest): void {
    const methods = this.#adapters.get(request.guildId);
    if (request.channelId === null) this.#voice.botLeft(request.guildId);
    if (!methods) return;
    const voiceState = {
      guild_id: request.guildId,
      channel_id: request.channelId,
      user_id: this.#botUserId,
      session_id: this.#sessionId,
      deaf: false,
      mute: false,
      self_deaf: request.selfDeaf,
      self_mute: request.selfMute,
      self_video: false,
      suppress: false,
      request_to_speak_timestamp: null,
    };
    if (request.channelId === null) {
      methods.onVoiceStateUpdate(voiceState);
      return;
    }
    const { token } = this.#voice.expectBot({
      guildId: request.guildId,
      channelId: request.channelId,
      userId: this.#botUserId,
      sessionId: this.#sessionId,
    });
    // VOICE_STATE_UPDATE must come first, or the connection hangs in `signalling`.
    methods.onVoiceStateUpdate(voiceState);
    methods.onVoiceServerUpdate({ token, guild_id: request.guildId, endpoint: this.#voice.endpoint });
  }
}
