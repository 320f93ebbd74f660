// An in-memory voice gateway doing DAVE v1's server side (ops 25-30 plus 22/23 transitions), with two
// kinds of members behind the same byte-level interface:
//   - BotMember: @discordjs/voice 0.19.2's own DAVESession wrapper (which drives @snazzah/davey), fed
//     exactly as VoiceNetworking.onWsBinary feeds it;
//   - SimMember: the ts-mls member of ts-member.mjs.
// Every message crosses as bytes: server frames are [u16 seq][u8 op][payload], client frames [u8 op][payload].

import { DAVESession } from '@discordjs/voice';
import { DaveExternalSender, GroupView } from './external-sender.mjs';
import { TsMlsDaveMember } from './ts-member.mjs';
import { Op, ProposalsOperation, clientBinary, parseClientBinary, parseServerBinary, proposalsPayload, serverBinary, transitionPayload } from './wire.mjs';

export class BotMember {
  kind = 'bot (@discordjs/voice DAVESession -> @snazzah/davey)';
  constructor(userId, channelId) {
    this.userId = String(userId);
    this.outbox = [];
    this.connectedClients = new Set();
    this.dave = new DAVESession(1, this.userId, String(channelId), {});
    this.dave.on('keyPackage', (kp) => this.outbox.push(clientBinary(Op.DaveMlsKeyPackage, kp)));
    this.dave.on('invalidateTransition', (id) => this.outbox.push({ op: Op.DaveMlsInvalidCommitWelcome, d: { transition_id: id } }));
    this.debug = [];
    this.dave.on('debug', (m) => this.debug.push(m));
  }
  /** select_protocol_ack with dave_protocol_version 1: VoiceNetworking.createDaveSession() -> reinit(). */
  start() {
    this.dave.reinit();
  }
  /** Copy of VoiceNetworking.onWsBinary for the DAVE ops. */
  onBinary(frame) {
    const { op, payload } = parseServerBinary(frame);
    if (op === Op.DaveMlsExternalSender) this.dave.setExternalSender(payload);
    else if (op === Op.DaveMlsProposals) {
      const out = this.dave.processProposals(payload, this.connectedClients);
      if (out) this.outbox.push(clientBinary(Op.DaveMlsCommitWelcome, out));
    } else if (op === Op.DaveMlsAnnounceCommitTransition || op === Op.DaveMlsWelcome) {
      const { transitionId, success } =
        op === Op.DaveMlsWelcome ? this.dave.processWelcome(payload) : this.dave.processCommit(payload);
      if (!success) throw new Error(`bot failed op ${op}: ${this.debug.slice(-2).join(' | ')}`);
      if (transitionId !== 0) this.outbox.push({ op: Op.DaveTransitionReady, d: { transition_id: transitionId } });
    }
  }
  /** Copy of VoiceNetworking.onWsPacket for ops 21, 22 and 24 (op 23 goes back to the gateway). */
  onJson(packet) {
    if (packet.op === Op.DavePrepareTransition) {
      if (this.dave.prepareTransition(packet.d)) this.outbox.push({ op: Op.DaveTransitionReady, d: { transition_id: packet.d.transition_id } });
    } else if (packet.op === Op.DaveExecuteTransition) this.dave.executeTransition(packet.d.transition_id);
    else if (packet.op === Op.DavePrepareEpoch) this.dave.prepareEpoch(packet.d);
  }
  get epoch() {
    return this.dave.session?.epoch ?? undefined;
  }
  get epochAuthenticator() {
    return this.dave.session?.getEpochAuthenticator() ?? undefined;
  }
  members() {
    return this.dave.session.getUserIds();
  }
  encryptOpus(frame) {
    return this.dave.encrypt(frame);
  }
  decrypt(userId, frame) {
    return this.dave.decrypt(frame, String(userId));
  }
}

export class SimMember {
  kind = 'simulated (ts-mls)';
  static async create(userId, channelId) {
    const m = new SimMember();
    m.userId = String(userId);
    m.mls = await TsMlsDaveMember.create(userId, channelId);
    m.outbox = [];
    m.connectedClients = new Set();
    return m;
  }
  async start() {
    this.outbox.push(clientBinary(Op.DaveMlsKeyPackage, await this.mls.createKeyPackage()));
  }
  async onBinary(frame) {
    const { op, payload } = parseServerBinary(frame);
    if (op === Op.DaveMlsExternalSender) await this.mls.setExternalSender(payload);
    else if (op === Op.DaveMlsProposals) {
      const out = await this.mls.processProposals(payload[0], payload.subarray(1), [...this.connectedClients]);
      if (out) this.outbox.push(clientBinary(Op.DaveMlsCommitWelcome, out));
    } else if (op === Op.DaveMlsAnnounceCommitTransition || op === Op.DaveMlsWelcome) {
      const transitionId = payload.readUInt16BE(0);
      const body = payload.subarray(2);
      if (op === Op.DaveMlsWelcome) await this.mls.processWelcome(body);
      else if ((await this.mls.processCommit(body)).removed) return;
      this.outbox.push({ op: Op.DaveTransitionReady, d: { transition_id: transitionId } });
    }
  }
  async onJson(packet) {
    if (packet.op === Op.DaveExecuteTransition && this.mls.current) await this.mls.executeTransition();
    else if (packet.op === Op.DavePrepareEpoch && packet.d.epoch === 1) {
      // (Re)create the group: drop all MLS state, new pending group, new key package.
      await this.mls.reset();
      await this.start();
    }
  }
  get epoch() {
    return this.mls.epoch;
  }
  get epochAuthenticator() {
    return this.mls.epochAuthenticator;
  }
  members() {
    return this.mls.members();
  }
  encryptOpus(frame) {
    return this.mls.encryptOpus(frame);
  }
  decrypt(userId, frame) {
    return this.mls.decrypt(userId, frame);
  }
}

export class DaveGatewaySim {
  static async create(channelId) {
    const g = new DaveGatewaySim();
    g.channelId = String(channelId);
    g.es = await DaveExternalSender.create({ channelId });
    return g;
  }

  members = new Map(); // userId -> member
  keyPackages = new Map(); // userId -> decoded KeyPackage
  seq = 0;
  group = null; // GroupView once established
  /** Proposals in flight this epoch: {ref, bytes, kind, userId?, leaf?, to: Set<userId>} */
  inFlight = [];
  nextTransitionId = 1;
  pendingTransition = null; // {id, waiting: Set}
  log = [];
  /** Which member's op 28 to accept first when several committed (default: arrival order). */
  preferCommitter = null;

  /** Every binary frame both ways, for wire-dump.mjs. */
  trace = [];

  send(userId, op, payload) {
    const frame = serverBinary(++this.seq, op, payload);
    this.trace.push({ dir: 'server->client', user: userId, op, frame });
    return this.members.get(userId).onBinary(frame);
  }

  async sendJson(userId, packet) {
    this.trace.push({ dir: 'server->client', user: userId, op: packet.op, json: packet });
    await this.members.get(userId).onJson(packet);
  }

  async join(member) {
    this.members.set(member.userId, member);
    for (const m of this.members.values()) {
      for (const id of this.members.keys()) m.connectedClients.add(id); // op 11 clients_connect
    }
    await member.start(); // key package after select_protocol_ack
    await this.send(member.userId, Op.DaveMlsExternalSender, this.es.externalSenderPackage());
    await this.pump();
  }

  async leave(userId) {
    this.members.delete(userId);
    for (const m of this.members.values()) m.connectedClients.delete(userId); // op 13 client_disconnect
    const revoke = this.inFlight.filter((p) => p.kind === 'add' && p.userId === userId);
    if (revoke.length > 0) {
      this.inFlight = this.inFlight.filter((p) => !revoke.includes(p));
      const recipients = new Set(revoke.flatMap((p) => [...p.to]));
      for (const id of recipients) {
        if (this.members.has(id)) await this.send(id, Op.DaveMlsProposals, proposalsPayload(ProposalsOperation.REVOKE, revoke.map((p) => p.ref)));
      }
      this.log.push(`revoked add of ${userId}`);
    }
    const remaining = this.group ? this.group.leaves.filter((id) => id && id !== userId && this.members.has(id)) : [];
    if (this.group?.leaves.includes(userId) && remaining.length === 1) {
      // protocol.md "Sole member reset": op 24 epoch 1, then op 21 transition 0; the group is forgotten.
      this.group = null;
      this.inFlight = [];
      this.keyPackages.delete(userId);
      this.log.push(`sole member reset of ${remaining[0]}`);
      await this.sendJson(remaining[0], { op: Op.DavePrepareEpoch, d: { protocol_version: 1, epoch: 1 } });
      await this.sendJson(remaining[0], { op: Op.DavePrepareTransition, d: { protocol_version: 1, transition_id: 0 } });
    } else if (this.group?.leaves.includes(userId)) {
      const p = await this.es.proposeRemove(this.group.epoch, this.group.leafOf(userId));
      await this.#broadcastProposal({ ...p, kind: 'remove', leaf: this.group.leafOf(userId), userId });
    }
    await this.pump();
  }

  async #broadcastProposal(p) {
    const to = this.group ? this.group.leaves.filter((id) => id && this.members.has(id)) : [];
    const entry = { ...p, to: new Set(to) };
    this.inFlight.push(entry);
    for (const id of to) await this.send(id, Op.DaveMlsProposals, proposalsPayload(ProposalsOperation.APPEND, [p.bytes]));
  }

  async onKeyPackage(userId, bytes) {
    const kp = await this.es.validateKeyPackage(bytes, userId);
    this.keyPackages.set(userId, kp);
    if (this.group) {
      const p = await this.es.proposeAdd(this.group.epoch, kp);
      await this.#broadcastProposal({ ...p, kind: 'add', userId });
      return;
    }
    // No established group: every pending member gets Adds for every other pending member (epoch 0).
    const mine = await this.es.proposeAdd(0, kp);
    const entry = { ...mine, kind: 'add', userId, to: new Set() };
    const others = this.inFlight.filter((p) => p.kind === 'add' && p.userId !== userId);
    this.inFlight.push(entry);
    for (const id of this.members.keys()) {
      if (id === userId || !this.keyPackages.has(id)) continue;
      entry.to.add(id);
      await this.send(id, Op.DaveMlsProposals, proposalsPayload(ProposalsOperation.APPEND, [mine.bytes]));
    }
    if (others.length > 0) {
      for (const p of others) p.to.add(userId);
      await this.send(userId, Op.DaveMlsProposals, proposalsPayload(ProposalsOperation.APPEND, others.map((p) => p.bytes)));
    }
  }

  async onCommitWelcome(userId, payload) {
    const epoch = this.group ? this.group.epoch : 0;
    const { commit, commitBytes, welcome } = this.es.parseCommitWelcome(payload);
    const expected = this.inFlight.filter((p) => p.to.has(userId));
    const { committerLeaf, refs } = this.es.checkCommit(commit, {
      epoch,
      expectedRefs: expected.map((p) => p.ref),
      committerLeafNode: this.keyPackages.get(userId)?.leafNode,
    });
    if (this.group && this.group.leaves[committerLeaf] !== userId) throw new Error('committer leaf does not match sender');
    if (!this.group && committerLeaf !== 0) throw new Error('first commit must come from leaf 0');
    const byRef = new Map(expected.map((p) => [p.ref.toString('hex'), p]));
    const ordered = refs.map((r) => byRef.get(r.toString('hex')));
    const view = this.group ?? GroupView.pending();
    const before = new Set(this.group ? view.leaves.filter(Boolean) : [userId]);
    view.applyCommit(userId, ordered.map((p) => (p.kind === 'add' ? { type: 'add', userId: p.userId } : { type: 'remove', leaf: p.leaf })));
    this.group = view;
    this.inFlight = [];
    const transitionId = this.nextTransitionId++;
    this.pendingTransition = { id: transitionId, waiting: new Set() };
    this.log.push(`epoch ${view.epoch}: commit from ${userId} (${ordered.map((p) => `${p.kind} ${p.userId}`).join(', ')}), transition ${transitionId}, leaves [${view.leaves.join(', ')}]`);
    // op 29 to everyone who was in the group (the removed see their removal), op 30 to the added.
    for (const id of before) {
      if (!this.members.has(id)) continue;
      if (view.leaves.includes(id)) this.pendingTransition.waiting.add(id);
      await this.send(id, Op.DaveMlsAnnounceCommitTransition, transitionPayload(transitionId, commitBytes));
    }
    for (const p of ordered) {
      if (p.kind !== 'add' || !this.members.has(p.userId)) continue;
      const w = await this.es.welcomeFor(welcome, this.keyPackages.get(p.userId));
      this.pendingTransition.waiting.add(p.userId);
      await this.send(p.userId, Op.DaveMlsWelcome, transitionPayload(transitionId, w));
    }
  }

  async onReady(userId, transitionId) {
    const t = this.pendingTransition;
    if (!t || t.id !== transitionId) return;
    t.waiting.delete(userId);
    if (t.waiting.size === 0) {
      this.pendingTransition = null;
      for (const id of this.group.leaves) {
        if (id && this.members.has(id)) await this.sendJson(id, { op: Op.DaveExecuteTransition, d: { transition_id: transitionId } });
      }
      this.log.push(`transition ${transitionId} executed`);
    }
  }

  /** Deliver everything the members queued, commits in arrival order (or preferCommitter first). */
  async pump() {
    for (let guard = 0; guard < 100; guard++) {
      const queue = [];
      for (const m of this.members.values()) {
        while (m.outbox.length) queue.push([m.userId, m.outbox.shift()]);
      }
      if (queue.length === 0) return;
      if (this.preferCommitter) {
        queue.sort(([a], [b]) => (a === this.preferCommitter ? -1 : 0) - (b === this.preferCommitter ? -1 : 0));
      }
      for (const [userId, msg] of queue) {
        this.trace.push(Buffer.isBuffer(msg) ? { dir: 'client->server', user: userId, op: msg[0], frame: msg } : { dir: 'client->server', user: userId, op: msg.op, json: msg });
        if (Buffer.isBuffer(msg)) {
          const { op, payload } = parseClientBinary(msg);
          if (op === Op.DaveMlsKeyPackage) await this.onKeyPackage(userId, payload);
          else if (op === Op.DaveMlsCommitWelcome) {
            // "The voice gateway broadcasts the first commit it receives for a given epoch."
            const epoch = this.group ? this.group.epoch : 0;
            const commitEpoch = Number(this.es.parseCommitWelcome(payload).commit.publicMessage.content.epoch);
            if (commitEpoch !== epoch) {
              this.log.push(`dropped losing commit from ${userId} (epoch ${commitEpoch}, group is at ${epoch})`);
              continue;
            }
            await this.onCommitWelcome(userId, payload);
          }
        } else if (msg.op === Op.DaveTransitionReady) await this.onReady(userId, msg.d.transition_id);
        else if (msg.op === Op.DaveMlsInvalidCommitWelcome) throw new Error(`${userId} flagged an invalid commit/welcome`);
      }
    }
    throw new Error('pump did not settle');
  }
}
