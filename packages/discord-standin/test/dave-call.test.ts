// The stand-in's DAVE gateway (one channel's call) against the bot's own DAVE stack, @discordjs/voice's
// DAVESession wrapper over @snazzah/davey fed as the library feeds it, and against the stand-in's
// simulated members on ts-mls: groups form and change, every member agrees on the epoch, its
// authenticator and the roster, frames decrypt both ways, and each fault does what it says. No sockets
// here (voice-dave.test.ts runs the real library over the voice server).

import { afterEach, describe, expect, it } from 'vitest';
import { OPUS_SILENCE_FRAME } from '../src/audio/opus.ts';
import { TestCall } from './dave-members.ts';
import type { BotMember, SimMember } from './dave-members.ts';

const CHANNEL_ID = '1290000000000000001';
const BOT_ID = '1290000000000000100';
const ALICE = '1290000000000000201';
const BOB = '1290000000000000202';
const CAROL = '1290000000000000203';
const OPUS = Buffer.from([0xfc, 0xff, 0xfe, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]);

let test: TestCall;

afterEach(() => test?.close());

function bot(): BotMember {
  return test.bot(BOT_ID);
}

/** Everyone's view of the group: epoch, authenticator (hex) and roster. */
function views(
  theBot: BotMember,
  members: readonly SimMember[],
): { epoch: bigint | undefined; authenticator: string | undefined; roster: string[] }[] {
  return [
    { epoch: theBot.epoch, authenticator: theBot.epochAuthenticator?.toString('hex'), roster: [...theBot.userIds()].sort() },
    ...members.map(({ client }) => ({
      epoch: client.epoch,
      authenticator: client.epochAuthenticator?.toString('hex'),
      roster: client.members().sort(),
    })),
  ];
}

function expectAgreement(theBot: BotMember, members: readonly SimMember[], epoch: bigint): void {
  const all = views(theBot, members);
  const roster = [BOT_ID, ...members.map((member) => member.participant.userId)].sort();
  for (const view of all) expect(view).toEqual({ epoch, authenticator: all[0]?.authenticator, roster });
  expect(all[0]?.authenticator).toMatch(/^[0-9a-f]{64}$/);
}

/** A frame from the bot opens at the member, and one from the member at the bot. */
function expectFramesBothWays(theBot: BotMember, member: SimMember): void {
  expect(member.client.open(BOT_ID, theBot.session.encrypt(OPUS))).toEqual({ kind: 'audio', opus: OPUS });
  const sealed = member.client.protect(OPUS);
  expect(sealed?.subarray(-2)).toEqual(Buffer.from([0xfa, 0xfa]));
  expect(theBot.session.decrypt(sealed!, member.participant.userId)).toEqual(OPUS);
}

/** Resolves once the call is at rest with the bot and every member sending in `epoch`. */
function atEpoch(theBot: BotMember, members: readonly SimMember[], epoch: bigint): Promise<true> {
  return test.until(
    () =>
      test.call.settled() &&
      theBot.epoch === epoch &&
      members.every(({ client }) => client.sendingEpoch === epoch && client.epoch === epoch && !client.busy),
    `everyone at epoch ${epoch}`,
  );
}

async function bothIn(): Promise<{ theBot: BotMember; alice: SimMember }> {
  const alice = test.member(ALICE);
  test.call.connect(alice.participant);
  const theBot = bot();
  theBot.join(test.call, [ALICE]);
  await atEpoch(theBot, [alice], 1n);
  return { theBot, alice };
}

describe('a DAVE call between the bot and simulated members', () => {
  it('forms a group of the bot and a member: one commit wins, the other is dropped, and all agree', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();

    expectAgreement(theBot, [alice], 1n);
    const commits = test.call.history.filter((event) => event.type === 'commit');
    expect(commits).toHaveLength(1);
    // The loser's commit, for epoch 0, came after the winner's: dropped, never announced.
    expect(test.call.history.filter((event) => event.type === 'droppedCommit')).toEqual([
      expect.objectContaining({ reason: expect.stringContaining('epoch 0') }),
    ]);
    expect(test.call.state()).toMatchObject({
      protocolVersion: 1,
      epoch: 1n,
      pendingTransition: undefined,
      proposalsInFlight: 0,
      lastTransitionId: 1,
    });
    expectFramesBothWays(theBot, alice);
    // The wrapper sent op 23 and executed op 22: its last transition is the one announced.
    await test.until(() => theBot.session.lastTransitionId === 1, 'the bot to execute transition 1');
    expect(theBot.debug).toContain('Transition executed (v1 -> v1, id: 1)');
    // Server binary frames carry the server's sequence numbers, in order.
    expect(theBot.frames.map((frame) => frame.readUInt16BE(0))).toEqual(theBot.frames.map((_frame, index) => index + 1));
    expect(theBot.thrown).toEqual([]);
  });

  it('welcomes the bot into a group the members already have (op 30 from a ts-mls commit)', async () => {
    test = new TestCall(CHANNEL_ID);
    const alice = test.member(ALICE);
    const bob = test.member(BOB);
    test.call.connect(alice.participant);
    test.call.connect(bob.participant);
    await test.until(() => test.call.settled() && alice.client.sendingEpoch === 1n && bob.client.sendingEpoch === 1n);
    const theBot = bot();
    theBot.join(test.call, [ALICE, BOB]);
    await atEpoch(theBot, [alice, bob], 2n);

    expectAgreement(theBot, [alice, bob], 2n);
    expect(test.call.history.filter((event) => event.type === 'commit').at(-1)).toMatchObject({ adds: [BOT_ID] });
    expect(theBot.debug.some((line) => line.startsWith('MLS welcome processed'))).toBe(true);
    expectFramesBothWays(theBot, alice);
    expectFramesBothWays(theBot, bob);
  });

  it('moves everyone to a new epoch when members join and leave, and a removed member cannot follow', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    const bob = test.member(BOB);
    theBot.connected.add(BOB);
    test.call.connect(bob.participant);
    await atEpoch(theBot, [alice, bob], 2n);
    expectAgreement(theBot, [alice, bob], 2n);

    test.call.disconnect(alice.participant);
    alice.client.close();
    await atEpoch(theBot, [bob], 3n);
    expectAgreement(theBot, [bob], 3n);
    expect(test.call.history.filter((event) => event.type === 'commit').at(-1)).toMatchObject({ removes: [ALICE] });
    expectFramesBothWays(theBot, bob);
    // Alice still holds epoch 2's keys, not epoch 3's: the bot's frames are closed to her now.
    expect(alice.client.open(BOT_ID, theBot.session.encrypt(OPUS)).kind).toBe('undecryptable');
  });

  it('resets the sole member left in a group (op 24 epoch 1, op 21 transition 0) and builds a new group with the next', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    test.call.disconnect(alice.participant);
    alice.client.close();
    await test.until(
      () => test.call.history.some((event) => event.type === 'soleMemberReset') && test.call.history.at(-1)?.type === 'proposals',
    );

    expect(test.call.history.filter((event) => event.type === 'soleMemberReset')).toEqual([{ type: 'soleMemberReset', userId: BOT_ID }]);
    expect(theBot.debug).toEqual(
      expect.arrayContaining([
        'Preparing for epoch (1)',
        'Session reinitialized for protocol version 1',
        'Transition executed (v1 -> v1, id: 0)',
      ]),
    );
    expect(test.call.state()).toMatchObject({ epoch: undefined, groupMembers: [], lastTransitionId: 0 });
    // Alone, the bot has nobody to encrypt for: its session is not ready, its frames go in the clear.
    expect(theBot.session.encrypt(OPUS)).toEqual(OPUS);

    const bob = test.member(BOB);
    theBot.connected.add(BOB);
    test.call.connect(bob.participant);
    await atEpoch(theBot, [bob], 1n);
    expectAgreement(theBot, [bob], 1n);
    expectFramesBothWays(theBot, bob);
  });

  it('drops a frame sent in the clear into the encrypted call, and lets Opus silence through', async () => {
    test = new TestCall(CHANNEL_ID);
    const { alice } = await bothIn();
    expect(alice.client.open(BOT_ID, OPUS)).toEqual({ kind: 'unencrypted' });
    expect(alice.client.open(BOT_ID, OPUS_SILENCE_FRAME)).toEqual({ kind: 'audio', opus: OPUS_SILENCE_FRAME });
    expect(alice.client.protect(OPUS_SILENCE_FRAME)).toEqual(OPUS_SILENCE_FRAME);
    expect(alice.client.stats).toMatchObject({ unencrypted: 1, decrypted: 0, undecryptable: 0 });
  });

  it('keeps the group when three join at once: every pending member commits, the first valid commit wins', async () => {
    test = new TestCall(CHANNEL_ID);
    const members = [ALICE, BOB, CAROL].map((id) => test.member(id));
    const theBot = bot();
    for (const member of members) test.call.connect(member.participant);
    theBot.join(test.call, [ALICE, BOB, CAROL]);
    await test.until(() => (theBot.epoch ?? 0n) > 0n);
    const epoch = theBot.epoch ?? 0n;
    await atEpoch(theBot, members, epoch);
    // Everyone added in the first commit of the group, by whoever committed first.
    expect(epoch).toBe(1n);
    expectAgreement(theBot, members, epoch);
    for (const member of members) expectFramesBothWays(theBot, member);
  });
});

describe('faults on demand', () => {
  it('a damaged commit: the bot reports it (op 31), its leaf is removed and it is added again', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    test.faults.damageNextCommit(BOT_ID);
    const bob = test.member(BOB);
    theBot.connected.add(BOB);
    test.call.connect(bob.participant);
    await test.until(() => test.call.history.some((event) => event.type === 'invalidReport'));
    await test.until(() => test.call.settled() && theBot.epoch !== undefined && theBot.epoch > 2n);
    await atEpoch(theBot, [alice, bob], theBot.epoch ?? 0n);

    expect(test.call.history.filter((event) => event.type === 'invalidReport')).toEqual([
      { type: 'invalidReport', userId: BOT_ID, transitionId: 2 },
    ]);
    expect(theBot.debug.some((line) => line.startsWith('MLS commit errored from transition 2'))).toBe(true);
    // Removed and re-added: in one commit or two, the bot is back in the group with both members.
    expectAgreement(theBot, [alice, bob], theBot.epoch ?? 0n);
    expectFramesBothWays(theBot, alice);
    expectFramesBothWays(theBot, bob);
  });

  it('a damaged Welcome: a simulated member reports it, resets, and joins with a new key package', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    test.faults.damageNextCommit(BOB);
    const bob = test.member(BOB);
    theBot.connected.add(BOB);
    test.call.connect(bob.participant);
    await test.until(() => bob.client.stats.invalidReports === 1);
    await test.until(() => test.call.settled() && theBot.epoch !== undefined && theBot.epoch > 2n);
    await atEpoch(theBot, [alice, bob], theBot.epoch ?? 0n);

    expect(test.call.history.filter((event) => event.type === 'invalidReport')).toEqual([
      { type: 'invalidReport', userId: BOB, transitionId: 2 },
    ]);
    expectAgreement(theBot, [alice, bob], theBot.epoch ?? 0n);
    expectFramesBothWays(theBot, bob);
  });

  it('a late Welcome: the transition runs on without the member, who catches up when its Welcome comes', async () => {
    // Long enough for the members who are not held to be ready on a busy machine (at 200 ms, Alice was once
    // timed out too), short enough that waiting for Bob's Welcome is seen to time out.
    test = new TestCall(CHANNEL_ID, { transitionTimeoutMs: 1000 });
    const { theBot, alice } = await bothIn();
    const held = test.faults.holdNextWelcome(BOB);
    const bob = test.member(BOB);
    theBot.connected.add(BOB);
    test.call.connect(bob.participant);
    await held.held;
    await test.until(() => test.call.history.some((event) => event.type === 'transitionExecuted' && event.transitionId === 2));

    expect(test.call.history.find((event) => event.type === 'transitionExecuted' && event.transitionId === 2)).toMatchObject({
      timedOutWaitingFor: [BOB],
    });
    expect(bob.client.epoch).toBeUndefined();
    expect(bob.client.heardBy(BOT_ID)).toBe(false);
    // What the bot says now, Bob cannot open yet.
    expect(bob.client.open(BOT_ID, theBot.session.encrypt(OPUS)).kind).toBe('undecryptable');

    held.release();
    await atEpoch(theBot, [alice, bob], 2n);
    expectAgreement(theBot, [alice, bob], 2n);
    expectFramesBothWays(theBot, bob);
  });

  it('transition id 0: the commit takes effect at once, with no op 23 and no op 22, and the bot keeps 0 as its last transition', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    test.faults.zeroNextTransitionId();
    const bob = test.member(BOB);
    theBot.connected.add(BOB);
    test.call.connect(bob.participant);
    await atEpoch(theBot, [alice, bob], 2n);

    expect(test.call.history.filter((event) => event.type === 'commit').at(-1)).toMatchObject({ transitionId: 0 });
    expect(test.call.state().lastTransitionId).toBe(0);
    expect(
      theBot.debug.some(
        (line) => line === 'MLS commit processed (transition id: 0)' || line === 'MLS welcome processed (transition id: 0)',
      ),
    ).toBe(true);
    expect(theBot.session.lastTransitionId).toBe(0);
    expectAgreement(theBot, [alice, bob], 2n);
    expectFramesBothWays(theBot, bob);
  });

  it("a stale key: the member's frames are well-formed DAVE frames nobody can decrypt, until the fault ends", async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    alice.client.useStaleKey(true);
    const stale = alice.client.protect(OPUS)!;
    expect(stale.subarray(-2)).toEqual(Buffer.from([0xfa, 0xfa]));
    // The wrapper swallows a failure (null) until 36 in a row.
    expect(theBot.session.decrypt(stale, ALICE)).toBeNull();
    alice.client.useStaleKey(false);
    expect(theBot.session.decrypt(alice.client.protect(OPUS)!, ALICE)).toEqual(OPUS);
  });

  it('a member without DAVE joins: everyone goes to protocol 0 (op 21, 23, 22); when it leaves, a new group (op 24)', async () => {
    test = new TestCall(CHANNEL_ID);
    const { theBot, alice } = await bothIn();
    const legacy = test.member(BOB, { dave: false });
    theBot.connected.add(BOB);
    test.call.connect(legacy.participant);
    await test.until(
      () =>
        test.call.settled() &&
        test.call.state().protocolVersion === 0 &&
        alice.client.protocolVersion === 0 &&
        theBot.debug.includes('Session downgraded'),
    );

    expect(test.call.history.find((event) => event.type === 'downgrade')).toBeDefined();
    expect(theBot.debug).toContain('Session downgraded');
    // Both send in the clear now, and take what comes in the clear.
    expect(theBot.session.encrypt(OPUS)).toEqual(OPUS);
    expect(alice.client.protect(OPUS)).toEqual(OPUS);
    expect(alice.client.open(BOT_ID, OPUS)).toEqual({ kind: 'audio', opus: OPUS });

    test.call.disconnect(legacy.participant);
    await atEpoch(theBot, [alice], 1n);
    expect(test.call.history.filter((event) => event.type === 'upgrade')).toHaveLength(1);
    await test.until(() => theBot.debug.includes('Session upgraded'), 'the bot to execute the upgrade');
    expectAgreement(theBot, [alice], 1n);
    expectFramesBothWays(theBot, alice);
  });
});
