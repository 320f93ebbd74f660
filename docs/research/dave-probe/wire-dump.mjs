// Prints the first frame of each DAVE op seen in a small run (bot + two ts-mls members, one join, one
// removal), with the leading fields decoded, to pin down the byte layout of ops 25-30 as exchanged with
// @discordjs/voice 0.19.2 / @snazzah/davey 0.1.12.
//
// Run: PATH=~/.node22/node_modules/.bin:$PATH node wire-dump.mjs

import { DaveGatewaySim, BotMember, SimMember } from './lib/gateway-sim.mjs';
import { decodeVarint } from './lib/wire.mjs';

const CHANNEL = '1290000000000000001';
const g = await DaveGatewaySim.create(CHANNEL);
await g.join(new BotMember('1290000000000000100', CHANNEL));
await g.join(await SimMember.create('1290000000000000201', CHANNEL));
g.preferCommitter = '1290000000000000201';
await g.join(await SimMember.create('1290000000000000202', CHANNEL));
g.preferCommitter = '1290000000000000100';
await g.leave('1290000000000000201');

const hex = (b) => Buffer.from(b).toString('hex');
class R {
  constructor(buf, at = 0) {
    this.b = buf;
    this.p = at;
    this.out = [];
  }
  take(n, name) {
    this.out.push(`${name}=${hex(this.b.subarray(this.p, this.p + n))}`);
    this.p += n;
    return this.b.subarray(this.p - n, this.p);
  }
  vec(name, show = 8) {
    const [len, n] = decodeVarint(this.b, this.p);
    const body = this.b.subarray(this.p + n, this.p + n + len);
    this.out.push(`${name}<V len ${len}>=${hex(body.subarray(0, show))}${len > show ? '…' : ''}`);
    this.p += n + len;
    return body;
  }
  vecHeader(name) {
    const [len, n] = decodeVarint(this.b, this.p);
    this.out.push(`${name}<V len ${len}>`);
    this.p += n;
    return len;
  }
  /** MLSMessage header + FramedContent header of a PublicMessage. */
  publicMessageHead() {
    this.take(2, 'mls_version');
    this.take(2, 'wire_format');
    this.vec('group_id');
    this.take(8, 'epoch');
    const st = this.take(1, 'sender_type')[0];
    this.take(4, st === 1 ? 'leaf_index' : 'sender_index');
    this.vec('authenticated_data');
    const ct = this.take(1, 'content_type')[0];
    if (ct === 2) this.take(2, 'proposal_type');
    if (ct === 3) {
      this.vecHeader('proposals');
      this.take(1, 'proposal_or_ref_type');
      this.vec('reference');
    }
  }
  welcomeHead() {
    this.take(2, 'cipher_suite');
    this.vecHeader('secrets');
    this.vec('new_member(KeyPackageRef)');
  }
  toString() {
    return this.out.join(' ');
  }
}

const seen = new Set();
for (const t of g.trace) {
  const key = `${t.dir} ${t.op}${t.json ? ' json' : ''}`;
  if (seen.has(key)) continue;
  seen.add(key);
  if (t.json) {
    console.log(`\n${t.dir} op ${t.op} (JSON): ${JSON.stringify(t.json)}`);
    continue;
  }
  const f = t.frame;
  const server = t.dir === 'server->client';
  const r = new R(f);
  if (server) r.take(2, 'seq');
  r.take(1, 'op');
  switch (t.op) {
    case 25:
      r.vec('signature_key(SEC1)');
      r.take(2, 'credential_type');
      r.vec('identity');
      break;
    case 26:
      r.take(2, 'mls_version');
      r.take(2, 'cipher_suite');
      r.vec('init_key');
      r.vec('encryption_key');
      r.vec('signature_key');
      r.take(2, 'credential_type');
      r.vec('identity(u64 BE user id)');
      break;
    case 27: {
      const opType = r.take(1, 'operation_type')[0];
      r.vecHeader(opType === 0 ? 'proposal_messages' : 'proposal_refs');
      if (opType === 0) r.publicMessageHead();
      else r.vec('ref', 32);
      break;
    }
    case 28:
      r.publicMessageHead();
      break;
    case 29:
      r.take(2, 'transition_id');
      r.publicMessageHead();
      break;
    case 30:
      r.take(2, 'transition_id');
      r.welcomeHead();
      break;
  }
  console.log(`\n${t.dir} op ${t.op} (${f.length} bytes, ${server ? 'to' : 'from'} ${t.user}):\n  ${r}`);
}
// Also show an op 28 that carries a Welcome, and where the Welcome starts.
const cw = g.trace.find((t) => t.dir === 'client->server' && t.op === 28 && g.es.parseCommitWelcome(t.frame.subarray(1)).welcome);
if (cw) {
  const { commitBytes } = g.es.parseCommitWelcome(cw.frame.subarray(1));
  const r = new R(cw.frame, 1 + commitBytes.length);
  r.welcomeHead();
  console.log(`\nop 28 with a Welcome: commit MLSMessage is bytes 1..${commitBytes.length}, then a bare Welcome:\n  ${r}`);
}
const revoke = g.trace.find((t) => t.op === 27 && t.frame && t.frame[3] === 1);
if (!revoke) console.log('\n(no revoke in this run; proof.mjs S3 sends one)');
