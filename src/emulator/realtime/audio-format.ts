import { isRecord } from '../../lib/json.ts';
import type { Result } from '../../lib/result.ts';

// The realtime audio formats of docs/gateway.md ("Audio formats"): `audio/pcm` (16-bit little-endian, 8000-48000 Hz) and
// the G.711 pair `audio/pcmu` (mu-law) and `audio/pcma` (A-law) at 8 kHz, base64 in JSON. The session
// works on 16-bit samples; these functions convert at its edges.

const AUDIO_ENCODINGS = ['audio/pcm', 'audio/pcmu', 'audio/pcma'] as const;
export type AudioEncoding = (typeof AUDIO_ENCODINGS)[number];

export interface AudioFormat {
  type: AudioEncoding;
  rate: number;
}

export const DEFAULT_AUDIO_FORMAT: AudioFormat = { type: 'audio/pcm', rate: 24_000 };
const PCM_RATE = { min: 8000, max: 48_000 } as const;
const G711_RATE = 8000;

export type FormatReading = Result<{ format: AudioFormat }, { param: string }>;

/**
 * A `format` object of `session.update` (`param` is where it sits, for the error), over the current one:
 * a missing type keeps the current type, a missing rate the current rate (or 8 kHz for G.711).
 */
export function readAudioFormat(value: unknown, param: string, current: AudioFormat): FormatReading {
  if (value === undefined) return { ok: true, format: current };
  if (!isRecord(value)) return { ok: false, param, message: `${param} must be an object with type and rate.` };
  const typeValue = value.type ?? current.type;
  const type = AUDIO_ENCODINGS.find((encoding) => encoding === typeValue);
  if (type === undefined)
    return { ok: false, param: `${param}.type`, message: `${param}.type must be one of ${AUDIO_ENCODINGS.join(', ')}.` };
  const rate = value.rate;
  if (type === 'audio/pcm') {
    const effective = rate ?? (current.type === 'audio/pcm' ? current.rate : DEFAULT_AUDIO_FORMAT.rate);
    if (typeof effective !== 'number' || !Number.isInteger(effective) || effective < PCM_RATE.min || effective > PCM_RATE.max) {
      return {
        ok: false,
        param: `${param}.rate`,
        message: `${param}.rate must be a whole number of Hz from ${PCM_RATE.min} to ${PCM_RATE.max} for audio/pcm.`,
      };
    }
    return { ok: true, format: { type, rate: effective } };
  }
  if (rate !== undefined && rate !== G711_RATE) {
    return { ok: false, param: `${param}.rate`, message: `${param}.rate must be ${G711_RATE} for ${type} (G.711 is 8 kHz).` };
  }
  return { ok: true, format: { type, rate: G711_RATE } };
}

function muLawToSample(byte: number): number {
  const inverted = ~byte & 0xff;
  const magnitude = ((((inverted & 0x0f) << 3) + 0x84) << ((inverted & 0x70) >> 4)) - 0x84;
  return inverted & 0x80 ? -magnitude : magnitude;
}

function sampleToMuLaw(sample: number): number {
  const negative = sample < 0;
  const magnitude = Math.min(negative ? -sample : sample, 32_635) + 0x84;
  let segment = 7;
  while (segment > 0 && (magnitude & (0x80 << segment)) === 0) segment--;
  const mantissa = (magnitude >> (segment + 3)) & 0x0f;
  return ~((negative ? 0x80 : 0) | (segment << 4) | mantissa) & 0xff;
}

function aLawToSample(byte: number): number {
  const value = byte ^ 0x55;
  const segment = (value & 0x70) >> 4;
  const base = ((value & 0x0f) << 4) + (segment === 0 ? 8 : 0x108);
  const magnitude = segment > 1 ? base << (segment - 1) : base;
  return value & 0x80 ? magnitude : -magnitude;
}

function sampleToALaw(sample: number): number {
  const positive = sample >= 0;
  const magnitude = Math.min(positive ? sample >> 3 : -(sample >> 3) - 1, 0xfff);
  let segment = 0;
  while (segment < 7 && magnitude > (0x20 << segment) - 1) segment++;
  const mantissa = segment < 2 ? (magnitude >> 1) & 0x0f : (magnitude >> segment) & 0x0f;
  return ((segment << 4) | mantissa) ^ (positive ? 0xd5 : 0x55);
}

export function decodeAudio(bytes: Buffer, format: AudioFormat): Int16Array {
  if (format.type === 'audio/pcm') {
    // A trailing odd byte is half a sample: dropped, as before.
    const samples = new Int16Array(Math.floor(bytes.length / 2));
    for (let index = 0; index < samples.length; index++) samples[index] = bytes.readInt16LE(index * 2);
    return samples;
  }
  const toSample = format.type === 'audio/pcmu' ? muLawToSample : aLawToSample;
  return Int16Array.from(bytes, toSample);
}

export function encodeAudio(samples: Int16Array, format: AudioFormat): Buffer {
  if (format.type === 'audio/pcm') {
    const bytes = Buffer.alloc(samples.length * 2);
    samples.forEach((sample, index) => bytes.writeInt16LE(sample, index * 2));
    return bytes;
  }
  const toByte = format.type === 'audio/pcmu' ? sampleToMuLaw : sampleToALaw;
  return Buffer.from(Array.from(samples, toByte));
}
