import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isDaveFrame } from '../../src/voice/audio/dave-frame.ts';
import { encodePcmToOpusPackets, FrameEncryptor, OPUS_SILENCE_FRAME, speechLikeTone } from 'discord-standin';

// The listener drops frames still end-to-end encrypted instead of decoding them as noise: it must know
// every DAVE frame and take no Opus packet for one.

const speech = encodePcmToOpusPackets(speechLikeTone(60));

/** A DAVE trailer by hand: tag, ULEB128 nonce and ranges, the size byte, the marker. */
function frameWith(media: Buffer, trailer: number[]): Buffer {
  const body = [...randomBytes(8), ...trailer];
  return Buffer.concat([media, Buffer.from(body), Buffer.from([body.length + 3, 0xfa, 0xfa])]);
}

describe('isDaveFrame', () => {
  it('knows the frames of an independent DAVE encryptor, from the first nonce to ones of several bytes', () => {
    const encryptor = new FrameEncryptor(randomBytes(16));
    const frames = Array.from({ length: 300 }, (_, index) => encryptor.encryptOpus(speech[index % speech.length]!));
    expect(frames.filter((frame) => !isDaveFrame(frame))).toEqual([]);
  });

  it('knows a frame with ranges left in the clear, and a nonce past 2^21', () => {
    expect(isDaveFrame(frameWith(randomBytes(40), [0x81, 0x80, 0x80, 0x01, 0, 4, 10, 6]))).toBe(true);
  });

  it('takes no Opus packet of a minute of speech, nor silence, for a DAVE frame', () => {
    expect(speech.filter(isDaveFrame)).toEqual([]);
    expect(isDaveFrame(OPUS_SILENCE_FRAME)).toBe(false);
  });

  it('refuses trailers that do not fit: too short, larger than the frame, overlapping or overrunning ranges, an endless nonce', () => {
    expect(isDaveFrame(Buffer.from([0x03, 0xfa, 0xfa]))).toBe(false);
    const tooLarge = frameWith(randomBytes(20), [1]);
    tooLarge[tooLarge.length - 3] = 200;
    expect(isDaveFrame(tooLarge)).toBe(false);
    expect(isDaveFrame(frameWith(randomBytes(40), [1, 10, 6, 12, 4]))).toBe(false);
    expect(isDaveFrame(frameWith(randomBytes(40), [1, 30, 20]))).toBe(false);
    expect(isDaveFrame(frameWith(randomBytes(40), [0x80, 0x80]))).toBe(false);
  });
});
