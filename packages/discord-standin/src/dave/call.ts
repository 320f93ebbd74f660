// The voice gateway's side of DAVE protocol v1 for one voice channel (one media session, one MLS group):
// the external sender package (op 25) to each member, key packages (26), Add and Remove proposals as
// the external sender (27), the first valid commit of an epoch announced (29) with Welcomes to the new
// members (30), reports of invalid commits and Welcomes (31), transitions (21 prepare, 23 ready, 22
// execute) and prepare epoch (24), downgrades to protocol 0 and back, sole member resets.
//
// Members are the bot's voice connection and the simulated users in the channel, behind one interface.
// Everything that changes the call (members coming and going, their messages, timeouts) is handled one
// at a time in arrival order, so the first valid commit of an epoch wins, deterministically.
//
// Choices where the whitepaper is silent: proposals wait while a transition is pending (batched after
// it executes); a transition executes when every member is ready or after transitionTimeoutMs (2 s); an
// op 23 for a transition already executed is answered with its op 22, so a late member catches up.

import type { KeyPackage } from 'ts-mls';
import type { Logger } from '../lib/log.ts';
import { GatewayExternalSender, GroupView } from './mls.ts';
import type { SignedProposal } from './mls.ts';
import type { ClientDaveMessage } from './sim-member.ts';
import { DAVE_PROTOCOL_VERSION, DaveOp, ProposalsOperation, proposalsPayload, transitionPayload, userIdBigEndian } from './wire.ts';

export const DEFAULT_TRANSITION_TIMEOUT_MS = 2_000;
const MAX_TRANSITION_ID = 0xffff;
const HISTORY_LIMIT = 500;
/** Executed transitions remembered for late op 23s. */
const EXECUTED_LIMIT = 64;

/** One member of the call as the gateway reaches it: the bot's websocket, or a simulated client. */
export interface DaveParticipant {
  readonly userId: string;
  readonly kind: 'bot' | 'simulated';
  /** The highest DAVE protocol version it speaks (IDENTIFY's max_dave_protocol_version); 0: none. */
  readonly maxProtocolVersion: number;
  /** The call's protocol version when it joins; the bot learnt it from SESSION_DESCRIPTION already. */
  start(protocolVersion: number): void;
  sendBinary(op: number, payload: Buffer): void;
  sendJson(op: number, d: Record<string, unknown>): void;
}

export type DaveEvent =
  | { type: 'keyPackage'; userId: string }
  | { type: 'refusedKeyPackage'; userId: string; reason: string }
  | { type: 'proposals'; epoch: bigint; adds: string[]; removes: string[] }
  | { type: 'revoked'; userId: string }
  | { type: 'commit'; epoch: bigint; from: string; transitionId: number; adds: string[]; removes: string[] }
  | { type: 'droppedCommit'; from: string; reason: string }
  | { type: 'invalidReport'; userId: string; transitionId: number }
  | { type: 'transitionExecuted'; transitionId: number; epoch: bigint | undefined; protocolVersion: number; timedOutWaitingFor: string[] }
  | { type: 'soleMemberReset'; userId: string }
  | { type: 'downgrade'; transitionId: number }
  | { type: 'upgrade' }
  | { type: 'unexpected'; userId: string; what: string };

export interface DaveCallMemberState {
  userId: string;
  kind: 'bot' | 'simulated';
  dave: boolean;
  /** Its leaf in the group (undefined while pending). */
  leaf: number | undefined;
  /** The last epoch it said it was ready for (op 23), or was moved to by transition 0. */
  readyEpoch: bigint | undefined;
  /** It reported an invalid commit or Welcome; its leaf is being replaced. */
  reportedInvalid: boolean;
}

export interface DaveCallState {
  channelId: string;
  protocolVersion: number;
  /** The established group's epoch; undefined while no group is established. */
  epoch: bigint | undefined;
  /** Users in the group's leaves, in leaf order. */
  groupMembers: string[];
  members: DaveCallMemberState[];
  pendingTransition: { id: number; kind: 'commit' | 'downgrade'; waitingFor: string[] } | undefined;
  /** Proposals sent in this epoch and not yet committed. */
  proposalsInFlight: number;
  lastTransitionId: number | undefined;
}

interface Member {
  participant: DaveParticipant;
  /** Its current key package, while it waits to be added. */
  keyPackage: KeyPackage | undefined;
  /** Its credential and signature key in the group, for the commit checks. */
  leafKeys: { signaturePublicKey: Uint8Array; identity: Uint8Array } | undefined;
  readyEpoch: bigint | undefined;
  reportedInvalid: boolean;
}

interface InFlightProposal extends SignedProposal {
  kind: 'add' | 'remove';
  userId: string;
  leaf?: number;
  keyPackage?: KeyPackage;
  refHex: string;
  sentTo: Set<string>;
}

interface Transition {
  id: number;
  kind: 'commit' | 'downgrade';
  epoch: bigint | undefined;
  waiting: Set<string>;
  timer: NodeJS.Timeout;
}

/**
 * Where faults may step into the protocol (dave/call-faults.ts makes them on demand); the call asks at
 * each of these points and otherwise runs as Discord's gateway does.
 */
export interface DaveCallHooks {
  /** The transition id to announce the next commit with; `take()` takes the next one in sequence. */
  transitionId(take: () => number): number;
  /** The bytes of an op 29 or 30 about to be sent to `userId`. */
  outgoing(userId: string, payload: Buffer): Buffer;
  /** Sends a Welcome to `userId`: now with `send()`, or later through `sendLater(send)`, handled in turn. */
  welcome(userId: string, send: () => void, sendLater: (send: () => void) => void): void;
}

/** No faults: every commit and Welcome goes out as the protocol says. */
export const NO_FAULTS: DaveCallHooks = {
  transitionId: (take) => take(),
  outgoing: (_userId, payload) => payload,
  welcome: (_userId, send) => send(),
};

export interface DaveCallOptions {
  guildId: string;
  channelId: string;
  transitionTimeoutMs: number;
  log: Logger;
  /** Something changed that tests may be waiting for. */
  changed: () => void;
  /** Faults on demand (default: none). */
  hooks?: DaveCallHooks;
}

export class DaveCall {
  readonly channelId: string;
  /** The protocol version the call runs at: 1, or 0 while a member without DAVE is in it. */
  protocolVersion = DAVE_PROTOCOL_VERSION;
  /** What happened, oldest first (the last 500 events). */
  readonly history: DaveEvent[] = [];
  readonly #options: DaveCallOptions;
  readonly #log: Logger;
  readonly #members = new Map<string, Member>();
  readonly #executed = new Map<number, bigint | undefined>();
  #sender: GatewayExternalSender | undefined;
  #group: GroupView | undefined;
  #inFlight: InFlightProposal[] = [];
  #transition: Transition | undefined;
  #lastTransitionId: number | undefined;
  #nextTransitionId = 1;
  #queue: Promise<void> = Promise.resolve();
  /** Events received and not yet handled. */
  #queued = 0;
  #closed = false;
  readonly #hooks: DaveCallHooks;

  constructor(options: DaveCallOptions) {
    this.channelId = options.channelId;
    this.#options = options;
    this.#hooks = options.hooks ?? NO_FAULTS;
    this.#log = options.log.child({ guildId: options.guildId, channelId: options.channelId });
  }

  // ---- Events from the voice server (each handled in turn) ----------------------------------------------

  connect(participant: DaveParticipant): void {
    this.#enqueue(`${participant.userId} connects`, () => this.#connect(participant));
  }

  disconnect(participant: DaveParticipant): void {
    this.#enqueue(`${participant.userId} disconnects`, () => this.#disconnect(participant));
  }

  /** A DAVE message from a member (the bot's binary frames and ops 23/31, or a simulated client's). */
  receive(participant: DaveParticipant, message: ClientDaveMessage): void {
    this.#enqueue(`op ${message.op} from ${participant.userId}`, () => this.#receive(participant, message));
  }

  /** Resolves once everything received so far has been handled. */
  idle(): Promise<void> {
    return this.#queue;
  }

  close(): void {
    this.#closed = true;
    if (this.#transition) clearTimeout(this.#transition.timer);
    this.#transition = undefined;
  }

  // ---- What the call looks like ----------------------------------------------------------------------

  state(): DaveCallState {
    const group = this.#group;
    const transition = this.#transition;
    return {
      channelId: this.channelId,
      protocolVersion: this.protocolVersion,
      epoch: group?.epoch,
      groupMembers: group?.users() ?? [],
      members: [...this.#members.values()].map((member) => ({
        userId: member.participant.userId,
        kind: member.participant.kind,
        dave: member.participant.maxProtocolVersion >= DAVE_PROTOCOL_VERSION,
        leaf: group?.leafOf(member.participant.userId),
        readyEpoch: member.readyEpoch,
        reportedInvalid: member.reportedInvalid,
      })),
      pendingTransition: transition ? { id: transition.id, kind: transition.kind, waitingFor: [...transition.waiting] } : undefined,
      proposalsInFlight: this.#inFlight.length,
      lastTransitionId: this.#lastTransitionId,
    };
  }

  /**
   * Settled: nothing waiting to be handled or in flight, and every member with DAVE is in the group at its epoch (or the call
   * runs at protocol 0, or there is no one to share a group with).
   */
  settled(): boolean {
    const members = [...this.#members.values()];
    const dave = members.filter((member) => this.#dave(member));
    if (this.#transition || this.#queued > 0) return false;
    if (this.protocolVersion === 0) return members.some((member) => !this.#dave(member));
    if (dave.length <= 1) return true;
    const group = this.#group;
    if (!group || this.#inFlight.length > 0) return false;
    return dave.every(
      (member) => !member.reportedInvalid && group.leafOf(member.participant.userId) !== undefined && member.readyEpoch === group.epoch,
    );
  }

  // ---- Internals -----------------------------------------------------------------------------------------

  #enqueue(what: string, task: () => Promise<void>): void {
    this.#queued++;
    this.#queue = this.#queue
      .then(async () => {
        if (this.#closed) return;
        await task();
      })
      .catch((error: unknown) => {
        this.#log.error('voice stand-in: the DAVE gateway failed', { what, error });
        this.#record({ type: 'unexpected', userId: '', what: `${what}: ${error instanceof Error ? error.message : String(error)}` });
      })
      .finally(() => {
        this.#queued--;
        this.#options.changed();
      });
  }

  #record(event: DaveEvent): void {
    this.history.push(event);
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
  }

  async #externalSender(): Promise<GatewayExternalSender> {
    this.#sender ??= await GatewayExternalSender.create(this.channelId);
    return this.#sender;
  }

  #dave(member: Member): boolean {
    return member.participant.maxProtocolVersion >= DAVE_PROTOCOL_VERSION;
  }

  #member(participant: DaveParticipant): Member | undefined {
    const member = this.#members.get(participant.userId);
    return member?.participant === participant ? member : undefined;
  }

  async #connect(participant: DaveParticipant): Promise<void> {
    const previous = this.#members.get(participant.userId);
    if (previous) await this.#disconnect(previous.participant);
    const member: Member = { participant, keyPackage: undefined, leafKeys: undefined, readyEpoch: undefined, reportedInvalid: false };
    // Op 11 for simulated clients (the bot gets its op 11 and 13 from the voice server itself).
    const others = [...this.#members.keys()];
    this.#members.set(participant.userId, member);
    if (participant.kind === 'simulated' && others.length > 0) participant.sendJson(11, { user_ids: others });
    for (const other of this.#members.values()) {
      if (other !== member && other.participant.kind === 'simulated') other.participant.sendJson(11, { user_ids: [participant.userId] });
    }
    if (!this.#dave(member)) {
      participant.start(0);
      if (this.protocolVersion !== 0 && ![...this.#members.values()].some((candidate) => candidate !== member && this.#dave(candidate)))
        this.protocolVersion = 0;
    } else {
      if (this.protocolVersion === 0 && ![...this.#members.values()].some((candidate) => !this.#dave(candidate)))
        this.protocolVersion = DAVE_PROTOCOL_VERSION;
      participant.start(this.protocolVersion);
      if (this.protocolVersion >= DAVE_PROTOCOL_VERSION)
        participant.sendBinary(DaveOp.MlsExternalSender, (await this.#externalSender()).package());
    }
    await this.#reconcile();
  }

  async #disconnect(participant: DaveParticipant): Promise<void> {
    const member = this.#member(participant);
    if (!member) return;
    this.#members.delete(participant.userId);
    for (const other of this.#members.values()) {
      if (other.participant.kind === 'simulated') other.participant.sendJson(13, { user_id: participant.userId });
    }
    this.#revokeAddsOf(participant.userId);
    this.#transition?.waiting.delete(participant.userId);
    await this.#maybeExecute();
    await this.#reconcile();
  }

  async #receive(participant: DaveParticipant, message: ClientDaveMessage): Promise<void> {
    const member = this.#member(participant);
    if (!member) return;
    if (this.protocolVersion === 0 && message.op !== DaveOp.TransitionReady) {
      this.#record({ type: 'unexpected', userId: participant.userId, what: `op ${message.op} while the call runs at protocol 0` });
      return;
    }
    if (message.kind === 'json') {
      if (message.op === DaveOp.TransitionReady) await this.#onReady(member, message.transitionId);
      else if (message.op === DaveOp.MlsInvalidCommitWelcome) await this.#onInvalid(member, message.transitionId);
      else this.#record({ type: 'unexpected', userId: participant.userId, what: `JSON op ${message.op}` });
      return;
    }
    if (message.op === DaveOp.MlsKeyPackage) await this.#onKeyPackage(member, message.payload);
    else if (message.op === DaveOp.MlsCommitWelcome) await this.#onCommitWelcome(member, message.payload);
    else this.#record({ type: 'unexpected', userId: participant.userId, what: `binary op ${message.op}` });
  }

  async #onKeyPackage(member: Member, payload: Buffer): Promise<void> {
    const userId = member.participant.userId;
    const sender = await this.#externalSender();
    let keyPackage: KeyPackage;
    try {
      keyPackage = await sender.validateKeyPackage(payload, userId);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.#log.warn('voice stand-in: refused a DAVE key package', { userId, reason });
      this.#record({ type: 'refusedKeyPackage', userId, reason });
      return;
    }
    this.#record({ type: 'keyPackage', userId });
    // One key package per pending member: a new one replaces (revokes) the add of the old.
    this.#revokeAddsOf(userId);
    member.keyPackage = keyPackage;
    await this.#reconcile();
  }

  #revokeAddsOf(userId: string): void {
    const revoked = this.#inFlight.filter((proposal) => proposal.kind === 'add' && proposal.userId === userId);
    if (revoked.length === 0) return;
    this.#inFlight = this.#inFlight.filter((proposal) => !revoked.includes(proposal));
    const recipients = new Set(revoked.flatMap((proposal) => [...proposal.sentTo]));
    for (const recipient of recipients) {
      const refs = revoked.filter((proposal) => proposal.sentTo.has(recipient)).map((proposal) => proposal.ref);
      this.#members.get(recipient)?.participant.sendBinary(DaveOp.MlsProposals, proposalsPayload(ProposalsOperation.Revoke, refs));
    }
    this.#record({ type: 'revoked', userId });
  }

  /** Members in the group whose leaf is good: they receive proposals and commit. */
  #liveLeaves(): Member[] {
    const group = this.#group;
    if (!group) return [];
    return group.users().flatMap((userId) => {
      const member = this.#members.get(userId);
      return member && this.#dave(member) && !member.reportedInvalid ? [member] : [];
    });
  }

  /**
   * Brings the group towards the members in the call: a downgrade or upgrade when the protocol must
   * change, a sole member reset, proposals to add who waits with a key package and to remove the leaves
   * of who left (or reported an invalid commit). Nothing happens while a transition is pending.
   */
  async #reconcile(): Promise<void> {
    if (this.#transition || this.#closed) return;
    const members = [...this.#members.values()];
    if (members.length === 0) {
      // Nobody left: the next member starts a new call at protocol 1.
      this.protocolVersion = DAVE_PROTOCOL_VERSION;
      this.#group = undefined;
      this.#inFlight = [];
      return;
    }
    const withoutDave = members.filter((member) => !this.#dave(member));
    if (this.protocolVersion >= DAVE_PROTOCOL_VERSION && withoutDave.length > 0) {
      await this.#downgrade();
      return;
    }
    if (this.protocolVersion === 0) {
      if (withoutDave.length > 0) return;
      await this.#upgrade();
    }
    const group = this.#group;
    if (group) {
      const live = this.#liveLeaves();
      if (live.length <= 1) {
        this.#soleMemberReset(live[0]);
        await this.#reconcile();
        return;
      }
      await this.#proposeInGroup(group, live);
    } else {
      await this.#proposeForNewGroup();
    }
  }

  async #proposeInGroup(group: GroupView, live: Member[]): Promise<void> {
    const sender = await this.#externalSender();
    const created: InFlightProposal[] = [];
    // Removes first: the leaves of who left, or of who reported an invalid commit or Welcome.
    for (const [leaf, userId] of group.leaves.entries()) {
      if (userId === undefined) continue;
      const member = this.#members.get(userId);
      if (member && !member.reportedInvalid) continue;
      if (this.#inFlight.some((proposal) => proposal.kind === 'remove' && proposal.leaf === leaf)) continue;
      const signed = await sender.proposeRemove(group.epoch, leaf);
      created.push({ ...signed, kind: 'remove', userId, leaf, refHex: signed.ref.toString('hex'), sentTo: new Set() });
    }
    // Then adds: who waits with a key package and has no good leaf.
    for (const member of this.#members.values()) {
      const keyPackage = member.keyPackage;
      if (!keyPackage || !this.#dave(member)) continue;
      if (group.leafOf(member.participant.userId) !== undefined && !member.reportedInvalid) continue;
      if (this.#inFlight.some((proposal) => proposal.kind === 'add' && proposal.keyPackage === keyPackage)) continue;
      const signed = await sender.proposeAdd(group.epoch, keyPackage);
      created.push({
        ...signed,
        kind: 'add',
        userId: member.participant.userId,
        keyPackage,
        refHex: signed.ref.toString('hex'),
        sentTo: new Set(),
      });
    }
    if (created.length === 0) return;
    this.#inFlight.push(...created);
    for (const recipient of live) {
      for (const proposal of created) proposal.sentTo.add(recipient.participant.userId);
      recipient.participant.sendBinary(
        DaveOp.MlsProposals,
        proposalsPayload(
          ProposalsOperation.Append,
          created.map((proposal) => proposal.bytes),
        ),
      );
    }
    this.#record({
      type: 'proposals',
      epoch: group.epoch,
      adds: created.filter((proposal) => proposal.kind === 'add').map((proposal) => proposal.userId),
      removes: created.filter((proposal) => proposal.kind === 'remove').map((proposal) => proposal.userId),
    });
  }

  /** Initial group creation: every pending member gets the Adds of all the others, at epoch 0. */
  async #proposeForNewGroup(): Promise<void> {
    const sender = await this.#externalSender();
    const pending = [...this.#members.values()].filter((member) => member.keyPackage && this.#dave(member));
    const created: string[] = [];
    for (const member of pending) {
      const keyPackage = member.keyPackage;
      if (!keyPackage || this.#inFlight.some((proposal) => proposal.kind === 'add' && proposal.keyPackage === keyPackage)) continue;
      const signed = await sender.proposeAdd(0n, keyPackage);
      this.#inFlight.push({
        ...signed,
        kind: 'add',
        userId: member.participant.userId,
        keyPackage,
        refHex: signed.ref.toString('hex'),
        sentTo: new Set(),
      });
      created.push(member.participant.userId);
    }
    for (const recipient of pending) {
      const userId = recipient.participant.userId;
      const unsent = this.#inFlight.filter((proposal) => proposal.userId !== userId && !proposal.sentTo.has(userId));
      if (unsent.length === 0) continue;
      for (const proposal of unsent) proposal.sentTo.add(userId);
      recipient.participant.sendBinary(
        DaveOp.MlsProposals,
        proposalsPayload(
          ProposalsOperation.Append,
          unsent.map((proposal) => proposal.bytes),
        ),
      );
    }
    if (created.length > 0) this.#record({ type: 'proposals', epoch: 0n, adds: created, removes: [] });
  }

  async #onCommitWelcome(member: Member, payload: Buffer): Promise<void> {
    const userId = member.participant.userId;
    const drop = (reason: string) => {
      this.#log.debug('voice stand-in: dropped a DAVE commit', { userId, reason });
      this.#record({ type: 'droppedCommit', from: userId, reason });
    };
    const sender = await this.#externalSender();
    const group = this.#group;
    const epoch = group?.epoch ?? 0n;
    let parsed;
    try {
      parsed = sender.parseCommitWelcome(payload);
    } catch (error) {
      return drop(`unreadable: ${error instanceof Error ? error.message : String(error)}`);
    }
    // "The voice gateway will not broadcast a commit message for a past or future epoch."
    if (parsed.commit.content.epoch !== epoch) return drop(`for epoch ${parsed.commit.content.epoch}, the group is at ${epoch}`);
    if (this.#transition) return drop('a transition is pending');
    const expected = group ? this.#inFlight : this.#inFlight.filter((proposal) => proposal.userId !== userId);
    if (expected.length === 0) return drop('no proposal is waiting');
    if (expected.some((proposal) => !proposal.sentTo.has(userId))) return drop('it cannot reference proposals it has not been sent');
    let checked;
    try {
      const committer = group
        ? member.leafKeys
        : member.keyPackage && { signaturePublicKey: member.keyPackage.leafNode.signaturePublicKey, identity: userIdBigEndian(userId) };
      checked = sender.checkCommit(parsed.commit, { epoch, refs: expected.map((proposal) => proposal.refHex), committer });
    } catch (error) {
      return drop(error instanceof Error ? error.message : String(error));
    }
    if (group) {
      if (group.leaves[checked.committerLeaf] !== userId || member.reportedInvalid) return drop('the committer is not in that leaf');
    } else if (checked.committerLeaf !== 0 || !member.keyPackage) {
      return drop('the first commit of a group comes from leaf 0 of a pending member');
    }
    const byRef = new Map(expected.map((proposal) => [proposal.refHex, proposal]));
    const ordered = checked.refs.flatMap((ref) => byRef.get(ref) ?? []);
    const adds = ordered.filter((proposal) => proposal.kind === 'add');
    if (adds.length > 0 && !parsed.welcome) return drop('it adds members without a Welcome');
    await this.#announce(member, parsed.commitBytes, parsed.welcome, ordered);
  }

  async #announce(
    committer: Member,
    commitBytes: Buffer,
    welcome: Parameters<GatewayExternalSender['welcomeFor']>[0] | undefined,
    ordered: InFlightProposal[],
  ): Promise<void> {
    const sender = await this.#externalSender();
    const committerId = committer.participant.userId;
    const before = this.#group ? this.#liveLeaves() : [committer];
    const view = this.#group ?? new GroupView();
    if (!this.#group) {
      const keyPackage = committer.keyPackage;
      committer.leafKeys = keyPackage && {
        signaturePublicKey: keyPackage.leafNode.signaturePublicKey,
        identity: userIdBigEndian(committerId),
      };
      committer.keyPackage = undefined;
    }
    view.apply(
      committerId,
      ordered.map((proposal) =>
        proposal.kind === 'add' ? { kind: 'add' as const, userId: proposal.userId } : { kind: 'remove' as const, leaf: proposal.leaf ?? 0 },
      ),
    );
    this.#group = view;
    this.#inFlight = [];
    const transitionId = this.#hooks.transitionId(() => this.#takeTransitionId());
    const adds = ordered.filter((proposal) => proposal.kind === 'add');
    this.#record({
      type: 'commit',
      epoch: view.epoch,
      from: committerId,
      transitionId,
      adds: adds.map((proposal) => proposal.userId),
      removes: ordered.filter((proposal) => proposal.kind === 'remove').map((proposal) => proposal.userId),
    });
    this.#log.info('voice stand-in: DAVE commit announced', { epoch: view.epoch, from: committerId, transitionId, leaves: view.leaves });
    for (const member of before) {
      if (view.leafOf(member.participant.userId) === undefined) continue;
      member.participant.sendBinary(
        DaveOp.MlsAnnounceCommitTransition,
        this.#hooks.outgoing(member.participant.userId, transitionPayload(transitionId, commitBytes)),
      );
    }
    const welcomed: Member[] = [];
    for (const proposal of adds) {
      const member = this.#members.get(proposal.userId);
      const keyPackage = proposal.keyPackage;
      if (!member || !keyPackage || !welcome) continue;
      member.keyPackage = member.keyPackage === keyPackage ? undefined : member.keyPackage;
      member.leafKeys = { signaturePublicKey: keyPackage.leafNode.signaturePublicKey, identity: userIdBigEndian(proposal.userId) };
      member.reportedInvalid = false;
      welcomed.push(member);
      const bytes = this.#hooks.outgoing(proposal.userId, transitionPayload(transitionId, await sender.welcomeFor(welcome, keyPackage)));
      const send = () => member.participant.sendBinary(DaveOp.MlsWelcome, bytes);
      this.#hooks.welcome(proposal.userId, send, (late) =>
        this.#enqueue(`late Welcome to ${proposal.userId}`, () => Promise.resolve(late())),
      );
    }
    const inGroup = [...before, ...welcomed].filter((member) => view.leafOf(member.participant.userId) !== undefined);
    if (transitionId === 0) {
      for (const member of inGroup) member.readyEpoch = view.epoch;
      this.#lastTransitionId = 0;
      this.#remember(0, view.epoch);
      this.#record({
        type: 'transitionExecuted',
        transitionId: 0,
        epoch: view.epoch,
        protocolVersion: this.protocolVersion,
        timedOutWaitingFor: [],
      });
      await this.#reconcile();
      return;
    }
    this.#startTransition(transitionId, 'commit', view.epoch, inGroup);
  }

  #takeTransitionId(): number {
    const id = this.#nextTransitionId;
    this.#nextTransitionId = id >= MAX_TRANSITION_ID ? 1 : id + 1;
    return id;
  }

  #startTransition(id: number, kind: Transition['kind'], epoch: bigint | undefined, waitingFor: Member[]): void {
    const timer = setTimeout(() => {
      this.#enqueue(`transition ${id} timed out`, async () => {
        if (this.#transition?.id === id) await this.#execute(this.#transition);
      });
    }, this.#options.transitionTimeoutMs);
    timer.unref();
    this.#transition = { id, kind, epoch, waiting: new Set(waitingFor.map((member) => member.participant.userId)), timer };
  }

  async #onReady(member: Member, transitionId: number): Promise<void> {
    const transition = this.#transition;
    if (transition?.id === transitionId) {
      transition.waiting.delete(member.participant.userId);
      member.readyEpoch = transition.epoch;
      await this.#maybeExecute();
      return;
    }
    if (this.#executed.has(transitionId)) {
      // Ready for a transition that already executed (it came late, e.g. after a late Welcome): execute it there.
      member.readyEpoch = this.#executed.get(transitionId);
      member.participant.sendJson(DaveOp.ExecuteTransition, { transition_id: transitionId });
      return;
    }
    this.#record({ type: 'unexpected', userId: member.participant.userId, what: `op 23 for unknown transition ${transitionId}` });
  }

  async #maybeExecute(): Promise<void> {
    const transition = this.#transition;
    if (transition && transition.waiting.size === 0) await this.#execute(transition);
  }

  #remember(transitionId: number, epoch: bigint | undefined): void {
    this.#executed.delete(transitionId);
    this.#executed.set(transitionId, epoch);
    for (const oldest of this.#executed.keys()) {
      if (this.#executed.size <= EXECUTED_LIMIT) break;
      this.#executed.delete(oldest);
    }
  }

  async #execute(transition: Transition): Promise<void> {
    clearTimeout(transition.timer);
    this.#transition = undefined;
    this.#lastTransitionId = transition.id;
    this.#remember(transition.id, transition.epoch);
    // Who timed out gets its op 22 when its op 23 comes (#onReady); a downgrade reaches everyone at once.
    const recipients = [...this.#members.values()].filter((member) =>
      transition.kind === 'downgrade'
        ? this.#dave(member)
        : this.#group?.leafOf(member.participant.userId) !== undefined &&
          !member.reportedInvalid &&
          !transition.waiting.has(member.participant.userId),
    );
    for (const member of recipients) member.participant.sendJson(DaveOp.ExecuteTransition, { transition_id: transition.id });
    if (transition.kind === 'downgrade') {
      this.protocolVersion = 0;
      this.#group = undefined;
      this.#inFlight = [];
      for (const member of this.#members.values()) {
        member.keyPackage = undefined;
        member.leafKeys = undefined;
        member.readyEpoch = undefined;
        member.reportedInvalid = false;
      }
    }
    this.#record({
      type: 'transitionExecuted',
      transitionId: transition.id,
      epoch: transition.epoch,
      protocolVersion: this.protocolVersion,
      timedOutWaitingFor: [...transition.waiting],
    });
    await this.#reconcile();
  }

  async #onInvalid(member: Member, transitionId: number): Promise<void> {
    const userId = member.participant.userId;
    this.#record({ type: 'invalidReport', userId, transitionId });
    this.#log.info('voice stand-in: a member reports an invalid DAVE commit or Welcome', { userId, transitionId });
    // Whitepaper: its leaf is removed and it is a pending member again, re-added with its next key package.
    member.keyPackage = undefined;
    member.readyEpoch = undefined;
    if (this.#group?.leafOf(userId) !== undefined) member.reportedInvalid = true;
    this.#revokeAddsOf(userId);
    this.#transition?.waiting.delete(userId);
    await this.#maybeExecute();
    await this.#reconcile();
  }

  /** Whitepaper "Sole member reset": op 24 (epoch 1) and op 21 (transition 0); the group is forgotten. */
  #soleMemberReset(sole: Member | undefined): void {
    this.#group = undefined;
    this.#inFlight = [];
    for (const member of this.#members.values()) {
      member.leafKeys = undefined;
      member.readyEpoch = undefined;
      member.reportedInvalid = false;
    }
    if (!sole) return;
    sole.keyPackage = undefined;
    this.#record({ type: 'soleMemberReset', userId: sole.participant.userId });
    sole.participant.sendJson(DaveOp.PrepareEpoch, { protocol_version: this.protocolVersion, epoch: 1 });
    sole.participant.sendJson(DaveOp.PrepareTransition, { protocol_version: this.protocolVersion, transition_id: 0 });
    this.#lastTransitionId = 0;
  }

  /** A member without DAVE joined: every member with DAVE goes to protocol 0 (op 21, 23, 22). */
  async #downgrade(): Promise<void> {
    const dave = [...this.#members.values()].filter((member) => this.#dave(member));
    const id = this.#takeTransitionId();
    this.#record({ type: 'downgrade', transitionId: id });
    for (const member of dave) member.participant.sendJson(DaveOp.PrepareTransition, { protocol_version: 0, transition_id: id });
    this.#startTransition(id, 'downgrade', undefined, dave);
    await this.#maybeExecute();
  }

  /** The last member without DAVE left: a new group at protocol 1 (op 24 epoch 1, and op 25 again). */
  async #upgrade(): Promise<void> {
    this.protocolVersion = DAVE_PROTOCOL_VERSION;
    this.#group = undefined;
    this.#inFlight = [];
    this.#record({ type: 'upgrade' });
    const externalSender = (await this.#externalSender()).package();
    for (const member of this.#members.values()) {
      member.keyPackage = undefined;
      member.participant.sendJson(DaveOp.PrepareEpoch, { protocol_version: DAVE_PROTOCOL_VERSION, epoch: 1 });
      member.participant.sendBinary(DaveOp.MlsExternalSender, externalSender);
    }
  }
}
