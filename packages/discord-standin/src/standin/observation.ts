import type { IdentifyRecord, ShardSession } from '../gateway/gateway.ts';
import { waitUntil } from '../lib/wait-until.ts';
import type { RecordedRequest } from '../rest/api.ts';
import type { InteractionRecord } from '../rest/interactions.ts';
import type { Message, Upload } from '../world/state.ts';
import type { InteractionHandle, Waiting } from './interaction-handle.ts';
import { guildOf, type StandInParts } from './parts.ts';

// What a test looks at: what the bot asked of Discord and what it made, and waits for it. A wait
// re-checks after every stand-in event, never on the clock.

/** The stand-in events a wait wakes on. */
const WAKING_EVENTS = [
  'message',
  'messageUpdate',
  'messageDelete',
  'upload',
  'callback',
  'interactionDeadline',
  'interactionTokenExpired',
  'request',
  'botReady',
  'identify',
  'identifyRefused',
  'resumed',
  'botVoiceState',
  'gatewayOpen',
  'gatewayClose',
];

export class StandInObservation implements Waiting {
  /** Every REST request, in order of completion. */
  readonly requests: RecordedRequest[] = [];
  /** Every file the bot uploaded (messages, replies, edits and follow-ups). */
  readonly uploads: Upload[] = [];
  /** Every interaction the simulated users started, with its callbacks, reply and follow-ups. */
  readonly interactions: InteractionRecord[] = [];
  readonly responseDeadlineMs: number;
  readonly tokenLifetimeMs: number;
  readonly #parts: StandInParts;

  constructor(parts: StandInParts, rules: { responseDeadlineMs: number; tokenLifetimeMs: number }) {
    this.#parts = parts;
    this.responseDeadlineMs = rules.responseDeadlineMs;
    this.tokenLifetimeMs = rules.tokenLifetimeMs;
  }

  /** Resolves once `check` returns something, re-checking after every stand-in event. */
  waitFor<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const { events } = this.#parts;
    return waitUntil({
      check,
      subscribe: (wake) => {
        for (const name of WAKING_EVENTS) events.on(name, wake);
        return () => {
          for (const name of WAKING_EVENTS) events.off(name, wake);
        };
      },
      timeoutMs,
      timeoutError: () => new Error(`the Discord stand-in waited ${timeoutMs} ms for ${what} in vain`),
    });
  }

  /** IDENTIFY done and every GUILD_CREATE sent (by any shard's session). */
  waitForBot(timeoutMs = 20_000): Promise<true> {
    return this.waitFor(() => (this.#parts.gateway.ready ? true : undefined), timeoutMs, 'bot login');
  }

  /** A session of shard `shardId` identified (READY and its guilds' GUILD_CREATEs sent) and connected. */
  waitForShard(shardId: number, timeoutMs = 20_000): Promise<ShardSession> {
    return this.waitFor(
      () => this.shardSessions().find((session) => session.shard[0] === shardId && session.connected),
      timeoutMs,
      `a session of shard ${shardId}`,
    );
  }

  /** Every IDENTIFY the gateway got, in order: shard, time, rate-limit bucket and what became of it. */
  get identifies(): readonly IdentifyRecord[] {
    return this.#parts.gateway.identifies;
  }

  /** The gateway sessions that receive events or may resume, each with its shard and the guilds it receives. */
  shardSessions(): ShardSession[] {
    return this.#parts.gateway.sessions();
  }

  /** The intents the bot asked for in its last IDENTIFY (undefined before it identified). */
  get identifiedIntents(): number | undefined {
    return this.#parts.gateway.identifiedIntents;
  }

  /** The session of the last accepted IDENTIFY is connected (for a sharded bot, see shardSessions()). */
  get gatewayConnected(): boolean {
    return this.#parts.gateway.connected;
  }

  waitForCommands(guildId?: string, timeoutMs = 20_000): Promise<Record<string, unknown>[]> {
    return this.waitFor(
      () => {
        const commands = this.commands(guildId);
        return commands.length > 0 ? commands : undefined;
      },
      timeoutMs,
      'command registration',
    );
  }

  commands(guildId?: string): Record<string, unknown>[] {
    return this.#parts.state.commands.get(guildId ?? 'global') ?? [];
  }

  messages(channelId: string): Message[] {
    return [...this.#parts.state.messages.values()].filter((message) => message.channelId === channelId && !message.deleted);
  }

  waitForMessage(channelId: string, predicate: (message: Message) => boolean, timeoutMs = 15_000): Promise<Message> {
    return this.waitFor(() => this.messages(channelId).find(predicate), timeoutMs, `a message in channel ${channelId}`);
  }

  /** The messages in the user's DM with the bot (none when it was never opened). */
  directMessages(userId: string): Message[] {
    const dm = this.#parts.state.openBotDm(userId);
    return dm ? this.messages(dm.id) : [];
  }

  waitForDirectMessage(userId: string, predicate: (message: Message) => boolean, timeoutMs = 15_000): Promise<Message> {
    return this.waitFor(() => this.directMessages(userId).find(predicate), timeoutMs, `a DM from the bot to user ${userId}`);
  }

  /** Resolves once Discord's window for a first response to `handle` has closed: from then on a first response is refused with 10062. */
  waitForResponseDeadline(handle: InteractionHandle, timeoutMs = this.responseDeadlineMs + 5000): Promise<true> {
    return this.waitFor(
      () => (this.#parts.interactions.deadlinePassed(handle.record) ? true : undefined),
      timeoutMs,
      `the response deadline of /${handle.record.name}`,
    );
  }

  /** Resolves once the webhook token of `handle` is dead (its lifetime ran out, or expireInteraction()): from then on webhook calls with it are refused with 50027. */
  waitForTokenExpiry(handle: InteractionHandle, timeoutMs = this.tokenLifetimeMs + 5000): Promise<true> {
    return this.waitFor(
      () => (this.#parts.interactions.tokenExpired(handle.record) ? true : undefined),
      timeoutMs,
      `the token of /${handle.record.name} to expire`,
    );
  }

  /**
   * What Discord would refuse in a message body the bot sends or edits (`json` as it goes out:
   * snake_case, `flags`, `components`...), as the `errors` tree of its 400 / 50035; undefined when
   * Discord takes it. `filenames` are the files uploaded with it (what `attachment://` may name);
   * `editing` is the message an edit changes (its flag, content and attachments count). The routes
   * check every body the same way; this asks without sending, for a test of many shapes.
   */
  messageErrors(
    json: Record<string, unknown>,
    options: { filenames?: string[]; editing?: Message } = {},
  ): Record<string, unknown> | undefined {
    const files = (options.filenames ?? []).map((name, part) => ({
      part,
      name,
      contentType: 'application/octet-stream',
      bytes: Buffer.alloc(0),
    }));
    return this.#parts.messages.errors({ json, files }, options.editing);
  }

  /** Which voice channel the bot is in, per Discord's voice states. */
  botVoiceChannel(guildId: string): string | undefined {
    return guildOf(this.#parts, guildId).voiceStates.get(this.#parts.state.botUser.id)?.channelId;
  }
}
