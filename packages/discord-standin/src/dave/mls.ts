// The MLS side of DAVE v1 on ts-mls 1.6.4, an MLS implementation the bot does not use (the bot's
// @discordjs/voice runs openmls through @snazzah/davey), so the bot's client is checked against code it
// does not share. Two roles:
//   - GatewayExternalSender: the voice gateway's part (the MLS external sender and delivery service). It signs
//     Add and Remove proposals, checks key packages and commits, and cuts each newcomer's share out of a
//     Welcome. It holds no group secrets.
//   - MlsMember: a simulated member's group state: a pending one-member group, proposals, commits,
//     Welcomes, and the exporter that media keys come from.
//
// ts-mls 1.6.4 reads and writes the external_senders extension as ONE ExternalSender, where RFC 9420 (and
// openmls, libdave) have a vector of them; a group made the ts-mls way is unreadable to davey, and davey's
// groups are unreadable to ts-mls. The workarounds, from the feasibility proof (docs/research/dave-probe):
//   (a) createGroup without extensions, then set the RFC encoding: epoch 0's secrets do not depend on them;
//   (b) verify external proposals against the sender decoded here (unprotectPublicMessage's override key);
//   (c) give proposeExternal a context whose extension is in ts-mls's form: it only looks up sender index 0
//       there, and an external sender's signature does not cover the group context.
// They use deep imports (allowed by the package's exports map, not marked public): the version is pinned.

import { p256 } from '@noble/curves/nist.js';
import {
  createCommit,
  createGroup,
  decodeExternalSender,
  decodeMlsMessage,
  emptyPskIndex,
  encodeExternalSender,
  encodeMlsMessage,
  generateKeyPackageWithKey,
  getCiphersuiteFromName,
  getCiphersuiteImpl,
  joinGroup,
  mlsExporter,
  processPublicMessage,
  proposeExternal,
} from 'ts-mls';
import type {
  Capabilities,
  CiphersuiteImpl,
  CiphersuiteName,
  ClientState,
  ExternalSender,
  GroupInfo,
  KeyPackage,
  MLSMessage,
  PrivateKeyPackage,
  Proposal,
  PublicMessage,
  Welcome,
} from 'ts-mls';
import { makeProposalRef } from 'ts-mls/authenticatedContent.js';
import { processProposal } from 'ts-mls/clientState.js';
import { decodeKeyPackage, encodeKeyPackage, makeKeyPackageRef, verifyKeyPackage } from 'ts-mls/keyPackage.js';
import { unprotectPublicMessage } from 'ts-mls/messageProtectionPublic.js';
import { decodeWelcome, encodeWelcome } from 'ts-mls/welcome.js';
import { MEDIA_BASE_SECRET_BYTES, MEDIA_KEY_LABEL } from './frame.ts';
import { ProposalsOperation, readVector, userIdBigEndian, userIdFromIdentity, userIdLittleEndian, vector } from './wire.ts';

const CIPHERSUITE: CiphersuiteName = 'MLS_128_DHKEMP256_AES128GCM_SHA256_P256';
const MAX_U64 = 2n ** 64n - 1n;
/** libdave's test external sender uses this identity; any bytes do, members compare the whole package. */
const GATEWAY_IDENTITY = new Uint8Array([0x00, 0x01, 0x01, 0x00]);
const DAVE_CAPABILITIES: Capabilities = {
  versions: ['mls10'],
  ciphersuites: [CIPHERSUITE],
  extensions: [],
  proposals: [],
  credentials: ['basic'],
};
/** The gateway requires the widest key package lifetime, which members do not check. */
const FULL_LIFETIME = { notBefore: 0n, notAfter: MAX_U64 };

let ciphersuite: Promise<CiphersuiteImpl> | undefined;

/** DAVE v1's MLS parameters: cipher suite 2, P-256 and AES-128-GCM with SHA-256. */
export function daveCiphersuite(): Promise<CiphersuiteImpl> {
  ciphersuite ??= getCiphersuiteImpl(getCiphersuiteFromName(CIPHERSUITE));
  return ciphersuite;
}

/** ECDSA P-256 keys, the public key as an uncompressed point (65 bytes) as davey and libdave use them. */
function signingKeyPair(): { signKey: Uint8Array; publicKey: Uint8Array } {
  const signKey = p256.utils.randomSecretKey();
  return { signKey, publicKey: p256.getPublicKey(signKey, false) };
}

/** The group id is the channel id as u64 big-endian. */
export function groupIdOf(channelId: string): Buffer {
  return userIdBigEndian(channelId);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

export interface SignedProposal {
  /** The MLSMessage (a PublicMessage from external sender 0) as sent in op 27. */
  bytes: Buffer;
  /** RFC 9420 ProposalRef, what commits reference and revokes name. */
  ref: Buffer;
}

export interface ParsedCommitWelcome {
  commit: PublicMessage;
  commitBytes: Buffer;
  welcome: Welcome | undefined;
}

export interface CheckedCommit {
  committerLeaf: number;
  /** The referenced proposals, hex, in the commit's order. */
  refs: string[];
}

export class GatewayExternalSender {
  readonly #cs: CiphersuiteImpl;
  readonly #groupId: Buffer;
  readonly #keys: { signKey: Uint8Array; publicKey: Uint8Array };
  readonly #sender: ExternalSender;

  static async create(channelId: string): Promise<GatewayExternalSender> {
    return new GatewayExternalSender(await daveCiphersuite(), channelId);
  }

  private constructor(cs: CiphersuiteImpl, channelId: string) {
    this.#cs = cs;
    this.#groupId = groupIdOf(channelId);
    this.#keys = signingKeyPair();
    this.#sender = { signaturePublicKey: this.#keys.publicKey, credential: { credentialType: 'basic', identity: GATEWAY_IDENTITY } };
  }

  /** Op 25's payload: the TLS-serialised ExternalSender, no vector around it. */
  package(): Buffer {
    return Buffer.from(encodeExternalSender(this.#sender));
  }

  #signingContext(epoch: bigint): GroupInfo {
    return {
      groupContext: {
        version: 'mls10',
        cipherSuite: CIPHERSUITE,
        groupId: this.#groupId,
        epoch,
        treeHash: new Uint8Array(),
        confirmedTranscriptHash: new Uint8Array(),
        // ts-mls's own (one-sender) form, workaround (c).
        extensions: [{ extensionType: 'external_senders', extensionData: encodeExternalSender(this.#sender) }],
      },
      extensions: [],
      confirmationTag: new Uint8Array(),
      signer: 0,
      signature: new Uint8Array(),
    };
  }

  async #propose(epoch: bigint, proposal: Proposal): Promise<SignedProposal> {
    const message = await proposeExternal(this.#signingContext(epoch), proposal, this.#keys.publicKey, this.#keys.signKey, this.#cs);
    if (message.wireformat !== 'mls_public_message') throw new Error('ts-mls made an external proposal that is not a PublicMessage');
    const { content, auth } = message.publicMessage;
    const ref = Buffer.from(await makeProposalRef({ wireformat: 'mls_public_message', content, auth }, this.#cs.hash));
    return { bytes: Buffer.from(encodeMlsMessage(message)), ref };
  }

  proposeAdd(epoch: bigint, keyPackage: KeyPackage): Promise<SignedProposal> {
    return this.#propose(epoch, { proposalType: 'add', add: { keyPackage } });
  }

  proposeRemove(epoch: bigint, leafIndex: number): Promise<SignedProposal> {
    return this.#propose(epoch, { proposalType: 'remove', remove: { removed: leafIndex } });
  }

  /**
   * Op 26 checked as the gateway checks it (whitepaper "Key Packages / Validation"): a bare KeyPackage
   * (real clients send no MLSMessage around it), v1's suite, a basic credential holding this user's id,
   * the widest lifetime, a good signature.
   */
  async validateKeyPackage(bytes: Buffer, userId: string): Promise<KeyPackage> {
    const decoded = decodeKeyPackage(bytes, 0);
    if (!decoded || decoded[1] !== bytes.length) throw new Error('not exactly one KeyPackage');
    const keyPackage = decoded[0];
    if (keyPackage.version !== 'mls10' || keyPackage.cipherSuite !== CIPHERSUITE) throw new Error('wrong MLS version or cipher suite');
    const credential = keyPackage.leafNode.credential;
    if (credential.credentialType !== 'basic' || !sameBytes(credential.identity, userIdBigEndian(userId)))
      throw new Error('its credential is not this user');
    const { lifetime } = keyPackage.leafNode;
    if (lifetime.notBefore !== 0n || lifetime.notAfter !== MAX_U64) throw new Error('its lifetime is not [0, 2^64-1]');
    if (!(await verifyKeyPackage(keyPackage, this.#cs.signature))) throw new Error('its signature does not verify');
    return keyPackage;
  }

  /** Op 28: a commit (an MLSMessage) and, when it adds members, a bare Welcome. */
  parseCommitWelcome(payload: Buffer): ParsedCommitWelcome {
    const decoded = decodeMlsMessage(payload, 0);
    if (!decoded) throw new Error('no MLSMessage');
    const [message, commitLength] = decoded;
    if (message.wireformat !== 'mls_public_message') throw new Error('the commit is not a PublicMessage');
    let welcome: Welcome | undefined;
    if (commitLength < payload.length) {
      const rest = decodeWelcome(payload, commitLength);
      if (!rest || commitLength + rest[1] !== payload.length) throw new Error('what follows the commit is not one Welcome');
      welcome = rest[0];
    }
    return { commit: message.publicMessage, commitBytes: Buffer.from(payload.subarray(0, commitLength)), welcome };
  }

  /**
   * The gateway's commit checks (whitepaper "Voice Gateway Commit Validity"): a commit from a member,
   * for this group and epoch, referencing exactly the expected proposals, and leaving the committer's
   * credential and signature key as they were.
   */
  checkCommit(
    commit: PublicMessage,
    expected: { epoch: bigint; refs: readonly string[]; committer?: { signaturePublicKey: Uint8Array; identity: Uint8Array } },
  ): CheckedCommit {
    const { content } = commit;
    if (!sameBytes(content.groupId, this.#groupId)) throw new Error('a commit for another group');
    if (content.epoch !== expected.epoch) throw new Error(`a commit for epoch ${content.epoch}, not ${expected.epoch}`);
    if (content.contentType !== 'commit') throw new Error('not a commit');
    if (content.sender.senderType !== 'member') throw new Error('not from a member');
    const refs = content.commit.proposals.map((proposal) => {
      if (proposal.proposalOrRefType !== 'reference') throw new Error('a proposal by value');
      return Buffer.from(proposal.reference).toString('hex');
    });
    const path = content.commit.path;
    if (path && expected.committer) {
      const leaf = path.leafNode;
      const credential = leaf.credential;
      if (
        !sameBytes(leaf.signaturePublicKey, expected.committer.signaturePublicKey) ||
        credential.credentialType !== 'basic' ||
        !sameBytes(credential.identity, expected.committer.identity)
      ) {
        throw new Error("it changes the committer's credential or signature key");
      }
    }
    const want = new Set(expected.refs);
    if (refs.length === 0) throw new Error('it references no proposal');
    if (new Set(refs).size !== refs.length || refs.length !== want.size || refs.some((ref) => !want.has(ref))) {
      throw new Error('it does not reference exactly the proposals of the epoch');
    }
    return { committerLeaf: content.sender.leafIndex, refs };
  }

  /** Op 30's Welcome: only the group secrets for this member's key package. */
  async welcomeFor(welcome: Welcome, keyPackage: KeyPackage): Promise<Buffer> {
    const ref = Buffer.from(await makeKeyPackageRef(keyPackage, this.#cs.hash));
    const secrets = welcome.secrets.filter((secret) => Buffer.from(secret.newMember).equals(ref));
    if (secrets.length !== 1) throw new Error('the Welcome has no group secrets for this key package');
    return Buffer.from(encodeWelcome({ ...welcome, secrets }));
  }
}

/**
 * The gateway's view of the group: its epoch and which user sits in which leaf (Remove names a leaf). A
 * winning commit's proposals apply as RFC 9420 12.3 orders them: removes blank their leaves, then adds
 * take the leftmost blank leaf or extend the tree.
 */
export class GroupView {
  epoch = 0n;
  leaves: (string | undefined)[] = [];

  leafOf(userId: string): number | undefined {
    const index = this.leaves.indexOf(userId);
    return index < 0 ? undefined : index;
  }

  users(): string[] {
    return this.leaves.filter((userId) => userId !== undefined);
  }

  /** The first commit of a group comes from the committer's one-member group: it is leaf 0. */
  apply(committer: string, proposals: readonly ({ kind: 'add'; userId: string } | { kind: 'remove'; leaf: number })[]): void {
    if (this.epoch === 0n) this.leaves = [committer];
    for (const proposal of proposals) if (proposal.kind === 'remove') this.leaves[proposal.leaf] = undefined;
    for (const proposal of proposals) {
      if (proposal.kind !== 'add') continue;
      const blank = this.leaves.indexOf(undefined);
      if (blank >= 0) this.leaves[blank] = proposal.userId;
      else this.leaves.push(proposal.userId);
    }
    while (this.leaves.length > 0 && this.leaves.at(-1) === undefined) this.leaves.pop();
    this.epoch += 1n;
  }
}

/** RFC 9420's external_senders extension data: ExternalSender external_senders<V>. */
function externalSendersExtension(externalSender: Buffer): { extensionType: 'external_senders'; extensionData: Uint8Array } {
  return { extensionType: 'external_senders', extensionData: new Uint8Array(vector(externalSender)) };
}

function decodeExternalSenders(data: Uint8Array): { sender: ExternalSender; bytes: Buffer }[] {
  const { body, next } = readVector(data, 0);
  if (next !== data.length) throw new Error('external_senders: bad vector length');
  const senders: { sender: ExternalSender; bytes: Buffer }[] = [];
  for (let offset = 0; offset < body.length;) {
    const decoded = decodeExternalSender(body, offset);
    if (!decoded) throw new Error('external_senders: bad ExternalSender');
    senders.push({ sender: decoded[0], bytes: body.subarray(offset, offset + decoded[1]) });
    offset += decoded[1];
  }
  return senders;
}

export type CommitOutcome = { kind: 'joined' } | { kind: 'removed' };

/**
 * A member's MLS state, as libdave's session keeps it: a pending one-member group once the external
 * sender is known, proposals appended to a copy of the pending or current state, a commit over all of
 * them, and "the commit the gateway announces wins".
 */
export class MlsMember {
  readonly userId: string;
  readonly #cs: CiphersuiteImpl;
  readonly #groupId: Buffer;
  readonly #signatureKeys = signingKeyPair();
  #externalSender: Buffer | undefined;
  #pending: ClientState | undefined;
  #current: ClientState | undefined;
  #withProposals: ClientState | undefined;
  #ownCommit: { bytes: Buffer; newState: ClientState } | undefined;
  #keyPackage: { publicPackage: KeyPackage; privatePackage: PrivateKeyPackage } | undefined;

  static async create(userId: string, channelId: string): Promise<MlsMember> {
    return new MlsMember(await daveCiphersuite(), userId, channelId);
  }

  private constructor(cs: CiphersuiteImpl, userId: string, channelId: string) {
    this.#cs = cs;
    this.userId = userId;
    this.#groupId = groupIdOf(channelId);
  }

  /** The established group's epoch (undefined while pending). */
  get epoch(): bigint | undefined {
    return this.#current?.groupContext.epoch;
  }

  get epochAuthenticator(): Buffer | undefined {
    return this.#current ? Buffer.from(this.#current.keySchedule.epochAuthenticator) : undefined;
  }

  get established(): boolean {
    return this.#current !== undefined;
  }

  get hasExternalSender(): boolean {
    return this.#externalSender !== undefined;
  }

  /** The users of the established group, leaf by leaf. */
  members(): string[] {
    const tree = this.#current?.ratchetTree ?? [];
    return tree.flatMap((node) =>
      node?.nodeType === 'leaf' && node.leaf.credential.credentialType === 'basic'
        ? [userIdFromIdentity(node.leaf.credential.identity)]
        : [],
    );
  }

  #newKeyPackage(): Promise<{ publicPackage: KeyPackage; privatePackage: PrivateKeyPackage }> {
    return generateKeyPackageWithKey(
      { credentialType: 'basic', identity: userIdBigEndian(this.userId) },
      DAVE_CAPABILITIES,
      FULL_LIFETIME,
      [],
      this.#signatureKeys,
      this.#cs,
    );
  }

  /** Op 26's payload: a new bare KeyPackage each time (whitepaper "Key Packages"). */
  async createKeyPackage(): Promise<Buffer> {
    this.#keyPackage = await this.#newKeyPackage();
    return Buffer.from(encodeKeyPackage(this.#keyPackage.publicPackage));
  }

  /** Op 25: remembers the gateway and makes the pending one-member group. */
  async setExternalSender(payload: Buffer): Promise<void> {
    const decoded = decodeExternalSender(payload, 0);
    if (!decoded || decoded[1] !== payload.length) throw new Error('op 25 is not exactly one ExternalSender');
    this.#externalSender = Buffer.from(payload);
    if (!this.#current) await this.#createPendingGroup();
  }

  /** Forgets the group (a new group is to be made, or a commit failed); keeps the external sender. */
  async reset(): Promise<void> {
    this.#current = undefined;
    this.#pending = undefined;
    this.#withProposals = undefined;
    this.#ownCommit = undefined;
    if (this.#externalSender) await this.#createPendingGroup();
  }

  async #createPendingGroup(): Promise<void> {
    const externalSender = this.#externalSender;
    if (!externalSender) return;
    const { publicPackage, privatePackage } = await this.#newKeyPackage();
    // Workaround (a): create without extensions, then put in the RFC encoding.
    const state = await createGroup(this.#groupId, publicPackage, privatePackage, [], this.#cs);
    this.#pending = { ...state, groupContext: { ...state.groupContext, extensions: [externalSendersExtension(externalSender)] } };
    this.#withProposals = undefined;
    this.#ownCommit = undefined;
  }

  #externalSenderKey(state: ClientState, senderIndex: number): Uint8Array {
    const extension = state.groupContext.extensions.find((candidate) => candidate.extensionType === 'external_senders');
    if (!extension) throw new Error('the group has no external_senders extension');
    const sender = decodeExternalSenders(extension.extensionData)[senderIndex];
    if (!sender || !this.#externalSender || !sameBytes(sender.bytes, this.#externalSender))
      throw new Error('a proposal from an unknown external sender');
    return sender.sender.signaturePublicKey;
  }

  /**
   * Op 27 (operation type and vector): appends or revokes, then commits over every cached proposal.
   * Returns op 28's payload (commit, then the Welcome if it adds anyone), or undefined with nothing to
   * commit. Without a local group, proposals are ignored.
   */
  async processProposals(operation: number, body: Buffer, recognizedUserIds: ReadonlySet<string>): Promise<Buffer | undefined> {
    const base = this.#current ?? this.#pending;
    if (!base) return undefined;
    let state = this.#withProposals ?? base;
    const { body: items, next } = readVector(body, 0);
    if (next !== body.length) throw new Error('op 27: bad vector length');
    if (operation === ProposalsOperation.Revoke) {
      const unapplied = { ...state.unappliedProposals };
      for (let offset = 0; offset < items.length;) {
        const { body: ref, next: after } = readVector(items, offset);
        const key = ref.toString('base64');
        if (!(key in unapplied)) throw new Error('a revoke of an unknown proposal');
        delete unapplied[key];
        offset = after;
      }
      state = { ...state, unappliedProposals: unapplied };
    } else if (operation === ProposalsOperation.Append) {
      for (let offset = 0; offset < items.length;) {
        const decoded = decodeMlsMessage(items, offset);
        if (!decoded) throw new Error('op 27: bad MLSMessage');
        offset += decoded[1];
        state = await this.#appendProposal(state, decoded[0], recognizedUserIds);
      }
    } else {
      throw new Error(`op 27: unknown operation ${operation}`);
    }
    this.#withProposals = state;
    if (Object.keys(state.unappliedProposals).length === 0) {
      this.#ownCommit = undefined;
      return undefined;
    }
    const { commit, welcome, newState } = await createCommit(
      { state, cipherSuite: this.#cs },
      { wireAsPublicMessage: true, ratchetTreeExtension: true },
    );
    const commitBytes = Buffer.from(encodeMlsMessage(commit));
    this.#ownCommit = { bytes: commitBytes, newState };
    return welcome ? Buffer.concat([commitBytes, encodeWelcome(welcome)]) : commitBytes;
  }

  async #appendProposal(state: ClientState, message: MLSMessage, recognizedUserIds: ReadonlySet<string>): Promise<ClientState> {
    if (message.wireformat !== 'mls_public_message') throw new Error('a proposal that is not a PublicMessage');
    const publicMessage = message.publicMessage;
    const { content } = publicMessage;
    if (content.contentType !== 'proposal' || content.sender.senderType !== 'external')
      throw new Error('not a proposal of the external sender');
    if (content.epoch !== state.groupContext.epoch)
      throw new Error(`a proposal for epoch ${content.epoch}, the group is at ${state.groupContext.epoch}`);
    const { proposal } = content;
    if (proposal.proposalType === 'add') {
      const credential = proposal.add.keyPackage.leafNode.credential;
      if (credential.credentialType !== 'basic') throw new Error('an add without a basic credential');
      const userId = userIdFromIdentity(credential.identity);
      // Whitepaper "Member Add": refuse adds for users the gateway did not announce (op 11).
      if (!recognizedUserIds.has(userId)) throw new Error(`an add for ${userId}, who is not in the call`);
    } else if (proposal.proposalType !== 'remove') {
      throw new Error(`a ${proposal.proposalType} proposal: only add and remove are allowed`);
    }
    // Workaround (b).
    const key = this.#externalSenderKey(state, content.sender.senderIndex);
    const authenticated = await unprotectPublicMessage(
      state.keySchedule.membershipKey,
      state.groupContext,
      state.ratchetTree,
      publicMessage,
      this.#cs,
      key,
    );
    return processProposal(state, authenticated, proposal, this.#cs.hash);
  }

  /** Op 29's commit: our own (the pending group becomes the group) or another member's. */
  async processCommit(commitBytes: Buffer): Promise<CommitOutcome> {
    if (this.#ownCommit?.bytes.equals(commitBytes)) {
      this.#adopt(this.#ownCommit.newState);
      return { kind: 'joined' };
    }
    // Whitepaper "Client Commit Validity": without an established group only our own commit will do.
    const current = this.#current;
    if (!current) throw new Error("another member's commit while this member has no established group");
    const decoded = decodeMlsMessage(commitBytes, 0);
    if (!decoded || decoded[1] !== commitBytes.length) throw new Error('op 29: bad MLSMessage');
    const message = decoded[0];
    if (message.wireformat !== 'mls_public_message') throw new Error('the commit is not a PublicMessage');
    const { content } = message.publicMessage;
    if (!sameBytes(content.groupId, this.#groupId)) throw new Error('a commit for another group');
    if (content.contentType !== 'commit') throw new Error('op 29 holds no commit');
    if (content.commit.proposals.some((proposal) => proposal.proposalOrRefType !== 'reference'))
      throw new Error('the commit carries a proposal by value');
    const { newState } = await processPublicMessage(this.#withProposals ?? current, message.publicMessage, emptyPskIndex, this.#cs);
    if (newState.groupActiveState.kind === 'removedFromGroup') {
      this.#current = undefined;
      this.#withProposals = undefined;
      this.#ownCommit = undefined;
      return { kind: 'removed' };
    }
    const users = newState.ratchetTree.flatMap((node) =>
      node?.nodeType === 'leaf' && node.leaf.credential.credentialType === 'basic'
        ? [userIdFromIdentity(node.leaf.credential.identity)]
        : [],
    );
    if (new Set(users).size !== users.length) throw new Error('the commit leaves a user in two leaves');
    this.#adopt(newState);
    return { kind: 'joined' };
  }

  /** Op 30's Welcome. */
  async processWelcome(welcomeBytes: Buffer): Promise<void> {
    if (this.#current) throw new Error('a Welcome while already in a group');
    const keyPackage = this.#keyPackage;
    if (!keyPackage) throw new Error('a Welcome before any key package');
    const decoded = decodeWelcome(welcomeBytes, 0);
    if (!decoded || decoded[1] !== welcomeBytes.length) throw new Error('op 30: bad Welcome');
    const state = await joinGroup(decoded[0], keyPackage.publicPackage, keyPackage.privatePackage, emptyPskIndex, this.#cs);
    // Whitepaper "External Sender": exactly one, the one op 25 announced.
    const extensions = state.groupContext.extensions.filter((extension) => extension.extensionType === 'external_senders');
    const senders = extensions.length === 1 && extensions[0] ? decodeExternalSenders(extensions[0].extensionData) : [];
    if (senders.length !== 1 || !senders[0] || !this.#externalSender || !sameBytes(senders[0].bytes, this.#externalSender)) {
      throw new Error('the group does not have exactly the external sender of op 25');
    }
    this.#adopt(state);
  }

  #adopt(state: ClientState): void {
    this.#current = state;
    this.#pending = undefined;
    this.#withProposals = undefined;
    this.#ownCommit = undefined;
  }

  /** MLS-Exporter("Discord Secure Frames v0", u64 LE user id, 16): a sender's media base secret this epoch. */
  async mediaBaseSecret(userId: string): Promise<Buffer> {
    const current = this.#current;
    if (!current) throw new Error('no established group to export media keys from');
    return Buffer.from(
      await mlsExporter(current.keySchedule.exporterSecret, MEDIA_KEY_LABEL, userIdLittleEndian(userId), MEDIA_BASE_SECRET_BYTES, this.#cs),
    );
  }
}
