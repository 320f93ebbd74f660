// The test API of the voice stand-in's DAVE side (`voiceServer.dave`): what each channel's call and each
// simulated member's client look like, waits on them, and faults on demand.

import type { DaveCall, DaveCallState, DaveEvent } from '../dave/call.ts';
import type { HeldWelcome } from '../dave/call-faults.ts';
import type { SimulatedMemberStats } from '../dave/sim-member.ts';
import type { VoiceSessions } from './sessions.ts';

export type { DaveCallState, DaveEvent } from '../dave/call.ts';
export type { HeldWelcome } from '../dave/call-faults.ts';

export interface SimulatedDaveState {
  userId: string;
  /** The protocol version its client sends with (0: in the clear). */
  protocolVersion: number;
  /** Its MLS group's epoch, undefined while it is pending. */
  epoch: bigint | undefined;
  /** The epoch authenticator of its group (all members of an epoch must agree on it). */
  epochAuthenticator: Buffer | undefined;
  /** The users of its group, by its own MLS state. */
  groupMembers: string[];
  /** The voice privacy code its client shows for the call (from the epoch authenticator), undefined while pending. */
  privacyCode: string | undefined;
  /** The epoch its sender key belongs to. */
  sendingEpoch: bigint | undefined;
  executedTransitions: number[];
  stats: SimulatedMemberStats;
  /** Messages its client could not handle. */
  errors: string[];
}

/**
 * The whitepaper's displayable code: 30 digits in groups of five, each group the next five bytes of the
 * epoch authenticator read big-endian, modulo 10^5.
 */
export function displayablePrivacyCode(authenticator: Buffer): string {
  const groups: string[] = [];
  for (let offset = 0; offset < 30; offset += 5) groups.push((authenticator.readUIntBE(offset, 5) % 100_000).toString().padStart(5, '0'));
  return groups.join(' ');
}

export class VoiceDave {
  readonly #sessions: VoiceSessions;

  constructor(sessions: VoiceSessions) {
    this.#sessions = sessions;
  }

  #call(guildId: string, channelId: string | undefined): DaveCall {
    const call = channelId === undefined ? this.#sessions.botCall(guildId) : this.#sessions.call(guildId, channelId);
    if (!call) {
      throw new Error(
        channelId === undefined
          ? `voice stand-in: the bot is in no DAVE call in guild ${guildId}`
          : `voice stand-in: DAVE is off, so channel ${channelId} has no DAVE call`,
      );
    }
    return call;
  }

  /** The DAVE call of a channel (default: the bot's), as the gateway sees it. */
  state(guildId: string, channelId?: string): DaveCallState {
    return this.#call(guildId, channelId).state();
  }

  /** What the call's gateway did, oldest first: commits announced and dropped, transitions, resets, reports. */
  history(guildId: string, channelId?: string): readonly DaveEvent[] {
    return this.#call(guildId, channelId).history;
  }

  /**
   * Whether the call is at rest: nothing in flight, and every member with DAVE in the group at its epoch
   * (or the call runs at protocol 0, or has at most one member with DAVE).
   */
  settled(guildId: string, channelId?: string): boolean {
    return this.#call(guildId, channelId).settled();
  }

  /** A simulated member's DAVE client; undefined for a user who is not in voice or has no DAVE. */
  member(guildId: string, userId: string): SimulatedDaveState | undefined {
    const member = this.#sessions.guilds.get(guildId)?.users.get(userId)?.dave?.member;
    if (!member) return undefined;
    return {
      userId,
      protocolVersion: member.protocolVersion,
      epoch: member.epoch,
      epochAuthenticator: member.epochAuthenticator,
      privacyCode: member.epochAuthenticator && displayablePrivacyCode(member.epochAuthenticator),
      groupMembers: member.members(),
      sendingEpoch: member.sendingEpoch,
      executedTransitions: [...member.executedTransitions],
      stats: { ...member.stats },
      errors: [...member.errors],
    };
  }

  /** Resolves with a simulated member's DAVE state once `predicate` holds for it. */
  waitForMember(
    guildId: string,
    userId: string,
    predicate: (state: SimulatedDaveState) => boolean,
    timeoutMs?: number,
  ): Promise<SimulatedDaveState> {
    return this.#sessions.waiters.waitFor(
      () => {
        const state = this.member(guildId, userId);
        return state && predicate(state) ? state : undefined;
      },
      `user ${userId}'s DAVE client in guild ${guildId}`,
      timeoutMs,
    );
  }

  /** Resolves with the call's state once `predicate` holds for it. */
  waitFor(
    guildId: string,
    predicate: (state: DaveCallState) => boolean,
    options: { channelId?: string; timeoutMs?: number } = {},
  ): Promise<DaveCallState> {
    return this.#sessions.waiters.waitFor(
      () => {
        const call = options.channelId === undefined ? this.#sessions.botCall(guildId) : this.#sessions.call(guildId, options.channelId);
        const state = call?.state();
        return state && predicate(state) ? state : undefined;
      },
      `a DAVE call state in guild ${guildId}`,
      options.timeoutMs,
    );
  }

  /** Resolves with the first event of the call's history (default: the bot's call) that `predicate` matches. */
  waitForEvent<T extends DaveEvent>(
    guildId: string,
    predicate: (event: DaveEvent) => event is T,
    options?: { channelId?: string; timeoutMs?: number },
  ): Promise<T>;
  waitForEvent(
    guildId: string,
    predicate: (event: DaveEvent) => boolean,
    options?: { channelId?: string; timeoutMs?: number },
  ): Promise<DaveEvent>;
  waitForEvent(
    guildId: string,
    predicate: (event: DaveEvent) => boolean,
    options: { channelId?: string; timeoutMs?: number } = {},
  ): Promise<DaveEvent> {
    return this.#sessions.waiters.waitFor(
      () => {
        const call = options.channelId === undefined ? this.#sessions.botCall(guildId) : this.#sessions.call(guildId, options.channelId);
        return call?.history.find(predicate);
      },
      `a DAVE event in guild ${guildId}`,
      options.timeoutMs,
    );
  }

  /** Resolves once the call is settled (see settled()). */
  waitForSettled(guildId: string, options: { channelId?: string; timeoutMs?: number } = {}): Promise<DaveCallState> {
    return this.#sessions.waiters.waitFor(
      () => {
        const call = options.channelId === undefined ? this.#sessions.botCall(guildId) : this.#sessions.call(guildId, options.channelId);
        return call?.settled() ? call.state() : undefined;
      },
      `the DAVE call in guild ${guildId} to settle`,
      options.timeoutMs,
    );
  }

  // ---- Faults --------------------------------------------------------------------------------------------

  /**
   * From now on the member's frames are encrypted with a sender key nobody holds (a client that missed
   * transitions and kept a key long gone): well-formed DAVE frames that fail to decrypt. `false` ends it.
   */
  staleKey(guildId: string, userId: string, on = true): void {
    const member = this.#sessions.guilds.get(guildId)?.users.get(userId)?.dave?.member;
    if (!member) throw new Error(`voice stand-in: user ${userId} has no DAVE client in guild ${guildId}`);
    member.useStaleKey(on);
  }

  /**
   * The next commit (op 29) or Welcome (op 30) the call sends `userId` is damaged, so the member (the
   * bot or a simulated one) cannot process it and reports it with op 31. The gateway then removes the
   * member's leaf and adds it again with its next key package.
   */
  damageNextCommit(guildId: string, userId: string, channelId?: string): void {
    this.#sessions.faultsOf(this.#call(guildId, channelId)).damageNextCommit(userId);
  }

  /** The next Welcome for `userId` is held back until release(): the transition runs on without it. */
  holdNextWelcome(guildId: string, userId: string, channelId?: string): HeldWelcome {
    return this.#sessions.faultsOf(this.#call(guildId, channelId)).holdNextWelcome(userId);
  }

  /** The next commit is announced with transition id 0: executed at once, no op 23 and no op 22. */
  zeroNextTransitionId(guildId: string, channelId?: string): void {
    this.#sessions.faultsOf(this.#call(guildId, channelId)).zeroNextTransitionId();
  }
}
