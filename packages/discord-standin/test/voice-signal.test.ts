// The voice stand-in's building blocks: test signals and their analysis, Opus, and the wire formats
// (RTP with aead_aes256_gcm_rtpsize, UDP IP discovery) that @discordjs/voice must accept byte for byte.

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { analyzeTone, dominantFrequency, rms } from '../src/audio/analysis.ts';
import { concatPcm, pcmDurationMs, slicePcm } from '../src/audio/format.ts';
import { generateSilence, generateTone } from '../src/audio/tone.ts';
import { CORRUPT_OPUS_PACKET, OPUS_SILENCE_FRAME, OpusFrameDecoder, encodePcmToOpusPackets } from '../src/audio/opus.ts';
import { openRtpPacket, sealRtpPacket } from '../src/voice/rtp-crypto.ts';
import { buildIpDiscoveryResponse, classifyDatagram } from '../src/voice/udp-datagrams.ts';

describe('test signals', () => {
  it('a generated tone is recognised by frequency and level, silence has no level', () => {
    const tone = generateTone({ hz: 440, ms: 200, amplitude: 0.5 });
    expect(pcmDurationMs(tone)).toBe(200);
    const analysis = analyzeTone(tone);
    expect(Math.abs(analysis.dominantHz - 440)).toBeLessThanOrEqual(2);
    expect(analysis.rms).toBeGreaterThan(0.3);
    expect(analysis.purity).toBeGreaterThan(0.8);
    expect(rms(generateSilence(100))).toBe(0);
  });

  it('tells apart two tones in one recording', () => {
    const pcm = concatPcm(generateTone({ hz: 300, ms: 200 }), generateTone({ hz: 1200, ms: 200 }));
    expect(dominantFrequency(slicePcm(pcm, 20, 160))).toBeCloseTo(300, -1);
    expect(dominantFrequency(slicePcm(pcm, 220, 160))).toBeCloseTo(1200, -1);
  });
});

describe('Opus', () => {
  it('a tone survives encoding and decoding with its frequency and roughly its level', () => {
    const tone = generateTone({ hz: 660, ms: 400, amplitude: 0.4 });
    const packets = encodePcmToOpusPackets(tone);
    expect(packets).toHaveLength(20);
    const decoder = new OpusFrameDecoder();
    try {
      const decoded = concatPcm(...packets.map((packet) => decoder.decode(packet)));
      expect(decoded).toHaveLength(tone.length);
      const analysis = analyzeTone(slicePcm(decoded, 100, 200));
      expect(Math.abs(analysis.dominantHz - 660)).toBeLessThanOrEqual(3);
      expect(analysis.rms).toBeGreaterThan(0.2);
      expect(analysis.rms).toBeLessThan(0.4);
      expect(() => decoder.decode(CORRUPT_OPUS_PACKET)).toThrow(/Invalid packet/);
    } finally {
      decoder.close();
    }
    const fresh = new OpusFrameDecoder();
    try {
      expect(rms(fresh.decode(OPUS_SILENCE_FRAME))).toBe(0);
    } finally {
      fresh.close();
    }
  });
});

describe('RTP with aead_aes256_gcm_rtpsize', () => {
  const key = randomBytes(32);
  const payload = Buffer.from([0xfc, 0x01, 0x02, 0x03, 0x04]);

  it('lays the packet out as Discord does: clear header, ciphertext, tag, nonce counter', () => {
    const packet = sealRtpPacket({ sequence: 0xfffe, timestamp: 0xfffffc40, ssrc: 0x01020304, payload, key, nonce: 7 });
    expect(packet.length).toBe(12 + payload.length + 16 + 4);
    expect([...packet.subarray(0, 12)]).toEqual([0x80, 0x78, 0xff, 0xfe, 0xff, 0xff, 0xfc, 0x40, 1, 2, 3, 4]);
    expect(packet.readUInt32BE(packet.length - 4)).toBe(7);
    expect(packet.subarray(12, 12 + payload.length).equals(payload)).toBe(false);

    const opened = openRtpPacket(packet, key);
    expect(opened.payload.equals(payload)).toBe(true);
    expect(opened.header).toMatchObject({ sequence: 0xfffe, timestamp: 0xfffffc40, ssrc: 0x01020304, payloadType: 0x78 });
  });

  it('keeps a header extension preamble in clear and its body inside the ciphertext', () => {
    const extensionBody = Buffer.from([0x10, 0x9e, 0, 0]);
    const packet = sealRtpPacket({ sequence: 1, timestamp: 960, ssrc: 9, payload, key, nonce: 8, extensionBody });
    expect(packet[0]).toBe(0x90);
    expect([...packet.subarray(12, 16)]).toEqual([0xbe, 0xde, 0, 1]);
    expect(packet.length).toBe(16 + 4 + payload.length + 16 + 4);
    expect(openRtpPacket(packet, key).payload.equals(payload)).toBe(true);
  });

  it('refuses a tampered packet or the wrong key', () => {
    const packet = sealRtpPacket({ sequence: 1, timestamp: 960, ssrc: 9, payload, key, nonce: 9 });
    const tampered = Buffer.from(packet);
    tampered[3] = (tampered[3] ?? 0) ^ 1;
    expect(() => openRtpPacket(tampered, key)).toThrow();
    expect(() => openRtpPacket(packet, randomBytes(32))).toThrow();
  });
});

describe('UDP datagrams', () => {
  it('answers IP discovery in the 74-byte layout and tells keepalives from RTP', () => {
    const request = Buffer.alloc(74);
    request.writeUInt16BE(1, 0);
    request.writeUInt16BE(70, 2);
    request.writeUInt32BE(4242, 4);
    expect(classifyDatagram(request)).toEqual({ kind: 'ipDiscovery', ssrc: 4242 });
    expect(classifyDatagram(Buffer.alloc(8))).toEqual({ kind: 'keepalive' });
    const rtp = sealRtpPacket({ sequence: 1, timestamp: 1, ssrc: 77, payload: Buffer.from([1]), key: randomBytes(32), nonce: 1 });
    expect(classifyDatagram(rtp)).toEqual({ kind: 'rtp', ssrc: 77 });

    const response = buildIpDiscoveryResponse(4242, '127.0.0.1', 50_123);
    expect(response.length).toBe(74);
    expect(response.readUInt16BE(0)).toBe(2);
    expect(response.readUInt16BE(2)).toBe(70);
    expect(response.readUInt32BE(4)).toBe(4242);
    expect(response.subarray(8, response.indexOf(0, 8)).toString()).toBe('127.0.0.1');
    expect(response.readUInt16BE(72)).toBe(50_123);
  });
});
