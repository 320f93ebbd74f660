// A simulated member's DAVE client: what a Discord client does with ops 21-31 (its MLS state on ts-mls,
// dave-mls.ts) and with media (dave-frame.ts). It sends what it says encrypted with its sender key and
// opens what others send, as the whitepaper has receivers do:
//   - it prepares the new epoch's receive keys when it processes a commit or Welcome, and switches its
//     own sender key only when the transition executes (op 22, or at once for transition id 0);
//   - receive keys of an epoch it left are kept 10 s after the transition, for frames in flight;
//   - F8 FF FE (Opus silence) is never encrypted and always passes;
//   - a frame in the clear passes only in passthrough mode (protocol 0, and 10 s after an upgrade);
//     in an encrypted call it is dropped and counted, as Discord's clients drop it;
//   - a commit or Welcome it cannot process is reported with op 31, its group state reset, and a new key
//     package sent (as @discordjs/voice's recoverFromInvalidTransition does).
// Each member handles its messages one at a time, in the order the gateway sent them.

import { randomBytes } from 'node:crypto';
import type { Logger } from '../lib/log.ts';
import { FrameEncryptor, HashRatchet, decryptFrame, isSilence, parseProtocolFrame } from './frame.ts';
import { MlsMember } from './mls.ts';
import { DAVE_PROTOCOL_VERSION, DaveOp } from './wire.ts';
import { VoiceOp } from '../voice/protocol.ts';

/** Whitepaper: keys of a previous epoch are kept up to ten seconds after a transition. */
export const PREVIOUS_EPOCH_RETENTION_MS = 10_000;
/** @discordjs/voice's (and libdave's) passthrough window after an upgrade. */
const UPGRADE_PASSTHROUGH_MS = 10_000;

/** What a member says to the gateway: binary ops 26 and 28, JSON ops 23 and 31. */
export type ClientDaveMessage = { kind: 'binary'; op: number; payload: Buffer } | { kind: 'json'; op: number; transitionId: number };

export type OpenedFrame = { kind: 'audio'; opus: Buffer } | { kind: 'unencrypted' } | { kind: 'undecryptable'; reason: string };

export interface SimulatedMemberStats {
  /** Frames from others that decrypted. */
  decrypted: number;
  /** Frames from others that came in the clear into an encrypted call: dropped. */
  unencrypted: number;
  /** DAVE frames from others that no key of this member opened. */
  undecryptable: number;
  /** Frames in the clear that passthrough let through (protocol 0, or just after an upgrade). */
  passedThrough: number;
  /** Own frames not sent because the member had no sender key yet (libdave's encryptor fails then). */
  droppedWithoutKey: number;
  /** Commits and Welcomes this member could not process (each reported with op 31). */
  invalidReports: number;
}

interface ReceiveEpoch {
  epoch: bigint;
  members: string[];
  ratchets: Map<string, HashRatchet>;
  /** Date.now() after which the keys are gone; undefined while the epoch is current or coming. */
  expiresAt: number | undefined;
}

interface PendingTransition {
  protocolVersion: number;
  /** Set for a commit or Welcome: the epoch it moves to and this member's sender base secret there. */
  epoch?: bigint;
  members?: string[];
  sendSecret?: Buffer;
  receive?: ReceiveEpoch;
}

export interface SimulatedMemberOptions {
  userId: string;
  channelId: string;
  send: (message: ClientDaveMessage) => void;
  /** Something changed that tests may be waiting for. */
  changed: () => void;
  log: Logger;
}

export class SimulatedDaveMember {
  readonly userId: string;
  readonly channelId: string;
  /** The protocol version it sends with now (0: in the clear). */
  protocolVersion = 0;
  readonly stats: SimulatedMemberStats = {
    decrypted: 0,
    unencrypted: 0,
    undecryptable: 0,
    passedThrough: 0,
    droppedWithoutKey: 0,
    invalidReports: 0,
  };
  /** Messages it could not handle (not counting reported commits and Welcomes), for tests to read. */
  readonly errors: string[] = [];
  /** Transition ids it has executed, in order. */
  readonly executedTransitions: number[] = [];
  readonly #options: SimulatedMemberOptions;
  readonly #log: Logger;
  readonly #recognized = new Set<string>();
  readonly #pending = new Map<number, PendingTransition>();
  #mls: MlsMember | undefined;
  #receive: ReceiveEpoch[] = [];
  #sender: { epoch: bigint; members: string[]; encryptor: FrameEncryptor } | undefined;
  #staleSender: FrameEncryptor | undefined;
  #passthroughUntil = Number.POSITIVE_INFINITY;
  #queue: Promise<void> = Promise.resolve();
  #working = 0;
  #closed = false;

  constructor(options: SimulatedMemberOptions) {
    this.userId = options.userId;
    this.channelId = options.channelId;
    this.#options = options;
    this.#log = options.log;
  }

  // ---- From the gateway ------------------------------------------------------------------------------

  /** The call's protocol version when the member connects (a client's select_protocol_ack). */
  start(protocolVersion: number): void {
    this.#enqueue('start', async () => {
      this.protocolVersion = protocolVersion;
      this.#passthroughUntil = protocolVersion === 0 ? Number.POSITIVE_INFINITY : 0;
      if (protocolVersion >= DAVE_PROTOCOL_VERSION) await this.#sendKeyPackage();
    });
  }

  deliverJson(op: number, d: Record<string, unknown>): void {
    this.#enqueue(`op ${op}`, () => this.#onJson(op, d));
  }

  deliverBinary(op: number, payload: Buffer): void {
    this.#enqueue(`op ${op}`, () => this.#onBinary(op, payload));
  }

  /** The member left: nothing more is processed or sent. */
  close(): void {
    this.#closed = true;
  }

  // ---- Media -----------------------------------------------------------------------------------------

  /** What goes on the wire for one Opus frame it says; undefined when it has no key to send with. */
  protect(opus: Buffer): Buffer | undefined {
    if (isSilence(opus) || this.protocolVersion === 0) return opus;
    if (this.#staleSender) return this.#staleSender.encryptOpus(opus);
    if (!this.#sender) {
      this.stats.droppedWithoutKey++;
      return undefined;
    }
    return this.#sender.encryptor.encryptOpus(opus);
  }

  /**
   * Opens one frame from `senderId` as this member's client would. With `count: false` a failure is not
   * counted (the caller tries again once the member has caught up with its messages).
   */
  open(senderId: string, frame: Buffer, options: { count?: boolean } = {}): OpenedFrame {
    const count = options.count ?? true;
    if (isSilence(frame)) return { kind: 'audio', opus: frame };
    const protocolFrame = parseProtocolFrame(frame);
    if (!protocolFrame) {
      if (this.#passthrough()) {
        this.stats.passedThrough++;
        return { kind: 'audio', opus: frame };
      }
      if (count) this.stats.unencrypted++;
      return { kind: 'unencrypted' };
    }
    const now = Date.now();
    this.#receive = this.#receive.filter((epoch) => epoch.expiresAt === undefined || epoch.expiresAt > now);
    let reason = `no key for ${senderId}`;
    for (const epoch of this.#receive) {
      const ratchet = epoch.ratchets.get(senderId);
      if (!ratchet) continue;
      try {
        const opus = decryptFrame(ratchet, protocolFrame);
        this.stats.decrypted++;
        return { kind: 'audio', opus };
      } catch (error) {
        reason = `epoch ${epoch.epoch}: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    if (count) this.stats.undecryptable++;
    return { kind: 'undecryptable', reason };
  }

  /** True while it is processing gateway messages: a frame that fails now may open once it is done. */
  get busy(): boolean {
    return this.#working > 0;
  }

  /** Resolves once every message delivered so far has been handled. */
  idle(): Promise<void> {
    return this.#queue;
  }

  /**
   * Whether `userId` holds this member's current sender key (or it sends in the clear): what a client
   * waits for before it talks. The stale-key fault does not change it: the client believes its key good.
   */
  heardBy(userId: string): boolean {
    if (this.protocolVersion === 0) return true;
    return this.#sender !== undefined && this.#sender.members.includes(userId);
  }

  /** Whether it holds keys for `userId`'s frames in its current epoch. */
  hears(userId: string): boolean {
    return this.#receive.some((epoch) => epoch.expiresAt === undefined && epoch.ratchets.has(userId));
  }

  get epoch(): bigint | undefined {
    return this.#mls?.epoch;
  }

  get epochAuthenticator(): Buffer | undefined {
    return this.#mls?.epochAuthenticator;
  }

  /** The established group's users, as this member's MLS state has them. */
  members(): string[] {
    return this.#mls?.members() ?? [];
  }

  /** The epoch its sender key belongs to (undefined: none). */
  get sendingEpoch(): bigint | undefined {
    return this.#sender?.epoch;
  }

  // ---- Faults ----------------------------------------------------------------------------------------

  /**
   * From now on (until turned off) its frames are encrypted with a sender key nobody holds, as a client
   * that missed transitions and kept a key long expired would: valid DAVE frames that do not decrypt.
   */
  useStaleKey(on: boolean): void {
    this.#staleSender = on ? new FrameEncryptor(randomBytes(16)) : undefined;
    this.#options.changed();
  }

  // ---- Internals ---------------------------------------------------------------------------------------

  #passthrough(): boolean {
    return this.protocolVersion === 0 || Date.now() < this.#passthroughUntil;
  }

  #enqueue(what: string, task: () => Promise<void>): void {
    this.#working++;
    this.#queue = this.#queue
      .then(async () => {
        if (this.#closed) return;
        await task();
      })
      .catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        this.errors.push(`${what}: ${message}`);
        this.#log.warn('voice stand-in: a simulated member failed a DAVE message', { userId: this.userId, what, error });
      })
      .finally(() => {
        this.#working--;
        this.#options.changed();
      });
  }

  #send(message: ClientDaveMessage): void {
    if (!this.#closed) this.#options.send(message);
  }

  async #member(): Promise<MlsMember> {
    this.#mls ??= await MlsMember.create(this.userId, this.channelId);
    return this.#mls;
  }

  async #sendKeyPackage(): Promise<void> {
    const mls = await this.#member();
    this.#send({ kind: 'binary', op: DaveOp.MlsKeyPackage, payload: await mls.createKeyPackage() });
  }

  async #onJson(op: number, d: Record<string, unknown>): Promise<void> {
    const transitionId = typeof d.transition_id === 'number' ? d.transition_id : undefined;
    const protocolVersion = typeof d.protocol_version === 'number' ? d.protocol_version : undefined;
    switch (op) {
      case VoiceOp.ClientsConnect:
        for (const id of Array.isArray(d.user_ids) ? d.user_ids : []) if (typeof id === 'string') this.#recognized.add(id);
        return;
      case VoiceOp.ClientDisconnect:
        if (typeof d.user_id === 'string') this.#recognized.delete(d.user_id);
        return;
      case DaveOp.PrepareTransition:
        if (transitionId === undefined || protocolVersion === undefined)
          throw new Error('op 21 without transition_id and protocol_version');
        this.#pending.set(transitionId, { ...this.#pending.get(transitionId), protocolVersion });
        if (transitionId === 0) {
          this.#execute(0);
          return;
        }
        // Receivers let frames in the clear through while the call downgrades.
        if (protocolVersion === 0) this.#passthroughUntil = Number.POSITIVE_INFINITY;
        this.#send({ kind: 'json', op: DaveOp.TransitionReady, transitionId });
        return;
      case DaveOp.ExecuteTransition:
        if (transitionId === undefined) throw new Error('op 22 without transition_id');
        this.#execute(transitionId);
        return;
      case DaveOp.PrepareEpoch: {
        if (protocolVersion === undefined || typeof d.epoch !== 'number') throw new Error('op 24 without protocol_version and epoch');
        if (d.epoch !== 1) return;
        // A group is (re)created: forget it, and send a new key package for the new one.
        const mls = await this.#member();
        await mls.reset();
        this.#pending.clear();
        if (protocolVersion >= DAVE_PROTOCOL_VERSION) await this.#sendKeyPackage();
        return;
      }
      default:
        return;
    }
  }

  async #onBinary(op: number, payload: Buffer): Promise<void> {
    const mls = await this.#member();
    switch (op) {
      case DaveOp.MlsExternalSender:
        await mls.setExternalSender(payload);
        return;
      case DaveOp.MlsProposals: {
        const operation = payload[0];
        if (operation === undefined) throw new Error('op 27 without an operation type');
        const commit = await mls.processProposals(operation, payload.subarray(1), this.#recognized);
        if (commit) this.#send({ kind: 'binary', op: DaveOp.MlsCommitWelcome, payload: commit });
        return;
      }
      case DaveOp.MlsAnnounceCommitTransition:
      case DaveOp.MlsWelcome: {
        if (payload.length < 2) throw new Error(`op ${op} without a transition id`);
        const transitionId = payload.readUInt16BE(0);
        const body = payload.subarray(2);
        try {
          if (op === DaveOp.MlsWelcome) await mls.processWelcome(body);
          else if ((await mls.processCommit(body)).kind === 'removed') {
            this.#sender = undefined;
            return;
          }
        } catch (error) {
          await this.#reportInvalid(transitionId, op, error);
          return;
        }
        await this.#prepareEpoch(mls, transitionId);
        return;
      }
      default:
        throw new Error(`a binary op ${op} the gateway does not send`);
    }
  }

  async #reportInvalid(transitionId: number, op: number, error: unknown): Promise<void> {
    this.stats.invalidReports++;
    this.#log.info('voice stand-in: a simulated member reports an invalid commit or Welcome', {
      userId: this.userId,
      op,
      transitionId,
      error,
    });
    this.#send({ kind: 'json', op: DaveOp.MlsInvalidCommitWelcome, transitionId });
    const mls = await this.#member();
    await mls.reset();
    await this.#sendKeyPackage();
  }

  /** After a commit or Welcome: the new epoch's receive keys now, the sender key at the transition. */
  async #prepareEpoch(mls: MlsMember, transitionId: number): Promise<void> {
    const epoch = mls.epoch;
    if (epoch === undefined) throw new Error('no epoch after a commit or Welcome');
    const members = mls.members();
    const ratchets = new Map<string, HashRatchet>();
    for (const member of members) {
      if (member !== this.userId) ratchets.set(member, new HashRatchet(await mls.mediaBaseSecret(member)));
    }
    const receive: ReceiveEpoch = { epoch, members, ratchets, expiresAt: undefined };
    this.#receive = [receive, ...this.#receive];
    const sendSecret = await mls.mediaBaseSecret(this.userId);
    this.#pending.set(transitionId, { protocolVersion: DAVE_PROTOCOL_VERSION, epoch, members, sendSecret, receive });
    if (transitionId === 0) this.#execute(0);
    else this.#send({ kind: 'json', op: DaveOp.TransitionReady, transitionId });
  }

  #execute(transitionId: number): void {
    const transition = this.#pending.get(transitionId);
    if (!transition) return;
    this.#pending.delete(transitionId);
    this.executedTransitions.push(transitionId);
    const now = Date.now();
    if (transition.protocolVersion === 0) {
      this.protocolVersion = 0;
      this.#passthroughUntil = Number.POSITIVE_INFINITY;
      this.#sender = undefined;
      return;
    }
    if (this.protocolVersion === 0) this.#passthroughUntil = now + UPGRADE_PASSTHROUGH_MS;
    else if (this.#passthroughUntil === Number.POSITIVE_INFINITY) this.#passthroughUntil = 0;
    this.protocolVersion = transition.protocolVersion;
    const { epoch, members, sendSecret } = transition;
    if (epoch === undefined || members === undefined || sendSecret === undefined) {
      // Transition 0 after op 24: the member moves to its new, still pending group (a sole member reset).
      this.#sender = undefined;
      for (const receive of this.#receive) receive.expiresAt ??= now + PREVIOUS_EPOCH_RETENTION_MS;
      return;
    }
    this.#sender = { epoch, members, encryptor: new FrameEncryptor(sendSecret) };
    for (const receive of this.#receive) if (receive !== transition.receive) receive.expiresAt ??= now + PREVIOUS_EPOCH_RETENTION_MS;
  }
}
