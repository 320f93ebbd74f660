// Everything the voice stand-in knows about one guild: who the bot is expected to be, its live
// connection, the simulated users in voice (each with its DAVE client), the DAVE call of each voice
// channel, and what the bot sent (kept after it leaves, for asserts).

import type { Logger } from '../lib/log.ts';
import type { DaveCall, DaveParticipant } from '../dave/call.ts';
import type { SimulatedDaveMember } from '../dave/sim-member.ts';
import type { BotConnection } from './bot-connection.ts';
import { BotAudioRecorder } from './bot-recorder.ts';
import type { BotFrameListener } from './bot-recorder.ts';
import type { BotVoiceSession } from './contract.ts';
import type { SimulatedSpeaker, SpeakerLink } from './speaker.ts';

export interface ExpectedBot extends BotVoiceSession {
  token: string;
}

export interface BotMessageRecord {
  /** ms since the epoch. */
  at: number;
  op: number;
}

export interface BotSocketClose {
  at: number;
  code: number;
}

export interface SimulatedUser {
  channelId: string;
  speaker: SimulatedSpeaker;
  /** Whether its client speaks DAVE (a member without it makes the call downgrade). */
  daveCapable: boolean;
  /**
   * How the channel's DAVE call reaches it, and its DAVE client (none for a client without DAVE);
   * undefined with DAVE off.
   */
  dave: { participant: DaveParticipant; member: SimulatedDaveMember | undefined } | undefined;
}

export class GuildVoice {
  readonly guildId: string;
  expected: ExpectedBot | undefined;
  connection: BotConnection | undefined;
  readonly users = new Map<string, SimulatedUser>();
  /** The DAVE call of each voice channel (only with DAVE on). */
  readonly calls = new Map<string, DaveCall>();
  readonly recorder: BotAudioRecorder;
  /** Every op the bot sent on its voice websockets, in order. */
  readonly botMessages: BotMessageRecord[] = [];
  readonly socketCloses: BotSocketClose[] = [];

  constructor(guildId: string, log: Logger, onBotFrame: () => void) {
    this.guildId = guildId;
    this.recorder = new BotAudioRecorder(log.child({ guildId }), onBotFrame);
  }

  /** Why `userId` cannot be heard by the bot right now, or the link to reach the bot. */
  linkFor(userId: string): SpeakerLink | string {
    const user = this.users.get(userId);
    if (!user) return `user ${userId} is not in a voice channel of guild ${this.guildId} (call userJoined first)`;
    const connection = this.connection;
    if (!connection) return `the bot has no voice connection in guild ${this.guildId}`;
    if (!connection.ready) return `the bot's voice connection in guild ${this.guildId} is not ready`;
    if (connection.channelId !== user.channelId) {
      return `user ${userId} is in channel ${user.channelId}, the bot in ${connection.channelId}`;
    }
    return connection;
  }

  usersIn(channelId: string): string[] {
    return [...this.users].filter(([, user]) => user.channelId === channelId).map(([userId]) => userId);
  }

  /**
   * Who listens to the bot in its channel: a simulated member whose DAVE client holds the bot's key, or
   * else the first one with DAVE; undefined when no member with DAVE is there.
   */
  listenerFor(channelId: string, botUserId: string): BotFrameListener | undefined {
    const members = this.daveClientsIn(channelId);
    return members.find((member) => member.hears(botUserId)) ?? members[0];
  }

  /** The DAVE clients of the simulated members in a channel: each opens what the bot plays there. */
  daveClientsIn(channelId: string): SimulatedDaveMember[] {
    return [...this.users.values()]
      .filter((user) => user.channelId === channelId)
      .flatMap((user) => (user.dave?.member ? [user.dave.member] : []));
  }
}
