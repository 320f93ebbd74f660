// Audio both ways between the real @discordjs/voice and the stand-in: what the bot plays arrives
// decoded at the stand-in, what a simulated user says arrives at the bot's receiver, silence is not
// transmitted, and a corrupt packet reaches the bot as it is (surviving it is the bot's job).

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
  joinVoiceChannel,
} from '@discordjs/voice';
import type { AudioReceiveStream, VoiceConnection } from '@discordjs/voice';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { analyzeTone, dominantFrequency } from '../src/audio/analysis.ts';
import { concatPcm, slicePcm } from '../src/audio/format.ts';
import { generateSilence, generateTone } from '../src/audio/tone.ts';
import { CORRUPT_OPUS_PACKET, OPUS_SILENCE_FRAME, OpusFrameDecoder, encodePcmToOpusPackets } from '../src/audio/opus.ts';
import { trustCertificateInThisProcess } from '../src/voice/tls-trust.ts';
import { InProcessVoiceGateway } from '../src/voice/adapter.ts';
import { isSilenceFrame, joinFramePcm } from '../src/voice/bot-recorder.ts';
import { startVoiceServer } from '../src/voice/server.ts';
import type { VoiceServer } from '../src/voice/server.ts';
import { waitUntil } from '../src/lib/wait-until.ts';

const BOT_ID = '100000000000000001';
const USER_ID = '400000000000000001';
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';

let server: VoiceServer;
let untrust: () => void;
let connection: VoiceConnection;
const connectionErrors: Error[] = [];
let openStreams: AudioReceiveStream[] = [];

beforeAll(async () => {
  server = await startVoiceServer();
  untrust = trustCertificateInThisProcess(server.certPem);
  const gateway = new InProcessVoiceGateway(server, BOT_ID);
  server.userJoined(GUILD_ID, CHANNEL_ID, USER_ID);
  connection = joinVoiceChannel({
    guildId: GUILD_ID,
    channelId: CHANNEL_ID,
    adapterCreator: gateway.adapterCreator(GUILD_ID),
    selfDeaf: false,
  });
  connection.on('error', (error) => connectionErrors.push(error));
  await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
  await server.waitForBotConnection(GUILD_ID);
});

// The receiver hands out the existing stream for a user until that stream has emitted 'close', so
// each test waits for its streams to be gone before the next one subscribes; and for the user to be
// quiet, so that no test sees the speaking end of the one before.
afterEach(async () => {
  await untilQuiet();
  await Promise.all(
    openStreams.map(async (stream) => {
      if (stream.closed) return;
      const closed = once(stream, 'close');
      stream.destroy();
      await closed;
    }),
  );
  openStreams = [];
});

afterAll(async () => {
  if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
  await server.close();
  untrust();
  expect(connectionErrors).toEqual([]);
});

interface ReceivedPacket {
  at: number;
  opus: Buffer;
}

/** The bot's receive stream for the user, recording each Opus packet with its arrival time. */
function listenToUser(): { packets: ReceivedPacket[]; stream: AudioReceiveStream } {
  const stream = connection.receiver.subscribe(USER_ID, { end: { behavior: EndBehaviorType.Manual } });
  openStreams.push(stream);
  const packets: ReceivedPacket[] = [];
  stream.on('data', (opus: Buffer) => packets.push({ at: performance.now(), opus }));
  return { packets, stream };
}

/**
 * Waits for the packets a test sent: a speaking "end" (100 ms after the last packet) can fire on a busy
 * machine before packets already on the socket are read. Settles with what came after `patienceMs`: a
 * real network may lose one, and the test's expectations say how many may be missing.
 */
async function packetsArrived(
  stream: AudioReceiveStream,
  packets: readonly ReceivedPacket[],
  count: number,
  patienceMs = 5_000,
): Promise<void> {
  await waitUntil({
    check: () => (packets.length >= count ? true : undefined),
    subscribe: (wake) => {
      stream.on('data', wake);
      return () => stream.off('data', wake);
    },
    timeoutMs: patienceMs,
    timeoutError: () => new Error(`${packets.length} of ${count} packets in ${patienceMs} ms`),
  }).catch(() => undefined);
}

/** Resolves once the bot no longer counts the user as speaking (at once when it does not). */
async function untilQuiet(): Promise<void> {
  const speaking = connection.receiver.speaking;
  await waitUntil({
    check: () => (speaking.users.has(USER_ID) ? undefined : true),
    // 'end' is emitted before the user is taken off the map: look once the emit is over.
    subscribe: (wake) => {
      const onEnd = () => queueMicrotask(wake);
      speaking.on('end', onEnd);
      return () => speaking.off('end', onEnd);
    },
    timeoutMs: 5_000,
    timeoutError: () => new Error('the user still counts as speaking after 5 s'),
  });
}

function decodeAll(packets: readonly ReceivedPacket[]): Int16Array {
  const decoder = new OpusFrameDecoder();
  try {
    return concatPcm(...packets.map((packet) => decoder.decode(packet.opus)));
  } finally {
    decoder.close();
  }
}

describe('audio between the bot and the stand-in', () => {
  it('a tone the bot plays arrives at the stand-in decoded as that tone, frame by frame in real time', async () => {
    const player = createAudioPlayer();
    connection.subscribe(player);
    const packets = encodePcmToOpusPackets(generateTone({ hz: 440, ms: 600, amplitude: 0.5 }));
    player.play(createAudioResource(Readable.from(packets), { inputType: StreamType.Opus }));
    await entersState(player, AudioPlayerStatus.Playing, 5_000);
    await entersState(player, AudioPlayerStatus.Idle, 10_000);
    // The player ends with silence frames, then SPEAKING 0.
    await server.waitForBotSpeaking(GUILD_ID, (events) => events.some((event) => event.speaking === 0));
    player.stop();

    const frames = server.botAudio(GUILD_ID);
    const audio = frames.filter((frame) => !isSilenceFrame(frame));
    expect(audio).toHaveLength(packets.length);
    // The player pads the end with F8 FF FE (@discordjs/voice 0.19.2 prepares 5 but dispatches 4).
    const silence = frames.filter(isSilenceFrame);
    expect(silence.length).toBeGreaterThanOrEqual(1);
    expect(silence.length).toBeLessThanOrEqual(5);
    expect(frames.slice(-silence.length).every(isSilenceFrame)).toBe(true);
    expect(server.botSpeaking(GUILD_ID).map((event) => event.speaking)).toEqual([1, 0]);
    expect(server.botPacketProblems(GUILD_ID)).toEqual({ undecryptable: 0, undecodable: 0, unencrypted: 0, daveUndecryptable: 0 });

    const tone = analyzeTone(slicePcm(joinFramePcm(audio), 100, 400));
    expect(Math.abs(tone.dominantHz - 440)).toBeLessThanOrEqual(3);
    expect(tone.rms).toBeGreaterThan(0.25);

    for (let index = 1; index < frames.length; index++) {
      const previous = frames[index - 1];
      const frame = frames[index];
      if (!previous || !frame) continue;
      expect((frame.sequence - previous.sequence + 0x10000) % 0x10000).toBe(1);
      expect((frame.rtpTimestamp - previous.rtpTimestamp + 2 ** 32) % 2 ** 32).toBe(960);
      expect(frame.pcm).toHaveLength(1920);
    }
    // Paced by the player's 20 ms clock, not sent in a burst.
    const span = (frames.at(-1)?.receivedAt ?? 0) - (frames[0]?.receivedAt ?? 0);
    expect(span).toBeGreaterThan((frames.length - 1) * 20 * 0.6);
    expect(span).toBeLessThan((frames.length - 1) * 20 + 1_000);
  });

  it("a user's tone arrives at the bot's receiver and decodes to that tone", async () => {
    const { packets, stream } = listenToUser();
    const result = await server.speakTone(GUILD_ID, USER_ID, { hz: 660, ms: 400, amplitude: 0.5 });
    await packetsArrived(stream, packets, 25);

    expect(result).toMatchObject({ audioPackets: 20, silencePackets: 5, interrupted: false });
    expect(packets).toHaveLength(25);
    expect(packets.slice(20).every((packet) => packet.opus.equals(OPUS_SILENCE_FRAME))).toBe(true);
    const tone = analyzeTone(slicePcm(decodeAll(packets.slice(0, 20)), 100, 250));
    expect(Math.abs(tone.dominantHz - 660)).toBeLessThanOrEqual(3);
    expect(tone.rms).toBeGreaterThan(0.25);
    // Real-time pacing: 25 packets take about half a second.
    const span = (packets.at(-1)?.at ?? 0) - (packets[0]?.at ?? 0);
    expect(span).toBeGreaterThan(24 * 20 * 0.6);
  });

  it('packets with an RTP header extension, as Discord clients send them, arrive just as well', async () => {
    const { packets, stream } = listenToUser();
    await server.speakTone(GUILD_ID, USER_ID, { hz: 880, ms: 200 }, { headerExtension: true, realtime: false });
    await packetsArrived(stream, packets, 10 + 5);

    expect(packets).toHaveLength(10 + 5);
    expect(dominantFrequency(slicePcm(decodeAll(packets.slice(0, 10)), 60, 120))).toBeCloseTo(880, -1);
  });

  it('the bot receives nothing while the user is silent, and hears the user stop and start again', async () => {
    const { packets, stream } = listenToUser();
    // Each speaking start or end, with how many packets the bot had received by then (a start comes
    // with a packet, before the stream gets it).
    const speakingEvents: { event: 'start' | 'end'; packets: number }[] = [];
    const onStart = (userId: string) => userId === USER_ID && speakingEvents.push({ event: 'start', packets: packets.length });
    const onEnd = (userId: string) => userId === USER_ID && speakingEvents.push({ event: 'end', packets: packets.length });
    connection.receiver.speaking.on('start', onStart);
    connection.receiver.speaking.on('end', onEnd);
    try {
      const pcm = concatPcm(generateTone({ hz: 500, ms: 200 }), generateSilence(600), generateTone({ hz: 1000, ms: 200 }));
      const result = await server.speak(GUILD_ID, USER_ID, pcm);
      await packetsArrived(stream, packets, 30);
      await untilQuiet();

      // 30 silent frames: the first 5 carry F8 FF FE, the other 25 are not transmitted at all.
      expect(result).toMatchObject({ audioPackets: 20, silencePackets: 10, skippedFrames: 25 });
      // 20 tone and 10 silence packets were sent; a network may lose one.
      expect(packets.length).toBeGreaterThanOrEqual(29);
      expect(packets.length).toBeLessThanOrEqual(30);
      const gaps = packets.slice(1).map((packet, index) => packet.at - (packets[index]?.at ?? packet.at));
      // 25 untransmitted frames: half a second in which the bot got nothing.
      expect(Math.max(...gaps)).toBeGreaterThan(350);

      // The bot heard the user start with the first packet, stop in that half second and start again
      // with the packet after it, and stop after the last. @discordjs/voice also counts a packet more
      // than 100 ms late as a new start, so a stalled machine, like a real network, may add a stop and
      // start within a tone; the silence's stop and start must be there all the same.
      const resumedAt = gaps.indexOf(Math.max(...gaps)) + 1;
      const resumed = speakingEvents.findIndex((event) => event.event === 'start' && event.packets === resumedAt);
      expect(speakingEvents.at(0)).toEqual({ event: 'start', packets: 0 });
      expect(resumed).toBeGreaterThan(0);
      expect(speakingEvents[resumed - 1]).toEqual({ event: 'end', packets: resumedAt });
      expect(speakingEvents.at(-1)).toEqual({ event: 'end', packets: packets.length });

      const decoded = decodeAll(packets);
      expect(dominantFrequency(slicePcm(decoded, 40, 120))).toBeCloseTo(500, -1);
      expect(dominantFrequency(slicePcm(decoded, 340, 120))).toBeCloseTo(1000, -1);
    } finally {
      connection.receiver.speaking.off('start', onStart);
      connection.receiver.speaking.off('end', onEnd);
    }
  });

  it('a corrupt packet reaches the bot unchanged, as garbage Opus, and the stream keeps flowing', async () => {
    const { packets, stream } = listenToUser();
    await server.sendRawPacket(GUILD_ID, USER_ID, CORRUPT_OPUS_PACKET);
    await server.speakTone(GUILD_ID, USER_ID, { hz: 700, ms: 100 }, { realtime: false });
    await packetsArrived(stream, packets, 1 + 5 + 5);

    expect(packets[0]?.opus.equals(CORRUPT_OPUS_PACKET)).toBe(true);
    const decoder = new OpusFrameDecoder();
    try {
      expect(() => decoder.decode(CORRUPT_OPUS_PACKET)).toThrow();
    } finally {
      decoder.close();
    }
    // The corrupt packet, the tone's 5 frames and 5 silence frames; one of the last may be lost, as on a network.
    expect(packets.length).toBeGreaterThanOrEqual(1 + 5 + 5 - 1);
    expect(packets.length).toBeLessThanOrEqual(1 + 5 + 5);
  });

  it('the bot forgets a user who leaves the channel (CLIENT_DISCONNECT)', async () => {
    const otherUser = '400000000000000002';
    const ssrcMap = connection.receiver.ssrcMap;
    const mapped = new Promise<void>((resolve) => {
      const onCreate = (data: { userId: string }) => {
        if (data.userId !== otherUser) return;
        ssrcMap.off('create', onCreate);
        resolve();
      };
      ssrcMap.on('create', onCreate);
    });
    server.userJoined(GUILD_ID, CHANNEL_ID, otherUser);
    await server.speakTone(GUILD_ID, otherUser, { hz: 300, ms: 60 }, { realtime: false });
    await mapped;
    expect(ssrcMap.get(otherUser)).toBeDefined();

    const forgotten = new Promise<void>((resolve) => {
      const onDelete = (data: { userId: string }) => {
        if (data.userId !== otherUser) return;
        ssrcMap.off('delete', onDelete);
        resolve();
      };
      ssrcMap.on('delete', onDelete);
    });
    server.userLeft(GUILD_ID, otherUser);
    await forgotten;
    expect(ssrcMap.get(otherUser)).toBeUndefined();
    await expect(server.speakTone(GUILD_ID, otherUser, { hz: 300, ms: 60 })).rejects.toThrow(/not in a voice channel/);
  });

  it('a user who is not in the channel cannot speak', async () => {
    await expect(server.speakTone(GUILD_ID, '400000000000000099', { hz: 440, ms: 100 })).rejects.toThrow(/not in a voice channel/);
    server.userJoined(GUILD_ID, '300000000000000099', '400000000000000099');
    await expect(server.speakTone(GUILD_ID, '400000000000000099', { hz: 440, ms: 100 })).rejects.toThrow(/the bot in 300000000000000001/);
    server.userLeft(GUILD_ID, '400000000000000099');
  });
});
