import { afterEach, describe, expect, it } from 'vitest';
import { FRAME_SAMPLES, bytesToSamples } from '../../src/voice/audio/format.ts';
import { Framer } from '../../src/voice/audio/framer.ts';
import { SpeakerMixer } from '../../src/voice/audio/mixer.ts';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../src/voice/audio/opus.ts';
import { availableOpusCodecs, chooseOpusCodec, opusCodecInUse } from '../../src/voice/audio/opus-codec.ts';
import { analyzeTone, CORRUPT_OPUS_PACKET, encodePcmToOpusPackets, generateTone, REALTIME_PCM } from 'discord-standin';

const tone = (hz: number, ms: number, amplitude = 0.4) => generateTone({ hz, ms, amplitude, format: REALTIME_PCM });

function frames(samples: Int16Array): Int16Array[] {
  return new Framer().push(samples);
}

function concat(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

// Every codec this process can run: opusscript always (the fallback), native libopus where @discordjs/opus built.
describe.each(availableOpusCodecs())('Opus at 24 kHz mono through %s', (codec) => {
  it('decodes what a Discord client sends (48 kHz stereo) straight to 24 kHz mono, tone intact', () => {
    const packets = encodePcmToOpusPackets(generateTone({ hz: 440, ms: 400, amplitude: 0.4 }));
    const decoder = new OpusFrameDecoder(codec);
    const decoded = packets.map((packet) => decoder.decode(packet)).filter((pcm) => pcm !== undefined);
    expect(decoded.every((pcm) => pcm.length === FRAME_SAMPLES)).toBe(true);
    const analysis = analyzeTone(concat(decoded).subarray(FRAME_SAMPLES * 4), { format: REALTIME_PCM });
    expect(analysis.dominantHz).toBeCloseTo(440, -1);
    expect(analysis.purity).toBeGreaterThan(0.8);
  });

  it('skips a corrupt packet and keeps decoding the speaker', () => {
    const decoder = new OpusFrameDecoder(codec);
    const encoder = new OpusFrameEncoder(codec);
    const good = frames(tone(300, 100)).map((frame) => encoder.encode(frame));
    expect(decoder.decode(good[0]!)).toHaveLength(FRAME_SAMPLES);
    expect(decoder.decode(CORRUPT_OPUS_PACKET)).toBeUndefined();
    expect(decoder.corruptPackets).toBe(1);
    expect(decoder.decode(good[1]!)).toHaveLength(FRAME_SAMPLES);
  });

  it('encodes 20 ms frames that a 48 kHz stereo decoder (a Discord client) plays as the same tone', () => {
    const encoder = new OpusFrameEncoder(codec);
    const packets = frames(tone(523, 400)).map((frame) => encoder.encode(frame));
    const decoder = new OpusFrameDecoder(codec);
    const back = concat(packets.map((packet) => decoder.decode(packet)!));
    expect(analyzeTone(back.subarray(FRAME_SAMPLES * 4), { format: REALTIME_PCM }).dominantHz).toBeCloseTo(523, -1);
    expect(() => encoder.encode(new Int16Array(100))).toThrow(RangeError);
  });

  it('keeps the codecs of a hundred conversations in one process apart: each decodes as a lone decoder does', () => {
    // opusscript's own encode() and decode() use PCM buffers at twice their address, past the heap's end
    // for the newest of some 75 codecs, and views of the heap that more codecs leave stale
    // (packages/opusscript-codec): past about 38 conversations the newest codecs threw, at a
    // hundred all of them did.
    const packets = frames(tone(440, 200)).map((frame) => new OpusFrameEncoder(codec).encode(frame));
    const lone = new OpusFrameDecoder(codec);
    const expected = packets.map((packet) => Array.from(lone.decode(packet)!));
    lone.delete();
    const conversations = Array.from({ length: 100 }, () => ({
      decoder: new OpusFrameDecoder(codec),
      encoder: new OpusFrameEncoder(codec),
    }));
    try {
      for (const { decoder, encoder } of conversations) {
        expect(packets.map((packet) => decoder.decode(packet)).map((pcm) => pcm && Array.from(pcm))).toEqual(expected);
        expect(decoder.corruptPackets).toBe(0);
        expect(encoder.encode(new Int16Array(FRAME_SAMPLES)).length).toBeGreaterThan(0);
      }
    } finally {
      for (const { decoder, encoder } of conversations) {
        decoder.delete();
        encoder.delete();
      }
    }
  });
});

describe('the codec a process runs', () => {
  afterEach(() => chooseOpusCodec('auto'));

  it('runs native libopus where @discordjs/opus built, else opusscript, and says why not native', () => {
    const chosen = chooseOpusCodec('auto');
    expect(chosen.codec).toBe(availableOpusCodecs()[0]);
    expect(opusCodecInUse()).toBe(chosen.codec);
    if (chosen.codec === 'opusscript') expect(chosen.nativeMissing).toMatch(/@discordjs\/opus/);
    else expect(chosen.nativeMissing).toBeUndefined();
  });

  it('runs opusscript with OPUS_CODEC=opusscript even where the native build is there, and its codecs work', () => {
    expect(chooseOpusCodec('opusscript')).toEqual({ codec: 'opusscript', nativeMissing: undefined });
    expect(opusCodecInUse()).toBe('opusscript');
    const encoder = new OpusFrameEncoder();
    const decoder = new OpusFrameDecoder();
    const back = concat(frames(tone(523, 200)).map((frame) => decoder.decode(encoder.encode(frame))!));
    expect(analyzeTone(back.subarray(FRAME_SAMPLES * 4), { format: REALTIME_PCM }).dominantHz).toBeCloseTo(523, -1);
  });

  it("decodes one codec's packets with the other, as a member's client and the bot may run different ones", () => {
    const [first, second = first] = availableOpusCodecs();
    const packets = frames(tone(440, 300)).map((frame) => new OpusFrameEncoder(first).encode(frame));
    const decoder = new OpusFrameDecoder(second);
    const back = concat(packets.map((packet) => decoder.decode(packet)!));
    expect(analyzeTone(back.subarray(FRAME_SAMPLES * 4), { format: REALTIME_PCM }).dominantHz).toBeCloseTo(440, -1);
  });
});

describe('framing and mixing', () => {
  it('cuts samples arriving in odd pieces into whole 20 ms frames', () => {
    const framer = new Framer();
    const source = Int16Array.from({ length: 1000 }, (_, i) => i);
    const out = [...framer.push(source.subarray(0, 333)), ...framer.push(source.subarray(333))];
    expect(out).toHaveLength(2);
    expect(Array.from(out[1]!.subarray(0, 3))).toEqual([480, 481, 482]);
    const last = framer.flush()!;
    expect(Array.from(last.subarray(0, 40))).toEqual(Array.from(source.subarray(960, 1000)));
    expect(last.subarray(40).every((sample) => sample === 0)).toBe(true);
    expect(framer.flush()).toBeUndefined();
  });

  it('mixes two speakers on one timeline, clipping instead of wrapping', () => {
    const mixer = new SpeakerMixer();
    mixer.push('a', new Int16Array(FRAME_SAMPLES).fill(20_000));
    mixer.push('b', new Int16Array(FRAME_SAMPLES).fill(20_000));
    mixer.push('b', new Int16Array(FRAME_SAMPLES).fill(-100));
    expect(mixer.nextFrame()?.[0]).toBe(32_767);
    expect(mixer.nextFrame()?.[0]).toBe(-100);
    expect(mixer.nextFrame()).toBeUndefined();
  });

  it('keeps a two-tone mix recognisable as both tones', () => {
    const mixer = new SpeakerMixer();
    const first = frames(tone(400, 200, 0.3));
    const second = frames(tone(900, 200, 0.3));
    const mixed: Int16Array[] = [];
    // Packets arrive one per 20 ms from each speaker, and each tick mixes one frame.
    first.forEach((frame, index) => {
      mixer.push('a', frame);
      mixer.push('b', second[index]!);
      // The mixed frame is the mixer's until the next slot.
      mixed.push(mixer.nextFrame()!.slice());
    });
    const pcm = concat(mixed);
    expect(pcm.length).toBe(10 * FRAME_SAMPLES);
    expect(analyzeTone(pcm, { format: REALTIME_PCM, minHz: 600 }).dominantHz).toBeCloseTo(900, -1);
    expect(analyzeTone(pcm, { format: REALTIME_PCM, maxHz: 600 }).dominantHz).toBeCloseTo(400, -1);
  });

  it('holds no slot back for a speaker who closed their talk spurt', () => {
    const mixer = new SpeakerMixer();
    mixer.push('a', new Int16Array(FRAME_SAMPLES).fill(100), 0);
    mixer.push('b', new Int16Array(FRAME_SAMPLES).fill(200), 0);
    expect(mixer.nextFrame()?.[0]).toBe(300);
    mixer.push('a', new Int16Array(FRAME_SAMPLES).fill(100), 20);
    // b's next packet is late: the slot waits for it...
    expect(mixer.ready(20)).toBe(false);
    // ...unless b's last packet closed the spurt.
    mixer.quiet('b');
    expect(mixer.ready(20)).toBe(true);
    expect(mixer.nextFrame()?.[0]).toBe(100);
  });

  it('hands out each frame as it was pushed while it uses the memory of frames done with again', () => {
    const mixer = new SpeakerMixer();
    const heard: number[] = [];
    for (let round = 0; round < 4; round++) {
      // Frames of 1, 2, 3 (+ 10 × round), the second pushed in two halves.
      const base = 10 * round;
      mixer.push('a', new Int16Array(FRAME_SAMPLES).fill(base + 1));
      mixer.push('a', new Int16Array(FRAME_SAMPLES / 2).fill(base + 2));
      mixer.push('a', new Int16Array(FRAME_SAMPLES / 2).fill(base + 2));
      mixer.push('a', new Int16Array(FRAME_SAMPLES).fill(base + 3));
      for (let frame = mixer.nextFrame(); frame; frame = mixer.nextFrame()) {
        expect(frame.every((sample) => sample === frame[0])).toBe(true);
        heard.push(frame[0]!);
      }
    }
    expect(heard).toEqual([1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33]);
  });

  it('drops the oldest frames of a speaker who runs ahead, to keep latency bounded', () => {
    const mixer = new SpeakerMixer();
    mixer.push('a', new Int16Array(FRAME_SAMPLES * 8));
    expect(mixer.droppedFrames).toBe(3);
  });

  it('reads little-endian bytes at any offset', () => {
    const bytes = Buffer.from([0, 1, 0, 2, 0]);
    expect(Array.from(bytesToSamples(bytes.subarray(1)))).toEqual([1, 2]);
  });
});
