// Test signals: pure tones and digital silence, 48 kHz stereo interleaved.

import { DISCORD_PCM, FULL_SCALE, type PcmFormat } from './format.ts';

export interface ToneOptions {
  hz: number;
  ms: number;
  /** Peak level as a fraction of full scale, 0..1. Default 0.5. */
  amplitude?: number;
  /** Default Discord's 48 kHz stereo. */
  format?: PcmFormat;
}

function sampleCount(ms: number, format: PcmFormat): number {
  return Math.round((ms * format.sampleRate) / 1000) * format.channels;
}

// A tone that starts or stops at full level clicks, and a click spreads energy over every frequency;
// a few milliseconds of ramp keep the spectrum clean for the frequency checks.
const RAMP_MS = 5;

export function generateTone(options: ToneOptions): Int16Array {
  const amplitude = options.amplitude ?? 0.5;
  const { sampleRate, channels } = options.format ?? DISCORD_PCM;
  if (!(options.hz > 0 && options.hz < sampleRate / 2)) throw new RangeError(`tone frequency out of range: ${options.hz}`);
  if (!(amplitude >= 0 && amplitude <= 1)) throw new RangeError(`amplitude must be within 0..1: ${amplitude}`);
  if (!(options.ms >= 0)) throw new RangeError(`duration must not be negative: ${options.ms}`);

  const pcm = new Int16Array(sampleCount(options.ms, { sampleRate, channels }));
  const frames = pcm.length / channels;
  const rampFrames = Math.min(Math.floor(frames / 2), Math.round((RAMP_MS * sampleRate) / 1000));
  const peak = amplitude * FULL_SCALE;
  for (let index = 0; index < frames; index++) {
    const ramp = rampFrames === 0 ? 1 : Math.min(1, index / rampFrames, (frames - 1 - index) / rampFrames);
    const value = Math.round(peak * ramp * Math.sin((2 * Math.PI * options.hz * index) / sampleRate));
    for (let channel = 0; channel < channels; channel++) pcm[index * channels + channel] = value;
  }
  return pcm;
}

/** Digital silence: what a muted or quiet microphone produces, and what real clients never transmit. */
export function generateSilence(ms: number, format: PcmFormat = DISCORD_PCM): Int16Array {
  return new Int16Array(sampleCount(ms, format));
}

/** Speech-like audio (48 kHz stereo): a tone with a little seeded noise, so Opus works about as hard as on a voice. */
export function speechLikeTone(seconds: number): Int16Array {
  const tone = generateTone({ hz: 220, ms: seconds * 1000, amplitude: 0.4 });
  let seed = 1;
  for (let i = 0; i < tone.length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    tone[i] = Math.max(-32768, Math.min(32767, tone[i]! + ((seed / 2 ** 31) * 2 - 1) * 2000));
  }
  return tone;
}
