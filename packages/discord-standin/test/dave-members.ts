// Members of a DAVE call for tests of the stand-in's gateway side without sockets:
//   - BotMember: @discordjs/voice 0.19.2's own DAVESession wrapper (over @snazzah/davey), fed exactly as
//     the library's VoiceNetworking feeds it (onWsPacket, onWsBinary): what the bot runs;
//   - simulated members: the stand-in's own ts-mls clients.
// Each message reaches a member after the call's current step, as over a network.

import { DAVESession } from '@discordjs/voice';
import { silentLogger } from '../src/lib/log.ts';
import { DaveCall } from '../src/dave/call.ts';
import { DaveCallFaults } from '../src/dave/call-faults.ts';
import type { DaveParticipant } from '../src/dave/call.ts';
import { SimulatedDaveMember } from '../src/dave/sim-member.ts';
import type { ClientDaveMessage } from '../src/dave/sim-member.ts';
import { DaveOp } from '../src/dave/wire.ts';
import { ConditionWaiters } from '../src/lib/condition-waiters.ts';

function numberOf(d: Record<string, unknown>, key: string): number {
  const value = d[key];
  if (typeof value !== 'number') throw new Error(`expected a number in ${key}`);
  return value;
}

/** What the bot's connection does with DAVE, with @discordjs/voice's wrapper and davey. */
export class BotMember implements DaveParticipant {
  readonly kind = 'bot' as const;
  readonly maxProtocolVersion = 1;
  readonly userId: string;
  readonly session: DAVESession;
  /** connectionData.connectedClients: who op 11 announced. */
  readonly connected = new Set<string>();
  readonly debug: string[] = [];
  /** What escaped the library's handlers (onWsBinary does not catch davey's exceptions). */
  readonly thrown: Error[] = [];
  /** Binary frames as they came: [u16 sequence][u8 op][payload]. */
  readonly frames: Buffer[] = [];
  #call: DaveCall | undefined;
  #sequence = 0;
  readonly #changed: () => void;

  constructor(userId: string, channelId: string, options: { changed?: () => void } = {}) {
    this.userId = userId;
    this.#changed = options.changed ?? (() => undefined);
    this.session = new DAVESession(1, userId, channelId, {});
    this.session.on('debug', (message: string) => this.debug.push(message));
    this.session.on('keyPackage', (keyPackage: Buffer) => this.#reply({ kind: 'binary', op: DaveOp.MlsKeyPackage, payload: keyPackage }));
    this.session.on('invalidateTransition', (transitionId: number) =>
      this.#reply({ kind: 'json', op: DaveOp.MlsInvalidCommitWelcome, transitionId }),
    );
  }

  /** Joins the call: SESSION_DESCRIPTION told the bot DAVE's version, so it makes its session (reinit). */
  join(call: DaveCall, others: readonly string[]): void {
    this.#call = call;
    for (const id of others) this.connected.add(id);
    call.connect(this);
  }

  start(): void {
    this.session.reinit();
  }

  #reply(message: ClientDaveMessage): void {
    setImmediate(() => this.#call?.receive(this, message));
  }

  #guard(handle: () => void): void {
    try {
      handle();
    } catch (error) {
      this.thrown.push(error instanceof Error ? error : new Error(String(error)));
    }
    this.#changed();
  }

  sendJson(op: number, d: Record<string, unknown>): void {
    setImmediate(() =>
      this.#guard(() => {
        if (op === 11) for (const id of Array.isArray(d.user_ids) ? d.user_ids : []) this.connected.add(String(id));
        else if (op === 13) this.connected.delete(String(d.user_id));
        else if (op === DaveOp.PrepareTransition) {
          const transition = { transition_id: numberOf(d, 'transition_id'), protocol_version: numberOf(d, 'protocol_version') };
          if (this.session.prepareTransition(transition))
            this.#reply({ kind: 'json', op: DaveOp.TransitionReady, transitionId: transition.transition_id });
        } else if (op === DaveOp.ExecuteTransition) this.session.executeTransition(numberOf(d, 'transition_id'));
        else if (op === DaveOp.PrepareEpoch)
          this.session.prepareEpoch({ epoch: numberOf(d, 'epoch'), protocol_version: numberOf(d, 'protocol_version') });
      }),
    );
  }

  sendBinary(op: number, payload: Buffer): void {
    this.#sequence++;
    const frame = Buffer.concat([Buffer.from([(this.#sequence >> 8) & 0xff, this.#sequence & 0xff, op]), payload]);
    this.frames.push(frame);
    setImmediate(() =>
      this.#guard(() => {
        if (op === DaveOp.MlsExternalSender) this.session.setExternalSender(payload);
        else if (op === DaveOp.MlsProposals) {
          const commit = this.session.processProposals(payload, this.connected);
          if (commit) this.#reply({ kind: 'binary', op: DaveOp.MlsCommitWelcome, payload: commit });
        } else if (op === DaveOp.MlsAnnounceCommitTransition || op === DaveOp.MlsWelcome) {
          const { transitionId, success } =
            op === DaveOp.MlsWelcome ? this.session.processWelcome(payload) : this.session.processCommit(payload);
          if (success && transitionId !== 0) this.#reply({ kind: 'json', op: DaveOp.TransitionReady, transitionId });
        }
      }),
    );
  }

  get epoch(): bigint | undefined {
    const session = this.session.session;
    return isDaveyGroup(session) ? (session.epoch ?? undefined) : undefined;
  }

  /** The users of the bot's group, by davey. */
  userIds(): string[] {
    const session = this.session.session;
    return isDaveyGroup(session) ? session.getUserIds() : [];
  }

  get epochAuthenticator(): Buffer | undefined {
    const session = this.session.session;
    return isDaveyGroup(session) ? (session.getEpochAuthenticator() ?? undefined) : undefined;
  }
}

/** What davey's DAVESession tells about its group (the wrapper's types show less of it). */
interface DaveyGroup {
  readonly epoch: bigint | null;
  getEpochAuthenticator(): Buffer | null;
  getUserIds(): string[];
}

function isDaveyGroup(session: unknown): session is DaveyGroup {
  return (
    typeof session === 'object' &&
    session !== null &&
    'epoch' in session &&
    'getEpochAuthenticator' in session &&
    typeof session.getEpochAuthenticator === 'function' &&
    'getUserIds' in session &&
    typeof session.getUserIds === 'function'
  );
}

/** A simulated member (the stand-in's ts-mls client) and how the call reaches it. */
export interface SimMember {
  participant: DaveParticipant;
  client: SimulatedDaveMember;
}

/** A call on its own, and waits on it that wake whenever it or a member's client changes. */
export class TestCall {
  readonly waiters = new ConditionWaiters();
  readonly call: DaveCall;
  /** Faults on demand in the call: a damaged commit or Welcome, a Welcome held back, transition id 0. */
  readonly faults = new DaveCallFaults(() => this.waiters.notify());
  readonly channelId: string;

  constructor(channelId: string, options: { transitionTimeoutMs?: number } = {}) {
    this.channelId = channelId;
    this.call = new DaveCall({
      guildId: 'test',
      channelId,
      transitionTimeoutMs: options.transitionTimeoutMs ?? 2000,
      log: silentLogger,
      changed: () => this.waiters.notify(),
      hooks: this.faults,
    });
  }

  /** The bot's DAVE stack (@discordjs/voice's wrapper over davey); join() puts it in the call. */
  bot(userId: string): BotMember {
    return new BotMember(userId, this.channelId, { changed: () => this.waiters.notify() });
  }

  member(userId: string, options: { dave?: boolean } = {}): SimMember {
    if (options.dave === false) {
      const participant: DaveParticipant = {
        userId,
        kind: 'simulated',
        maxProtocolVersion: 0,
        start: () => undefined,
        sendBinary: () => undefined,
        sendJson: () => undefined,
      };
      return {
        participant,
        client: new SimulatedDaveMember({
          userId,
          channelId: this.channelId,
          send: () => undefined,
          changed: () => undefined,
          log: silentLogger,
        }),
      };
    }
    const client = new SimulatedDaveMember({
      userId,
      channelId: this.channelId,
      send: (message) => this.call.receive(participant, message),
      changed: () => this.waiters.notify(),
      log: silentLogger,
    });
    const participant: DaveParticipant = {
      userId,
      kind: 'simulated',
      maxProtocolVersion: 1,
      start: (protocolVersion) => client.start(protocolVersion),
      sendBinary: (op, payload) => client.deliverBinary(op, payload),
      sendJson: (op, d) => client.deliverJson(op, d),
    };
    return { participant, client };
  }

  /** Resolves once `check` holds (default: the call is settled), re-checked on every change. */
  until(check: () => boolean = () => this.call.settled(), what = 'the DAVE call to settle', timeoutMs = 10_000): Promise<true> {
    return this.waiters.waitFor(() => (check() ? true : undefined), what, timeoutMs);
  }

  close(): void {
    this.call.close();
    this.waiters.close('the test is over');
  }
}
