import type { InjectedFailure } from '../rest/api.ts';
import { channelObject, type DeniableBotPermission } from '../world/state.ts';
import type { InteractionHandle } from './interaction-handle.ts';
import { guildOf, type StandInParts } from './parts.ts';

// Failures a test injects: REST refusals and rate limits, a server admin's permission overwrites, dead
// interaction tokens, gateway outages, and the bot thrown out of voice. Each is something real Discord
// does; none happens unless a test asks for it.

export interface RateLimitOptions {
  /** Only requests of this method (none: any method). */
  method?: string;
  route: RegExp;
  /** How many matching requests are refused. */
  times: number;
  retryAfterSeconds: number;
  /** Discord's global rate limit rather than the route's (x-ratelimit-scope: global). */
  global?: boolean;
}

export interface FailRouteOptions {
  /** Only requests of this method (none: any method). */
  method?: string;
  route: RegExp;
  /** How many matching requests fail. */
  times: number;
  status: number;
  /** Discord's JSON error code and message, and its per-field errors. */
  code?: number;
  message?: string;
  errors?: Record<string, unknown>;
}

export interface DropShardOptions {
  /** The close code Discord sends (none: the connection just drops, as in a network failure). */
  code?: number;
}

export class StandInFaults {
  /** Injected REST failures, consulted by every request (rest/api.ts). */
  readonly failures: InjectedFailure[] = [];
  /** Interaction ids carry a timestamp from a clock this far off the bot's (real hosts drift, and ids need not be time-based). */
  interactionIdClockSkewMs = 0;
  /** takeGatewayDown() until bringGatewayBack(): gateway websocket upgrades are refused with 503. */
  gatewayDown = false;
  readonly #parts: StandInParts;

  constructor(parts: StandInParts) {
    this.#parts = parts;
  }

  rateLimit(options: RateLimitOptions): void {
    this.failures.push({
      method: options.method,
      route: options.route,
      remaining: options.times,
      status: 429,
      retryAfterSeconds: options.retryAfterSeconds,
      global: options.global ?? false,
    });
  }

  /** Returns what ends the failure early (Discord recovering), whatever is left of its `times`. */
  failRoute(options: FailRouteOptions): () => void {
    const { times, ...failure } = options;
    const injected = { ...failure, method: options.method, remaining: times };
    this.failures.push(injected);
    return () => {
      injected.remaining = 0;
    };
  }

  /**
   * Takes a channel permission from the bot, as a server admin's member overwrite does: the bot sees the
   * overwrite (CHANNEL_UPDATE, interactions' app_permissions), and its requests there are refused as
   * Discord refuses them.
   */
  denyBotPermission(channelId: string, permission: DeniableBotPermission): void {
    const { state } = this.#parts;
    const denied = state.deniedBotPermissions.get(channelId) ?? new Set();
    denied.add(permission);
    state.deniedBotPermissions.set(channelId, denied);
    this.#showBotOverwrite(channelId);
  }

  restoreBotPermissions(channelId: string): void {
    this.#parts.state.deniedBotPermissions.delete(channelId);
    this.#showBotOverwrite(channelId);
  }

  #showBotOverwrite(channelId: string): void {
    const { state, gateway } = this.#parts;
    const found = state.channel(channelId);
    if (!found) return;
    const botId = state.botUser.id;
    const deny = state.deniedBotBits(channelId);
    const others = (found.channel.permissionOverwrites ?? []).filter((overwrite) => overwrite.id !== botId);
    found.channel.permissionOverwrites = deny === 0n ? others : [...others, { id: botId, type: 1, allow: 0n, deny }];
    gateway.dispatch('CHANNEL_UPDATE', channelObject(found.channel));
  }

  /** The user accepts no DMs from the bot (privacy settings, or they blocked it): its sends there are 403 / 50007. */
  closeDirectMessages(userId: string): void {
    this.#parts.state.closedDms.add(userId);
  }

  openDirectMessages(userId: string): void {
    this.#parts.state.closedDms.delete(userId);
  }

  expireInteraction(handle: InteractionHandle): void {
    this.#parts.interactions.expire(handle.record);
  }

  /**
   * A gateway outage: every session's connection is cut and new websocket connections are answered 503
   * until bringGatewayBack(); REST goes on answering.
   */
  takeGatewayDown(): void {
    this.gatewayDown = true;
    this.#parts.gateway.dropConnection();
  }

  bringGatewayBack(): void {
    this.gatewayDown = false;
  }

  /** Drops every session's connection (each shard's) as a network failure would; the bot resumes. */
  dropGatewayConnection(): void {
    this.#parts.gateway.dropConnection();
  }

  /**
   * Drops the connections of shard `shardId`'s sessions, leaving the sessions resumable: without a code
   * as a network failure would, with one as Discord closing with that code (4000: discord.js resumes).
   * Throws when no session of that shard is connected.
   */
  dropShardConnection(shardId: number, options: DropShardOptions = {}): void {
    this.#parts.gateway.dropShardConnection(shardId, options.code);
  }

  withholdHeartbeatAck(count = 1): void {
    this.#parts.gateway.withholdHeartbeatAck(count);
  }

  /**
   * A server admin disconnects the bot from voice: the bot gets a VOICE_STATE_UPDATE with channel_id
   * null and its voice websocket is closed with 4014 (so it must not rejoin by itself).
   */
  disconnectBotFromVoice(guildId: string): void {
    this.#parts.gateway.disconnectBotFromVoice(guildOf(this.#parts, guildId));
  }
}
