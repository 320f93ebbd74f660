// Proof: a DAVE v1 voice-gateway (MLS external sender) written with ts-mls, driving
//   - the bot's real client stack (@discordjs/voice 0.19.2 DAVESession -> @snazzah/davey 0.1.12), and
//   - simulated members written with ts-mls 1.6.4,
// through group creation (either side committing), a join, a revoked add, a removal, and Opus frames both
// ways in every epoch. Prints one line per check and "N passed, N failed" at the end.
//
// Run: PATH=~/.node22/node_modules/.bin:$PATH node proof.mjs   (Node >= 22.12)

import { DaveGatewaySim, BotMember, SimMember } from './lib/gateway-sim.mjs';

let passed = 0;
let failed = 0;
function check(name, fn) {
  try {
    const detail = fn();
    passed++;
    console.log(`ok   ${name}${detail ? ` (${detail})` : ''}`);
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}: ${error?.stack ?? error}`);
  }
}
async function checkAsync(name, fn) {
  try {
    const detail = await fn();
    passed++;
    console.log(`ok   ${name}${detail ? ` (${detail})` : ''}`);
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}: ${error?.stack ?? error}`);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

// Realistic snowflakes (> 2^53, so u64 handling is exercised).
const CHANNEL = '1290000000000000001';
const BOT = '1290000000000000100';
const ALICE = '1290000000000000201';
const BOB = '1290000000000000202';
const CAROL = '1290000000000000203';

/** A fake Opus packet (TOC byte + payload); DAVE treats Opus as opaque and encrypts all of it. */
function opusLike(tag) {
  return Buffer.concat([Buffer.from([0xfc]), Buffer.from(`opus frame ${tag} `.repeat(4))]);
}

function sameEpoch(g, label) {
  const live = [...g.members.values()].filter((m) => g.group.leaves.includes(m.userId));
  const epochs = live.map((m) => BigInt(m.epoch));
  const auths = live.map((m) => Buffer.from(m.epochAuthenticator).toString('hex'));
  check(`${label}: all members at epoch ${g.group.epoch} with one epoch authenticator`, () => {
    assert(epochs.every((e) => e === BigInt(g.group.epoch)), `epochs ${epochs.join(',')} vs gateway ${g.group.epoch}`);
    assert(new Set(auths).size === 1, `authenticators differ: ${auths.join(' ')}`);
    return `${auths[0].slice(0, 16)}…`;
  });
  check(`${label}: every member sees the roster the gateway tracks`, () => {
    const want = g.group.leaves.filter(Boolean).sort().join(',');
    for (const m of live) {
      const got = [...m.members()].sort().join(',');
      assert(got === want, `${m.userId} sees ${got}, gateway ${want}`);
    }
    return want;
  });
}

function framesBothWays(g, label) {
  const live = [...g.members.values()].filter((m) => g.group.leaves.includes(m.userId));
  for (const sender of live) {
    const plain = opusLike(`${label} from ${sender.userId}`);
    const frame = sender.encryptOpus(plain);
    check(`${label}: frame from ${sender.kind} ${sender.userId} is a DAVE frame`, () => {
      assert(!frame.equals(plain), 'frame was not encrypted (passthrough)');
      assert(frame.subarray(-2).toString('hex') === 'fafa', 'no 0xFAFA marker');
      return `${plain.length} -> ${frame.length} bytes, suppl ${frame[frame.length - 3]}`;
    });
    for (const receiver of live) {
      if (receiver === sender) continue;
      check(`${label}: ${receiver.kind} ${receiver.userId} decrypts it`, () => {
        const out = receiver.decrypt(sender.userId, frame);
        assert(out && Buffer.from(out).equals(plain), 'plaintext mismatch or null');
      });
    }
  }
}

async function scenario(name, preferSimCommit) {
  console.log(`\n== ${name}`);
  const g = await DaveGatewaySim.create(CHANNEL);
  const bot = new BotMember(BOT, CHANNEL);
  const alice = await SimMember.create(ALICE, CHANNEL);
  if (preferSimCommit) g.preferCommitter = ALICE;
  await checkAsync('bot joins: key package (op 26) accepted, external sender (op 25) set', async () => {
    await g.join(bot);
    return `ES package ${g.es.externalSenderPackage().length} bytes`;
  });
  await checkAsync('simulated Alice joins: both commit their pending groups, the gateway picks one', async () => {
    await g.join(alice);
    return g.log.filter((l) => l.startsWith('epoch') || l.startsWith('dropped')).join('; ');
  });
  check('group established at epoch 1 with the winner as leaf 0', () => {
    assert(g.group?.epoch === 1, `gateway epoch ${g.group?.epoch}`);
    assert(g.group.leaves[0] === (preferSimCommit ? ALICE : BOT), `leaves ${g.group.leaves}`);
    return `leaves [${g.group.leaves.join(', ')}]`;
  });
  sameEpoch(g, 'epoch 1');
  framesBothWays(g, 'epoch 1');
  return { g, bot, alice };
}

const s1 = await scenario('S1: bot (davey) commits the new group, ts-mls member is welcomed', false);
await scenario('S2: ts-mls member commits the new group, bot (davey) is welcomed', true);

console.log('\n== S3: join, revoke, remove on the S1 group');
const { g } = s1;
const bob = await SimMember.create(BOB, CHANNEL);
g.preferCommitter = ALICE; // the ts-mls member's commit wins: davey must process a foreign ts-mls commit
await checkAsync('Bob (ts-mls) joins at epoch 1: Alice\'s ts-mls commit wins, bot processes it, Bob is welcomed', async () => {
  await g.join(bob);
  return g.log.slice(-3).join('; ');
});
sameEpoch(g, 'epoch 2');
framesBothWays(g, 'epoch 2');

const carol = await SimMember.create(CAROL, CHANNEL);
await checkAsync('Carol joins and leaves before any commit: her Add is revoked by ref (op 27 revoke), nobody commits', async () => {
  g.preferCommitter = null;
  const pump = g.pump;
  g.pump = async () => {}; // hold deliveries so the gateway takes no commit for Add(Carol)
  await g.join(carol);
  await g.onKeyPackage(CAROL, carol.outbox.shift().subarray(1)); // Add(Carol) at epoch 2 to bot, Alice, Bob
  const committers = [...g.members.values()].filter((m) => m.outbox.some((f) => Buffer.isBuffer(f) && f[0] === 28)).length;
  for (const m of g.members.values()) m.outbox.length = 0; // those commits never reach the gateway
  await g.leave(CAROL); // op 27 revoke with the ref the ts-mls gateway computed
  g.pump = pump;
  assert(committers === 3, `${committers} members committed Add(Carol), expected 3`);
  assert([...g.members.values()].every((m) => m.outbox.length === 0), 'a member still sent a commit after the revoke');
  assert(g.group.epoch === 2, `epoch moved to ${g.group.epoch}`);
  return `3 commits for Add(Carol) discarded; after the revoke none; epoch stays ${g.group.epoch}`;
});

g.preferCommitter = BOT; // davey's commit (with an UpdatePath, as removes require) wins
await checkAsync('Alice leaves at epoch 2: Remove(leaf) proposed, bot\'s commit wins, Bob (ts-mls) processes it', async () => {
  await g.leave(ALICE);
  return g.log.slice(-2).join('; ');
});
sameEpoch(g, 'epoch 3');
framesBothWays(g, 'epoch 3');

check('removed Alice cannot decrypt epoch-3 media', () => {
  const frame = s1.bot.encryptOpus(opusLike('after removal'));
  try {
    s1.alice.decrypt(BOT, frame);
  } catch (error) {
    return `${error.message}`;
  }
  throw new Error('Alice decrypted a frame of an epoch she is not in');
});

console.log('\n== S4: sole member reset (op 24 epoch 1 + op 21 transition 0), then a new group');
const DAN = '1290000000000000204';
await checkAsync('Bob leaves: the bot, alone, gets op 24 {epoch: 1} and op 21 {transition_id: 0} and sends a new key package', async () => {
  const before = g.trace.length;
  await g.leave(BOB);
  const kp = g.trace.slice(before).find((t) => t.dir === 'client->server' && t.user === BOT && t.op === 26);
  assert(kp, 'no new key package from the bot');
  assert(g.group === null, 'gateway kept the old group');
  return `bot status ${s1.bot.dave.session.status} (1 = pending), ${g.log.at(-1)}`;
});
const dan = await SimMember.create(DAN, CHANNEL);
await checkAsync('Dan (ts-mls) joins: a new group is created at epoch 1', async () => {
  g.preferCommitter = DAN;
  await g.join(dan);
  assert(g.group?.epoch === 1, `gateway epoch ${g.group?.epoch}`);
  return g.log.filter((l) => l.startsWith('epoch 1')).at(-1);
});
sameEpoch(g, 're-created epoch 1');
framesBothWays(g, 're-created epoch 1');

console.log('\n== S5: a ts-mls commit with an UpdatePath (a removal) processed by the bot');
const ERIN = '1290000000000000205';
g.preferCommitter = DAN;
await checkAsync('Erin (ts-mls) joins via Dan\'s commit', async () => {
  await g.join(await SimMember.create(ERIN, CHANNEL));
  return g.log.filter((l) => l.startsWith('epoch')).at(-1);
});
await checkAsync('Erin leaves: Dan\'s (ts-mls) remove commit, which carries an UpdatePath, wins; the bot processes it', async () => {
  await g.leave(ERIN);
  const commit = g.trace.filter((t) => t.op === 29).at(-1);
  const { commit: c } = g.es.parseCommitWelcome(commit.frame.subarray(5));
  assert(c.publicMessage.content.commit.path, 'commit has no UpdatePath');
  assert(g.log.filter((l) => l.startsWith('epoch')).at(-1).includes(`commit from ${DAN}`), 'Dan did not win');
  return `${g.log.filter((l) => l.startsWith('epoch')).at(-1)}; path with ${c.publicMessage.content.commit.path.nodes.length} node(s)`;
});
sameEpoch(g, 'epoch 3 after ts-mls remove');
framesBothWays(g, 'epoch 3 after ts-mls remove');

check('300 frames each way, some out of order (nonces past 127 take 2 ULEB128 bytes)', () => {
  const botM = s1.bot;
  const danM = g.members.get(DAN);
  let sizes = new Set();
  for (const [from, to] of [[botM, danM], [danM, botM]]) {
    const frames = [];
    for (let i = 0; i < 300; i++) frames.push([i, from.encryptOpus(opusLike(`#${i}`))]);
    // swap neighbours every 10 frames to deliver a little out of order
    for (let i = 0; i + 1 < frames.length; i += 10) [frames[i], frames[i + 1]] = [frames[i + 1], frames[i]];
    for (const [i, f] of frames) {
      sizes.add(f[f.length - 3]);
      const out = to.decrypt(from.userId, f);
      assert(out && Buffer.from(out).equals(opusLike(`#${i}`)), `frame ${i} from ${from.userId} failed`);
    }
  }
  return `supplemental sizes seen: ${[...sizes].sort().join(', ')}`;
});

console.log(`\n${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
