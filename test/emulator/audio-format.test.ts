import { describe, expect, it } from 'vitest';
import { decodeAudio, encodeAudio, readAudioFormat, type AudioFormat } from '../../src/emulator/realtime/audio-format.ts';

// The emulator's G.711 codecs and format rules (docs/gateway.md, "Audio formats": pcm 8000-48000 Hz, pcmu/pcma 8 kHz).

const MU_LAW: AudioFormat = { type: 'audio/pcmu', rate: 8000 };
const A_LAW: AudioFormat = { type: 'audio/pcma', rate: 8000 };
const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, index) => index));

describe('G.711', () => {
  it.each([
    [
      'mu-law',
      MU_LAW,
      [
        [0xff, 0],
        [0x80, 32_124],
        [0x00, -32_124],
        [0xfe, 8],
        [0x7e, -8],
      ],
    ],
    [
      'A-law',
      A_LAW,
      [
        [0xd5, 8],
        [0x55, -8],
        [0xaa, 32_256],
        [0x2a, -32_256],
      ],
    ],
  ] as const)('%s decodes the reference values', (_label, format, pairs) => {
    expect(Array.from(decodeAudio(Buffer.from(pairs.map(([byte]) => byte)), format))).toEqual(pairs.map(([, sample]) => sample));
  });

  it.each([
    ['mu-law', MU_LAW],
    ['A-law', A_LAW],
  ] as const)('%s: every code word survives decoding and encoding again (an echo is byte-exact)', (_label, format) => {
    const again = encodeAudio(decodeAudio(ALL_BYTES, format), format);
    // mu-law has two zeros (0x7f and 0xff); zero is written 0xff.
    const expected = format === MU_LAW ? Buffer.from(ALL_BYTES.map((byte) => (byte === 0x7f ? 0xff : byte))) : ALL_BYTES;
    expect(again).toEqual(expected);
  });

  it.each([
    ['mu-law', MU_LAW],
    ['A-law', A_LAW],
  ] as const)('%s quantises a sample to a close value', (_label, format) => {
    for (const sample of [-32_768, -20_000, -1000, -100, -1, 0, 1, 100, 1000, 20_000, 32_767]) {
      const [back] = decodeAudio(encodeAudio(Int16Array.of(sample), format), format);
      expect(Math.abs(back! - sample)).toBeLessThanOrEqual(Math.max(16, Math.abs(sample) / 16));
    }
  });

  it('reads 16-bit PCM little-endian and drops a trailing half sample', () => {
    expect(Array.from(decodeAudio(Buffer.from([0x01, 0x00, 0xff, 0xff, 0x07]), { type: 'audio/pcm', rate: 24_000 }))).toEqual([1, -1]);
  });
});

describe('reading a format over the current one', () => {
  const current: AudioFormat = { type: 'audio/pcm', rate: 16_000 };
  it.each([
    [undefined, { ok: true, format: current }],
    [{ rate: 48_000 }, { ok: true, format: { type: 'audio/pcm', rate: 48_000 } }],
    [{ type: 'audio/pcmu' }, { ok: true, format: MU_LAW }],
    [
      { type: 'audio/pcma', rate: 8000 },
      { ok: true, format: A_LAW },
    ],
    [
      { type: 'audio/pcm', rate: 7999 },
      { ok: false, param: 'f.rate' },
    ],
    [
      { type: 'audio/pcm', rate: 48_001 },
      { ok: false, param: 'f.rate' },
    ],
    [
      { type: 'audio/pcm', rate: '24000' },
      { ok: false, param: 'f.rate' },
    ],
    [
      { type: 'audio/pcmu', rate: 24_000 },
      { ok: false, param: 'f.rate' },
    ],
    [{ type: 'audio/wav' }, { ok: false, param: 'f.type' }],
    ['pcm', { ok: false, param: 'f' }],
  ])('%j', (value, expected) => {
    expect(readAudioFormat(value, 'f', current)).toMatchObject(expected);
  });
});
