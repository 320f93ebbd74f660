// A DAVE v1 group member built on ts-mls 1.6.4 (the simulated participants' side), following the member
// behaviour in protocol.md and libdave's mls/session.cpp: a pending one-member group per member as soon
// as the external sender is known, proposals appended to a copy of the (pending or current) state, a
// commit over all of them, and "whichever commit the gateway announces wins".

import {
  createGroup,
  createCommit,
  joinGroup,
  processPublicMessage,
  generateKeyPackageWithKey,
  decodeExternalSender,
  encodeExternalSender,
  encodeMlsMessage,
  decodeMlsMessage,
  mlsExporter,
  emptyPskIndex,
} from 'ts-mls';
import { encodeKeyPackage } from 'ts-mls/keyPackage.js';
import { decodeWelcome, encodeWelcome } from 'ts-mls/welcome.js';
import { unprotectPublicMessage } from 'ts-mls/messageProtectionPublic.js';
import { processProposal } from 'ts-mls/clientState.js';
import { decodeVarint, vec, ProposalsOperation } from './wire.mjs';
import { CIPHERSUITE_NAME, dave1Ciphersuite, p256KeyPair } from './external-sender.mjs';
import { FrameEncryptor, HashRatchet, USER_MEDIA_KEY_BASE_LABEL, decryptFrame, userIdBE, userIdLE } from './frame.mjs';

const DAVE1_CAPABILITIES = {
  versions: ['mls10'],
  ciphersuites: [CIPHERSUITE_NAME],
  extensions: [],
  proposals: [],
  credentials: ['basic'],
};
const FULL_LIFETIME = { notBefore: 0n, notAfter: 2n ** 64n - 1n };

function eq(a, b) {
  return Buffer.from(a).equals(Buffer.from(b));
}

/** RFC 9420 external_senders extension data: ExternalSender external_senders<V>. */
function externalSendersExtension(externalSenderBytes) {
  return { extensionType: 'external_senders', extensionData: new Uint8Array(vec(externalSenderBytes)) };
}

/** Decode the RFC form (a vector) of the external_senders extension data. */
function decodeExternalSenders(data) {
  const buf = Buffer.from(data);
  const [len, n] = decodeVarint(buf, 0);
  if (n + len !== buf.length) throw new Error('external_senders: bad vector length');
  const out = [];
  let p = n;
  while (p < buf.length) {
    const d = decodeExternalSender(new Uint8Array(buf), p);
    if (!d) throw new Error('external_senders: bad ExternalSender');
    out.push({ sender: d[0], bytes: buf.subarray(p, p + d[1]) });
    p += d[1]; // ts-mls decoders return [value, bytes consumed]
  }
  return out;
}

export class TsMlsDaveMember {
  static async create(userId, channelId) {
    return new TsMlsDaveMember(await dave1Ciphersuite(), String(userId), BigInt(channelId));
  }

  constructor(cs, userId, channelId) {
    this.cs = cs;
    this.userId = userId;
    this.groupId = userIdBE(channelId);
    this.signatureKeys = p256KeyPair();
    this.externalSenderBytes = undefined;
    this.externalSender = undefined;
    this.pending = undefined; // our one-member group at epoch 0
    this.current = undefined; // the established group
    this.withProposals = undefined; // pending/current + appended proposals
    this.ourCommit = undefined; // { bytes, newState }
    this.keyPackage = undefined;
    this.keyPackagePrivate = undefined;
    this.leafKeyPackage = undefined; // for the pending group's own leaf
    this.encryptor = undefined;
    /** Receive ratchets per epoch, newest first: {epoch, byUser: Map<userId, HashRatchet>}. */
    this.receive = [];
  }

  get epoch() {
    return this.current?.groupContext.epoch;
  }

  get epochAuthenticator() {
    return this.current ? Buffer.from(this.current.keySchedule.epochAuthenticator) : undefined;
  }

  async #newKeyPackage() {
    return generateKeyPackageWithKey(
      { credentialType: 'basic', identity: userIdBE(this.userId) },
      DAVE1_CAPABILITIES,
      FULL_LIFETIME,
      [],
      this.signatureKeys,
      this.cs,
    );
  }

  /** op 26 payload: a bare KeyPackage, a new one each time (protocol.md "Key Packages"). */
  async createKeyPackage() {
    const { publicPackage, privatePackage } = await this.#newKeyPackage();
    this.keyPackage = publicPackage;
    this.keyPackagePrivate = privatePackage;
    return Buffer.from(encodeKeyPackage(publicPackage));
  }

  /** op 25. Creates the pending group once both the external sender and our leaf exist. */
  async setExternalSender(payload) {
    if (this.current) throw new Error('external sender after joining a group');
    const d = decodeExternalSender(new Uint8Array(payload), 0);
    if (!d || d[1] !== payload.length) throw new Error('op 25: not exactly one ExternalSender');
    this.externalSender = d[0];
    this.externalSenderBytes = Buffer.from(payload);
    await this.#createPendingGroup();
  }

  /** op 24 with epoch 1 (group re-creation) or a reported invalid commit/welcome: forget the group. */
  async reset() {
    this.current = undefined;
    this.receive = [];
    this.encryptor = undefined;
    if (this.externalSenderBytes) await this.#createPendingGroup();
  }

  async #createPendingGroup() {
    const { publicPackage, privatePackage } = await this.#newKeyPackage();
    // ts-mls 1.6.4's createGroup() validates external_senders as ONE ExternalSender, but the RFC (and
    // openmls, mlspp) encode a vector. The extension only enters the group context (hashed into the next
    // epoch), not epoch 0's secrets, so create without it and put the RFC encoding in afterwards.
    const state = await createGroup(this.groupId, publicPackage, privatePackage, [], this.cs);
    this.pending = {
      ...state,
      groupContext: { ...state.groupContext, extensions: [externalSendersExtension(this.externalSenderBytes)] },
    };
    this.withProposals = undefined;
    this.ourCommit = undefined;
  }

  #externalSenderKeyFor(state, senderIndex) {
    const ext = state.groupContext.extensions.find((e) => e.extensionType === 'external_senders');
    if (!ext) throw new Error('group has no external_senders extension');
    const senders = decodeExternalSenders(ext.extensionData);
    const s = senders[senderIndex];
    if (!s || !eq(s.bytes, this.externalSenderBytes)) throw new Error('proposal from an unknown external sender');
    return s.sender.signaturePublicKey;
  }

  /**
   * op 27 (without the u8 operation type, passed separately). Returns the op 28 payload
   * (commit MLSMessage || Welcome) or undefined when nothing is left to commit.
   */
  async processProposals(operation, body, recognizedUserIds) {
    const base = this.current ?? this.pending;
    if (!base) return undefined; // "proposals are ignored" without a local group
    let state = this.withProposals ?? base;
    const [len, n] = decodeVarint(body, 0);
    if (n + len !== body.length) throw new Error('op 27: bad vector length');
    const items = body.subarray(n);
    if (operation === ProposalsOperation.REVOKE) {
      const refs = [];
      for (let p = 0; p < items.length; ) {
        const [l, m] = decodeVarint(items, p);
        refs.push(items.subarray(p + m, p + m + l).toString('base64'));
        p += m + l;
      }
      const unapplied = { ...state.unappliedProposals };
      for (const ref of refs) {
        if (!(ref in unapplied)) throw new Error('revoke of an unknown proposal');
        delete unapplied[ref];
      }
      state = { ...state, unappliedProposals: unapplied };
    } else {
      for (let p = 0; p < items.length; ) {
        const d = decodeMlsMessage(new Uint8Array(items), p);
        if (!d) throw new Error('op 27: bad MLSMessage');
        p += d[1];
        const msg = d[0];
        if (msg.wireformat !== 'mls_public_message') throw new Error('proposal is not a PublicMessage');
        const pm = msg.publicMessage;
        const c = pm.content;
        if (c.contentType !== 'proposal' || pm.senderType !== 'external') throw new Error('not an external proposal');
        if (c.epoch !== state.groupContext.epoch) throw new Error('proposal for another epoch');
        if (c.proposal.proposalType === 'add') {
          const id = Buffer.from(c.proposal.add.keyPackage.leafNode.credential.identity).readBigUInt64BE().toString();
          if (recognizedUserIds && !recognizedUserIds.includes(id)) throw new Error(`add for unrecognized user ${id}`);
        } else if (c.proposal.proposalType !== 'remove') throw new Error('only add and remove are allowed');
        // ts-mls 1.6.4 would look the signer up in external_senders with its one-sender decoding; verify
        // against the sender we decode ourselves instead (unprotectPublicMessage's override key).
        const key = this.#externalSenderKeyFor(state, c.sender.senderIndex);
        const content = await unprotectPublicMessage(state.keySchedule.membershipKey, state.groupContext, state.ratchetTree, pm, this.cs, key);
        state = await processProposal(state, content, c.proposal, this.cs.hash);
      }
    }
    this.withProposals = state;
    if (Object.keys(state.unappliedProposals).length === 0) {
      this.ourCommit = undefined;
      return undefined;
    }
    const { commit, welcome, newState } = await createCommit(
      { state, cipherSuite: this.cs },
      { wireAsPublicMessage: true, ratchetTreeExtension: true },
    );
    const commitBytes = Buffer.from(encodeMlsMessage(commit));
    this.ourCommit = { bytes: commitBytes, newState };
    return welcome ? Buffer.concat([commitBytes, Buffer.from(encodeWelcome(welcome))]) : commitBytes;
  }

  /** op 29 body (after the u16 transition id): the winning commit. */
  async processCommit(commitBytes) {
    if (this.ourCommit && eq(this.ourCommit.bytes, commitBytes)) {
      await this.#replace(this.ourCommit.newState);
      return { own: true };
    }
    if (!this.current) throw new Error('foreign commit while we have no established group');
    const d = decodeMlsMessage(new Uint8Array(commitBytes), 0);
    if (!d || d[1] !== commitBytes.length) throw new Error('op 29: bad MLSMessage');
    const msg = d[0];
    if (msg.wireformat !== 'mls_public_message') throw new Error('commit is not a PublicMessage');
    if (!eq(msg.publicMessage.content.groupId, this.groupId)) throw new Error('commit for another group');
    for (const p of msg.publicMessage.content.commit.proposals) {
      if (p.proposalOrRefType !== 'reference') throw new Error('commit carries a proposal by value');
    }
    const { newState } = await processPublicMessage(this.withProposals ?? this.current, msg.publicMessage, emptyPskIndex, this.cs);
    if (newState.groupActiveState.kind === 'removedFromGroup') {
      this.current = undefined;
      this.withProposals = undefined;
      this.ourCommit = undefined;
      this.receive = this.receive.slice(0, 1); // keeps only the epoch it was removed from
      return { removed: true };
    }
    await this.#replace(newState);
    return { own: false };
  }

  /** op 30 body (after the u16 transition id): a bare Welcome. */
  async processWelcome(welcomeBytes) {
    if (this.current) throw new Error('welcome while already in a group');
    const d = decodeWelcome(new Uint8Array(welcomeBytes), 0);
    if (!d || d[1] !== welcomeBytes.length) throw new Error('op 30: bad Welcome');
    const state = await joinGroup(d[0], this.keyPackage, this.keyPackagePrivate, emptyPskIndex, this.cs);
    // protocol.md "External Sender": exactly one external sender, equal to the one from op 25.
    const exts = state.groupContext.extensions.filter((e) => e.extensionType === 'external_senders');
    if (exts.length !== 1) throw new Error('welcome: not one external_senders extension');
    const senders = decodeExternalSenders(exts[0].extensionData);
    if (senders.length !== 1 || !eq(senders[0].bytes, this.externalSenderBytes)) throw new Error('welcome: unexpected external sender');
    await this.#replace(state);
  }

  async #replace(state) {
    this.current = state;
    this.pending = undefined;
    this.withProposals = undefined;
    this.ourCommit = undefined;
    // protocol.md "Commit Handling": on processing a commit/welcome, receivers prepare the new epoch's
    // sender ratchets at once and keep the previous epoch's for a while (libdave: 10 s). Senders switch
    // on op 22 (executeTransition) -- though davey 0.1.12 already switches when it processes the commit.
    const byUser = new Map();
    for (const id of this.members()) byUser.set(id, new HashRatchet(await this.senderBaseSecret(id)));
    this.receive = [{ epoch: state.groupContext.epoch, byUser }, ...this.receive].slice(0, 2);
  }

  members() {
    return this.current.ratchetTree
      .filter((n) => n?.nodeType === 'leaf')
      .map((n) => Buffer.from(n.leaf.credential.identity).readBigUInt64BE().toString());
  }

  /** MLS-Exporter("Discord Secure Frames v0", u64 LE user id, 16): a sender's base secret this epoch. */
  async senderBaseSecret(userId) {
    return Buffer.from(await mlsExporter(this.current.keySchedule.exporterSecret, USER_MEDIA_KEY_BASE_LABEL, userIdLE(userId), 16, this.cs));
  }

  /** Call after each commit/welcome (the "execute transition" moment) to switch media keys. */
  async executeTransition() {
    this.encryptor = new FrameEncryptor(await this.senderBaseSecret(this.userId));
    this.receive = this.receive.slice(0, 1); // a real client would keep the old epoch ~10 s longer
  }

  encryptOpus(frame) {
    return this.encryptor.encryptOpus(frame);
  }

  decrypt(userId, frame) {
    let lastError = new Error(`no key ratchet for ${userId}`);
    for (const { byUser } of this.receive) {
      const r = byUser.get(String(userId));
      if (!r) continue;
      try {
        return decryptFrame(r, frame);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }
}
