// DAVE end to end between the real @discordjs/voice (with @snazzah/davey, in this process) and the
// stand-in's voice server over the TLS websocket and UDP: the call forms with simulated members, media
// is end-to-end encrypted both ways, keys rotate while people speak, frames in the clear are counted,
// and each fault on demand reaches the bot as it says. The library is what the bot runs; what the bot's
// own voice code does under DAVE is tested in test/e2e/voice.test.ts and test/voice/.

import { once } from 'node:events';
import { Readable } from 'node:stream';
import {
  AudioPlayerStatus,
  EndBehaviorType,
  StreamType,
  VoiceConnectionStatus,
  createAudioPlayer,
  createAudioResource,
  entersState,
  getVoiceConnections,
  joinVoiceChannel,
} from '@discordjs/voice';
import type { AudioReceiveStream, VoiceConnection } from '@discordjs/voice';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { analyzeTone, dominantFrequency } from '../src/audio/analysis.ts';
import { concatPcm, slicePcm } from '../src/audio/format.ts';
import { generateTone } from '../src/audio/tone.ts';
import { OPUS_SILENCE_FRAME, OpusFrameDecoder, encodePcmToOpusPackets } from '../src/audio/opus.ts';
import { trustCertificateInThisProcess } from '../src/voice/tls-trust.ts';
import { InProcessVoiceGateway } from '../src/voice/adapter.ts';
import { isSilenceFrame, joinFramePcm } from '../src/voice/bot-recorder.ts';
import { VoiceOp } from '../src/voice/protocol.ts';
import { startVoiceServer } from '../src/voice/server.ts';
import type { BotAudioFrame, VoiceServer } from '../src/voice/server.ts';

const BOT_ID = '100000000000000001';
const CHANNEL_ID = '300000000000000001';
const ALICE = '400000000000000001';
const BOB = '400000000000000002';
const CAROL = '400000000000000003';

let server: VoiceServer;
let gateway: InProcessVoiceGateway;
let untrust: () => void;
let guildCounter = 0;
let connectionErrors: Error[] = [];
const streams: AudioReceiveStream[] = [];

beforeAll(async () => {
  server = await startVoiceServer({ daveTransitionTimeoutMs: 300 });
  untrust = trustCertificateInThisProcess(server.certPem);
  gateway = new InProcessVoiceGateway(server, BOT_ID);
});

afterEach(async () => {
  await Promise.all(
    streams.splice(0).map(async (stream) => {
      if (stream.closed) return;
      const closed = once(stream, 'close');
      stream.destroy();
      await closed;
    }),
  );
  for (const connection of getVoiceConnections().values()) {
    if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
  }
});

afterAll(async () => {
  await server.close();
  untrust();
});

/** Each test has a guild of its own, so calls and recordings never mix. */
function nextGuild(): string {
  guildCounter++;
  return `2000000000000000${String(guildCounter).padStart(2, '0')}`;
}

function join(guildId: string, options: { debug?: boolean } = {}): VoiceConnection {
  connectionErrors = [];
  const connection = joinVoiceChannel({
    guildId,
    channelId: CHANNEL_ID,
    adapterCreator: gateway.adapterCreator(guildId),
    selfDeaf: false,
    debug: options.debug,
  });
  connection.on('error', (error) => connectionErrors.push(error));
  return connection;
}

async function joinReady(guildId: string, options: { debug?: boolean } = {}): Promise<VoiceConnection> {
  const connection = join(guildId, options);
  await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
  await server.waitForBotConnection(guildId);
  return connection;
}

/** The whitepaper's displayable code: groups of 5 bytes, each as a big-endian number mod 10^5. */
function displayableCode(data: Buffer, digits = 30, groupSize = 5): string {
  let code = '';
  for (let offset = 0; offset < digits; offset += groupSize) {
    const value = data.subarray(offset, offset + groupSize).reduce((total, byte) => total * 256n + BigInt(byte), 0n);
    code += (value % 10n ** BigInt(groupSize)).toString().padStart(groupSize, '0');
  }
  return code;
}

async function play(connection: VoiceConnection, hz: number, ms: number): Promise<number> {
  const player = createAudioPlayer();
  connection.subscribe(player);
  const packets = encodePcmToOpusPackets(generateTone({ hz, ms, amplitude: 0.5 }));
  player.play(createAudioResource(Readable.from(packets), { inputType: StreamType.Opus }));
  await entersState(player, AudioPlayerStatus.Playing, 5_000);
  await entersState(player, AudioPlayerStatus.Idle, 15_000);
  player.stop();
  return packets.length;
}

interface Listening {
  packets: Buffer[];
  stream: AudioReceiveStream;
}

function listen(connection: VoiceConnection, userId: string): Listening {
  const stream = connection.receiver.subscribe(userId, { end: { behavior: EndBehaviorType.Manual } });
  streams.push(stream);
  const packets: Buffer[] = [];
  stream.on('data', (packet: Buffer) => packets.push(packet));
  return { packets, stream };
}

/** Packets of an utterance that may be lost on the way, as on a real network. */
const LOSS_ALLOWED = 1;

/**
 * The packets heard, once `enough` holds for them. They are waited for, not the library's speaking "end"
 * (100 ms without a packet), which on a busy machine fires mid-utterance while packets are still on
 * their way. After `patienceMs` without `enough`, what came is returned: a packet may have been lost,
 * and the test's assertions say how many may be missing.
 */
async function heard(
  { packets, stream }: Listening,
  enough: (packets: readonly Buffer[]) => boolean,
  patienceMs = 5_000,
): Promise<Buffer[]> {
  if (!enough(packets)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stream.off('data', onData);
        stream.off('close', done);
        resolve();
      };
      // Registered after listen()'s own handler, so `packets` already holds the packet.
      const onData = () => {
        if (enough(packets)) done();
      };
      const timer = setTimeout(done, patienceMs);
      stream.on('data', onData);
      stream.on('close', done);
    });
  }
  return [...packets];
}

/** `count` packets of `sent`: all, or all but the few a real network may lose. */
function expectMostOf(count: number, sent: number): void {
  expect(count).toBeGreaterThanOrEqual(sent - LOSS_ALLOWED);
  expect(count).toBeLessThanOrEqual(sent);
}

/**
 * A spoken utterance as heard: its audio frames, then only the F8 FF FE frames that end it, each
 * decrypted (a frame that fails to decrypt is dropped by the library, one passed through undecrypted
 * decodes as noise, not as the tone).
 */
function expectUtterance(packets: readonly Buffer[], spoken: { audioPackets: number; silencePackets: number }): Buffer[] {
  expectMostOf(packets.length, spoken.audioPackets + spoken.silencePackets);
  const audio = packets.filter((packet) => !packet.equals(OPUS_SILENCE_FRAME));
  expectMostOf(audio.length, spoken.audioPackets);
  expect(packets.slice(audio.length).every((packet) => packet.equals(OPUS_SILENCE_FRAME))).toBe(true);
  return audio;
}

/**
 * The bot's audio frames (not its F8 FF FE) once `sent` of them and a silence frame after them were
 * heard. The member opens a frame only once it has processed the commit that brings the frame's key,
 * which on a busy machine can be well after the bot stopped speaking, so the frames are waited for.
 * After `patienceMs` without them all, what came is returned (as in heard()).
 */
async function botAudioHeard(guildId: string, sent: number, patienceMs = 10_000): Promise<BotAudioFrame[]> {
  const audio = () => server.botAudio(guildId).filter((frame) => !isSilenceFrame(frame));
  await server
    .waitForBotAudio(guildId, (frames) => audio().length >= sent && frames.length > 0 && isSilenceFrame(frames.at(-1)!), patienceMs)
    .catch(() => undefined);
  return audio();
}

/** A DAVE frame as it came, not decrypted: it still ends with the protocol's FA FA marker. */
function undecrypted(packet: Buffer): boolean {
  return packet.subarray(-2).equals(Buffer.from([0xfa, 0xfa]));
}

function decode(packets: readonly Buffer[]): Int16Array {
  const decoder = new OpusFrameDecoder();
  try {
    return concatPcm(...packets.map((packet) => decoder.decode(packet)));
  } finally {
    decoder.close();
  }
}

describe('the bot in a DAVE call', () => {
  it('negotiates DAVE 1, forms a group with a member, and shows the privacy code of the epoch they share', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId);

    const info = server.botConnection(guildId);
    expect(info?.dave).toEqual({
      protocolVersion: 1,
      epoch: 1n,
      groupMembers: expect.arrayContaining([BOT_ID, ALICE]),
      lastTransitionId: 1,
    });
    const alice = await server.dave.waitForMember(guildId, ALICE, (state) => state.sendingEpoch === 1n);
    expect(alice.groupMembers.sort()).toEqual([BOT_ID, ALICE].sort());
    expect(connection.voicePrivacyCode).toBe(displayableCode(alice.epochAuthenticator!));
    // The bot sent its key package (26), a commit (28) and op 23; DAVE's binary frames came with sequence numbers it acknowledges.
    const ops = server.botMessages(guildId).map((message) => message.op);
    expect(ops).toEqual(expect.arrayContaining([26, 28, 23]));
    expect(connectionErrors).toEqual([]);
  });

  it('plays into the call end-to-end encrypted: the member decrypts every frame, silence stays clear', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId);
    const sent = await play(connection, 440, 600);
    await server.waitForBotSpeaking(guildId, (events) => events.some((event) => event.speaking === 0));

    const audio = await botAudioHeard(guildId, sent);
    expectMostOf(audio.length, sent);
    expect(server.botAudio(guildId).filter(isSilenceFrame).length).toBeGreaterThanOrEqual(1);
    expect(server.botPacketProblems(guildId)).toEqual({ undecryptable: 0, undecodable: 0, unencrypted: 0, daveUndecryptable: 0 });
    // Every frame heard was decrypted by the member.
    expect(server.dave.member(guildId, ALICE)?.stats).toMatchObject({ decrypted: audio.length, unencrypted: 0, undecryptable: 0 });
    expect(Math.abs(analyzeTone(slicePcm(joinFramePcm(audio), 100, 400)).dominantHz - 440)).toBeLessThanOrEqual(3);
  });

  it("hears a member's end-to-end encrypted speech decrypted, and the F8 FF FE that ends it", async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId);
    const listening = listen(connection, ALICE);
    const result = await server.speakTone(guildId, ALICE, { hz: 660, ms: 400, amplitude: 0.5 });

    expect(result).toMatchObject({ audioPackets: 20, silencePackets: 5 });
    const audio = expectUtterance(await heard(listening, (packets) => packets.length >= 25), result);
    expect(Math.abs(analyzeTone(slicePcm(decode(audio), 100, 250)).dominantHz - 660)).toBeLessThanOrEqual(3);
  });

  it('keeps hearing and being heard while members join and leave mid-utterance (keys rotate twice)', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId);
    const listening = listen(connection, ALICE);
    const epochs: bigint[] = [];
    const speaking = server.speakTone(guildId, ALICE, { hz: 500, ms: 2000, amplitude: 0.5 });
    const playing = play(connection, 880, 2000);
    // Bob joins as soon as Alice is talking, and leaves once the group has him.
    await server.waitForBotSpeaking(guildId, (events) => events.length > 0);
    server.userJoined(guildId, CHANNEL_ID, BOB);
    epochs.push((await server.dave.waitFor(guildId, (state) => state.epoch === 2n && state.pendingTransition === undefined)).epoch ?? 0n);
    server.userLeft(guildId, BOB);
    epochs.push((await server.dave.waitFor(guildId, (state) => state.epoch === 3n && state.pendingTransition === undefined)).epoch ?? 0n);
    const [spoken, sent] = await Promise.all([speaking, playing]);

    expect(epochs).toEqual([2n, 3n]);
    // Every frame Alice said reached the bot decrypted, across both rotations.
    const packets = await heard(listening, (received) => received.length >= spoken.audioPackets + spoken.silencePackets);
    expect(dominantFrequency(slicePcm(decode(expectUtterance(packets, spoken)), 1000, 400))).toBeCloseTo(500, -1);
    // Every frame the bot played reached Alice decrypted: nothing in the clear, nothing lost (but what a network may lose).
    await server.waitForBotSpeaking(guildId, (events) => events.some((event) => event.speaking === 0));
    expectMostOf((await botAudioHeard(guildId, sent)).length, sent);
    expect(server.botPacketProblems(guildId)).toEqual({ undecryptable: 0, undecodable: 0, unencrypted: 0, daveUndecryptable: 0 });
    expect(
      server.dave
        .history(guildId)
        .filter((event) => event.type === 'commit')
        .map((event) => event.type === 'commit' && [event.adds, event.removes]),
    ).toEqual([
      [[ALICE], []],
      [[BOB], []],
      [[], [BOB]],
    ]);
  });

  it('counts and drops the frames the bot sends in the clear before its DAVE session is ready', async () => {
    const guildId = nextGuild();
    const connection = await joinReady(guildId);
    // Alone, the bot has no group: @discordjs/voice sends its audio in the clear.
    const playing = play(connection, 330, 1500);
    await server.waitForBotSpeaking(guildId, (events) => events.length > 0);
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const sent = await playing;

    // Alice's client dropped what came in the clear once she was in the call, and decrypted the rest (once
    // it has processed its Welcome, which on a busy machine can be after the bot stopped playing).
    await server.dave.waitForMember(guildId, ALICE, (member) => member.stats.decrypted > 0);
    const problems = server.botPacketProblems(guildId);
    expect(problems.unencrypted).toBeGreaterThan(0);
    expect(problems.daveUndecryptable).toBe(0);
    expect(server.botAudio(guildId).filter((frame) => !isSilenceFrame(frame)).length).toBeLessThanOrEqual(sent - problems.unencrypted);
  });
});

describe('DAVE faults reaching the real library', () => {
  it('a damaged commit: the bot reports it with op 31, sends a new key package, and is added back', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId);
    server.dave.damageNextCommit(guildId, BOT_ID);
    server.userJoined(guildId, CHANNEL_ID, BOB);
    await server.dave.waitForEvent(guildId, (event) => event.type === 'invalidReport' && event.userId === BOT_ID);
    await server.waitForBotConnection(guildId);

    expect(server.botMessages(guildId).map((message) => message.op)).toContain(31);
    const state = server.dave.state(guildId);
    expect(state.groupMembers.sort()).toEqual([BOT_ID, ALICE, BOB].sort());
    const bob = await server.dave.waitForMember(guildId, BOB, (member) => member.sendingEpoch === state.epoch);
    expect(connection.voicePrivacyCode).toBe(displayableCode(bob.epochAuthenticator!));
    const sent = await play(connection, 440, 300);
    await server.waitForBotSpeaking(guildId, (events) => events.some((event) => event.speaking === 0));
    expectMostOf((await botAudioHeard(guildId, sent)).length, sent);
    expect(server.botPacketProblems(guildId)).toMatchObject({ unencrypted: 0, daveUndecryptable: 0 });
  });

  it('a late Welcome for the bot: the transition executes without it, and the bot catches up when the Welcome comes', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    server.userJoined(guildId, CHANNEL_ID, BOB);
    await server.dave.waitForMember(guildId, BOB, (state) => state.sendingEpoch === 1n);
    const held = server.dave.holdNextWelcome(guildId, BOT_ID, CHANNEL_ID);
    const connection = join(guildId);
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    await held.held;
    const executed = await server.dave.waitForEvent(guildId, (event) => event.type === 'transitionExecuted' && event.transitionId === 2);
    // Without the bot; on a busy machine a member may also miss the (shortened) timeout, which is no matter here.
    expect(executed).toMatchObject({ timedOutWaitingFor: expect.arrayContaining([BOT_ID]) });
    expect(connection.voicePrivacyCode).toBeUndefined();

    held.release();
    await server.waitForBotConnection(guildId);
    const alice = await server.dave.waitForMember(guildId, ALICE, (state) => state.sendingEpoch === 2n);
    expect(connection.voicePrivacyCode).toBe(displayableCode(alice.epochAuthenticator!));
  });

  it("while the bot waits for its Welcome, @discordjs/voice hands members' DAVE frames to the receive stream undecrypted", async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    server.userJoined(guildId, CHANNEL_ID, BOB);
    await server.dave.waitForMember(guildId, ALICE, (state) => state.sendingEpoch === 1n);
    const held = server.dave.holdNextWelcome(guildId, BOT_ID, CHANNEL_ID);
    const connection = join(guildId);
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    await held.held;
    const listening = listen(connection, ALICE);
    // Alice was talking already: she goes on with the key of her group with Bob.
    await server.speakTone(
      guildId,
      ALICE,
      { hz: 500, ms: 200, amplitude: 0.5 },
      { realtime: false, waitForBotKey: false, trailingSilenceFrames: 0 },
    );
    const packets = await heard(listening, (received) => received.length >= 10);

    // DAVESession.decrypt returns the packet as it came while its session is not ready.
    expectMostOf(packets.length, 10);
    expect(packets.every(undecrypted)).toBe(true);
    held.release();
    await server.waitForBotConnection(guildId);
  });

  it('a stale key: the bot cannot decrypt the member, gives up after 36 failures, reports op 31 and rebuilds its session', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId);
    const listening = listen(connection, ALICE);
    server.dave.staleKey(guildId, ALICE);
    await server.speakTone(guildId, ALICE, { hz: 600, ms: 1000, amplitude: 0.5 }, { realtime: false, trailingSilenceFrames: 0 });
    await server.dave.waitForEvent(guildId, (event) => event.type === 'invalidReport' && event.userId === BOT_ID);

    server.dave.staleKey(guildId, ALICE, false);
    await server.waitForBotConnection(guildId);
    const spoken = await server.speakTone(guildId, ALICE, { hz: 600, ms: 200, amplitude: 0.5 }, { realtime: false });
    const packets = await heard(listening, (received) => received.filter((packet) => !undecrypted(packet)).length >= 15);
    // Not one frame of the first utterance was decrypted: while the session is rebuilt the library lets
    // DAVE frames through as they came (its session is not ready, so it does not try to decrypt them).
    // On a busy machine one of them may still be in flight when the second utterance is heard, so they
    // are told apart by whether they decrypted, not by their order: the decrypted ones are the second
    // utterance, whole (as many as it sent: none of the first is among them).
    const decrypted = packets.filter((packet) => !undecrypted(packet));
    expect(dominantFrequency(slicePcm(decode(expectUtterance(decrypted, spoken)), 60, 120))).toBeCloseTo(600, -1);
  });

  it('transition id 0, then a stale key: with 0 as its last transition @discordjs/voice 0.19.2 throws instead of recovering, and the receive stream dies', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    server.dave.zeroNextTransitionId(guildId, CHANNEL_ID);
    const connection = await joinReady(guildId);
    expect(server.dave.state(guildId).lastTransitionId).toBe(0);
    const { stream } = listen(connection, ALICE);
    const failed = once(stream, 'error');
    server.dave.staleKey(guildId, ALICE);
    await server.speakTone(guildId, ALICE, { hz: 600, ms: 800, amplitude: 0.5 }, { realtime: false, trailingSilenceFrames: 0 });
    const [error] = await failed;
    // DAVESession.decrypt: `if (this.lastTransitionId) recover… else throw error`, and 0 is falsy.
    expect(String(error)).toMatch(/decrypt/i);
    expect(server.botMessages(guildId).map((message) => message.op)).not.toContain(31);
  });

  it('a member without DAVE joins: the call downgrades to protocol 0 and back when it leaves', async () => {
    const guildId = nextGuild();
    server.userJoined(guildId, CHANNEL_ID, ALICE);
    const connection = await joinReady(guildId, { debug: true });
    const debug: string[] = [];
    connection.on('debug', (line) => debug.push(line));
    server.userJoined(guildId, CHANNEL_ID, CAROL, { dave: false });
    await server.dave.waitFor(guildId, (state) => state.protocolVersion === 0 && state.pendingTransition === undefined);
    await server.dave.waitForMember(guildId, ALICE, (state) => state.protocolVersion === 0);

    // Everyone sends in the clear now; the member's client lets it through (passthrough).
    const sent = await play(connection, 440, 300);
    await server.waitForBotSpeaking(guildId, (events) => events.some((event) => event.speaking === 0));
    expectMostOf((await botAudioHeard(guildId, sent)).length, sent);
    expect(server.botPacketProblems(guildId)).toMatchObject({ unencrypted: 0, daveUndecryptable: 0 });
    expect(debug.some((line) => line.includes('Session downgraded'))).toBe(true);

    server.userLeft(guildId, CAROL);
    await server.waitForBotConnection(guildId);
    const state = server.dave.state(guildId);
    expect(state).toMatchObject({ protocolVersion: 1, groupMembers: expect.arrayContaining([BOT_ID, ALICE]) });
    await server.dave.waitForMember(guildId, ALICE, (member) => member.protocolVersion === 1 && member.sendingEpoch === state.epoch);
    expect(server.dave.history(guildId).map((event) => event.type)).toEqual(expect.arrayContaining(['downgrade', 'upgrade']));
  });

  it('refuses a client that offers no DAVE with 4017, as Discord does since March 2026', async () => {
    const guildId = nextGuild();
    const { token } = server.expectBot({ guildId, channelId: CHANNEL_ID, userId: BOT_ID, sessionId: 'session-1' });
    const socket = new WebSocket(`wss://${server.endpoint}?v=8`);
    await once(socket, 'message');
    socket.send(
      JSON.stringify({
        op: VoiceOp.Identify,
        d: { server_id: guildId, user_id: BOT_ID, session_id: 'session-1', token, max_dave_protocol_version: 0 },
      }),
    );
    const [code, reason] = await once(socket, 'close');
    expect(code).toBe(4017);
    expect(String(reason)).toContain('DAVE');
  });
});
