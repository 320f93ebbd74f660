// The voice gateway's side of DAVE v1 (the MLS external sender / delivery service), built on ts-mls 1.6.4.
// It never holds group secrets: it signs Add/Remove proposals, checks commits' public framing, tracks the
// epoch and who sits in which leaf, and cuts each added member's share out of a Welcome.

import {
  getCiphersuiteImpl,
  getCiphersuiteFromName,
  proposeExternal,
  encodeExternalSender,
  encodeMlsMessage,
  decodeMlsMessage,
} from 'ts-mls';
import { decodeKeyPackage, verifyKeyPackage, makeKeyPackageRef } from 'ts-mls/keyPackage.js';
import { decodeWelcome, encodeWelcome } from 'ts-mls/welcome.js';
import { makeProposalRef } from 'ts-mls/authenticatedContent.js';
import { p256 } from '@noble/curves/nist.js';
import { userIdBE } from './frame.mjs';

export const CIPHERSUITE_NAME = 'MLS_128_DHKEMP256_AES128GCM_SHA256_P256';
const MAX_U64 = 2n ** 64n - 1n;

export async function dave1Ciphersuite() {
  return getCiphersuiteImpl(getCiphersuiteFromName(CIPHERSUITE_NAME));
}

/** ECDSA P-256 key pair with the public key as an uncompressed SEC1 point (65 bytes), as davey and libdave use. */
export function p256KeyPair() {
  const signKey = p256.utils.randomSecretKey();
  return { signKey, publicKey: p256.getPublicKey(signKey, false) };
}

function eq(a, b) {
  return Buffer.from(a).equals(Buffer.from(b));
}

export class DaveExternalSender {
  /** @param {{channelId: string, identity?: Uint8Array}} options */
  static async create({ channelId, identity = new Uint8Array([0x00, 0x01, 0x01, 0x00]) }) {
    const cs = await dave1Ciphersuite();
    return new DaveExternalSender(cs, BigInt(channelId), identity, p256KeyPair());
  }

  constructor(cs, channelId, identity, keys) {
    this.cs = cs;
    this.groupId = userIdBE(channelId); // group id = channel id as u64 big-endian
    this.keys = keys;
    /** RFC 9420 ExternalSender { SignaturePublicKey signature_key; Credential credential; } */
    this.externalSender = { signaturePublicKey: keys.publicKey, credential: { credentialType: 'basic', identity } };
  }

  /** op 25 payload: the TLS-serialised ExternalSender (no vector around it). */
  externalSenderPackage() {
    return Buffer.from(encodeExternalSender(this.externalSender));
  }

  /**
   * A GroupContext stand-in for ts-mls's proposeExternal(): an external sender's signature does not
   * cover the group context (RFC 9420 6.1, FramedContentTBS), only group_id, epoch and the content; ts-mls
   * reads `extensions` just to find the sender index. Note: ts-mls 1.6.4 expects that extension's data
   * to be ONE ExternalSender, not the RFC's ExternalSender<V> vector, so we give it its own format here.
   */
  #signingContext(epoch) {
    return {
      groupContext: {
        version: 'mls10',
        cipherSuite: CIPHERSUITE_NAME,
        groupId: this.groupId,
        epoch: BigInt(epoch),
        treeHash: new Uint8Array(),
        confirmedTranscriptHash: new Uint8Array(),
        extensions: [{ extensionType: 'external_senders', extensionData: encodeExternalSender(this.externalSender) }],
      },
    };
  }

  async #propose(epoch, proposal) {
    const message = await proposeExternal(
      this.#signingContext(epoch),
      proposal,
      this.keys.publicKey,
      this.keys.signKey,
      this.cs,
    );
    const bytes = Buffer.from(encodeMlsMessage(message));
    const ref = Buffer.from(
      await makeProposalRef(
        { wireformat: 'mls_public_message', content: message.publicMessage.content, auth: message.publicMessage.auth },
        this.cs.hash,
      ),
    );
    return { bytes, ref, message };
  }

  /** External Add proposal (an MLSMessage / PublicMessage, sender external index 0). */
  async proposeAdd(epoch, keyPackage) {
    return this.#propose(epoch, { proposalType: 'add', add: { keyPackage } });
  }

  /** External Remove proposal for a leaf index. */
  async proposeRemove(epoch, leafIndex) {
    return this.#propose(epoch, { proposalType: 'remove', remove: { removed: leafIndex } });
  }

  /**
   * Validate a member's op 26 key package as Discord's gateway does (protocol.md "Key Packages /
   * Validation"): basic credential = u64 BE user id, lifetime [0, 2^64-1], valid signature, DAVE v1 suite.
   * The payload is a bare KeyPackage (libdave and davey send no MLSMessage wrapper).
   */
  async validateKeyPackage(bytes, userId) {
    const decoded = decodeKeyPackage(new Uint8Array(bytes), 0);
    if (!decoded || decoded[1] !== bytes.length) throw new Error('op 26: not exactly one KeyPackage');
    const kp = decoded[0];
    if (kp.version !== 'mls10' || kp.cipherSuite !== CIPHERSUITE_NAME) throw new Error('op 26: wrong version or ciphersuite');
    const cred = kp.leafNode.credential;
    if (cred.credentialType !== 'basic' || !eq(cred.identity, userIdBE(userId))) throw new Error('op 26: credential is not this user');
    if (kp.leafNode.lifetime.notBefore !== 0n || kp.leafNode.lifetime.notAfter !== MAX_U64) throw new Error('op 26: lifetime not [0, 2^64-1]');
    if (!(await verifyKeyPackage(kp, this.cs.signature))) throw new Error('op 26: bad KeyPackage signature');
    return kp;
  }

  /** Split op 28: MLSMessage commit, then (if the commit adds members) a bare Welcome. */
  parseCommitWelcome(payload) {
    const buf = new Uint8Array(payload);
    const c = decodeMlsMessage(buf, 0);
    if (!c) throw new Error('op 28: no MLSMessage');
    const [commit, commitLen] = c;
    let welcome;
    if (commitLen < buf.length) {
      const w = decodeWelcome(buf, commitLen);
      if (!w || commitLen + w[1] !== buf.length) throw new Error('op 28: trailing bytes are not one Welcome');
      welcome = w[0];
    }
    return { commit, commitBytes: Buffer.from(buf.subarray(0, commitLen)), welcome };
  }

  /**
   * The gateway's commit checks (protocol.md "Voice Gateway Commit Validity"): a PublicMessage commit
   * from a member, for the current epoch and group, referencing exactly the unrevoked proposals, by ref.
   * Returns the committer's leaf index and the refs in commit order.
   */
  checkCommit(commit, { epoch, expectedRefs, committerLeafNode }) {
    if (commit.wireformat !== 'mls_public_message') throw new Error('commit is not a PublicMessage');
    const { content } = commit.publicMessage;
    if (!eq(content.groupId, this.groupId)) throw new Error('commit for another group');
    if (content.epoch !== BigInt(epoch)) throw new Error(`commit for epoch ${content.epoch}, expected ${epoch}`);
    if (content.contentType !== 'commit') throw new Error('not a commit');
    if (content.sender.senderType !== 'member') throw new Error('commit not from a member');
    const refs = content.commit.proposals.map((p) => {
      if (p.proposalOrRefType !== 'reference') throw new Error('commit carries a proposal by value');
      return Buffer.from(p.reference);
    });
    const path = content.commit.path;
    if (path && committerLeafNode) {
      const ln = path.leafNode;
      if (!eq(ln.signaturePublicKey, committerLeafNode.signaturePublicKey) || !eq(ln.credential.identity, committerLeafNode.credential.identity)) {
        throw new Error('commit changes the committer\'s credential or signature key');
      }
    }
    const want = new Set(expectedRefs.map((r) => Buffer.from(r).toString('hex')));
    const got = new Set(refs.map((r) => r.toString('hex')));
    if (want.size !== got.size || [...want].some((r) => !got.has(r))) throw new Error('commit does not reference exactly the pending proposals');
    return { committerLeaf: content.sender.leafIndex, refs };
  }

  /** op 30's Welcome: only the EncryptedGroupSecrets for this member's KeyPackage (protocol.md op 30). */
  async welcomeFor(welcome, keyPackage) {
    const ref = Buffer.from(await makeKeyPackageRef(keyPackage, this.cs.hash));
    const secrets = welcome.secrets.filter((s) => Buffer.from(s.newMember).equals(ref));
    if (secrets.length !== 1) throw new Error('welcome has no secrets for this key package');
    return Buffer.from(encodeWelcome({ ...welcome, secrets }));
  }
}

/**
 * The gateway's view of the group: the epoch and which user sits in which leaf. It applies a winning
 * commit's proposals the way RFC 9420 12.3 does: removes blank their leaf, adds take the leftmost blank
 * leaf or extend the tree, removes before adds.
 */
export class GroupView {
  epoch = 0;
  leaves = [];

  /** The first commit of a new group comes from the committer's own one-member group at epoch 0. */
  static pending() {
    return new GroupView();
  }

  leafOf(userId) {
    const i = this.leaves.indexOf(userId);
    if (i < 0) throw new Error(`${userId} is not in the group`);
    return i;
  }

  /** @param proposals in commit order: {type: 'add', userId} | {type: 'remove', leaf} */
  applyCommit(committerUserId, proposals) {
    if (this.epoch === 0) this.leaves = [committerUserId];
    for (const p of proposals) if (p.type === 'remove') this.leaves[p.leaf] = null;
    for (const p of proposals) {
      if (p.type !== 'add') continue;
      const blank = this.leaves.indexOf(null);
      if (blank >= 0) this.leaves[blank] = p.userId;
      else this.leaves.push(p.userId);
    }
    while (this.leaves.length > 0 && this.leaves[this.leaves.length - 1] === null) this.leaves.pop();
    this.epoch += 1;
  }
}
