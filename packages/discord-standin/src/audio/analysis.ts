// Opus is lossy: decoded audio never equals the input byte for byte. Tests compare what a listener
// would hear instead: the dominant frequency and the loudness of a window.

import { DISCORD_PCM, FULL_SCALE, type PcmFormat } from './format.ts';

/** Channels averaged, scaled to -1..1. */
export function toMono(pcm: Int16Array, channels = DISCORD_PCM.channels): Float64Array {
  const mono = new Float64Array(Math.floor(pcm.length / channels));
  for (let index = 0; index < mono.length; index++) {
    let sum = 0;
    for (let channel = 0; channel < channels; channel++) sum += pcm[index * channels + channel] ?? 0;
    mono[index] = sum / channels / FULL_SCALE;
  }
  return mono;
}

/** Root mean square of all samples, as a fraction of full scale (a full-scale sine is about 0.707). */
export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (const sample of pcm) sum += (sample / FULL_SCALE) ** 2;
  return Math.sqrt(sum / pcm.length);
}

/** Largest absolute sample, as a fraction of full scale. */
export function peak(pcm: Int16Array): number {
  let max = 0;
  for (const sample of pcm) max = Math.max(max, Math.abs(sample));
  return max / FULL_SCALE;
}

/** Hann windows by length: a window is a cosine per sample, and frames of one length are analysed by the hundred. */
const hannWindows = new Map<number, Float64Array>();

function hannWindow(length: number): Float64Array {
  const known = hannWindows.get(length);
  if (known) return known;
  const window = new Float64Array(length);
  for (let index = 0; index < length; index++) {
    window[index] = length === 1 ? 1 : 0.5 - 0.5 * Math.cos((2 * Math.PI * index) / (length - 1));
  }
  // Tests analyse a few lengths (a frame, a whole answer): keep those, not every length ever seen.
  if (hannWindows.size < 64) hannWindows.set(length, window);
  return window;
}

function windowed(pcm: Int16Array, format: PcmFormat): { samples: Float64Array; gain: number } {
  const samples = toMono(pcm, format.channels);
  const window = hannWindow(samples.length);
  let gain = 0;
  for (let index = 0; index < samples.length; index++) {
    samples[index] = (samples[index] ?? 0) * (window[index] ?? 0);
    gain += window[index] ?? 0;
  }
  return { samples, gain };
}

// Goertzel: the magnitude of one DFT bin, at any frequency, in O(n).
function goertzelMagnitude(samples: Float64Array, hz: number, sampleRate: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * hz) / sampleRate);
  let previous = 0;
  let beforePrevious = 0;
  for (const sample of samples) {
    const current = sample + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  const power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
  return Math.sqrt(Math.max(0, power));
}

/** Estimated amplitude (fraction of full scale) of the component at `hz` in the window. */
export function toneAmplitude(pcm: Int16Array, hz: number, format: PcmFormat = DISCORD_PCM): number {
  const { samples, gain } = windowed(pcm, format);
  if (gain === 0) return 0;
  return (2 * goertzelMagnitude(samples, hz, format.sampleRate)) / gain;
}

export interface DominantFrequencyOptions {
  minHz?: number;
  maxHz?: number;
  /** The PCM's layout; default Discord's 48 kHz stereo. */
  format?: PcmFormat;
}

/**
 * The frequency with the most energy in the window, to about 1 Hz: a coarse scan, then a fine one
 * around the best coarse bin. Use windows of 50 ms or more (resolution is about 1/length).
 */
export function dominantFrequency(pcm: Int16Array, options: DominantFrequencyOptions = {}): number {
  const minHz = options.minHz ?? 50;
  const maxHz = options.maxHz ?? 4000;
  const format = options.format ?? DISCORD_PCM;
  const { samples } = windowed(pcm, format);
  const best = (from: number, to: number, step: number): number => {
    let bestHz = from;
    let bestMagnitude = -1;
    for (let hz = from; hz <= to; hz += step) {
      const magnitude = goertzelMagnitude(samples, hz, format.sampleRate);
      if (magnitude > bestMagnitude) {
        bestMagnitude = magnitude;
        bestHz = hz;
      }
    }
    return bestHz;
  };
  const coarseStep = 5;
  const coarse = best(minHz, maxHz, coarseStep);
  return best(Math.max(minHz, coarse - coarseStep), Math.min(maxHz, coarse + coarseStep), 1);
}

export interface ToneAnalysis {
  dominantHz: number;
  rms: number;
  /** Share of the window's energy at the dominant frequency (a clean tone is close to 1). */
  purity: number;
}

export function analyzeTone(pcm: Int16Array, options: DominantFrequencyOptions = {}): ToneAnalysis {
  const dominantHz = dominantFrequency(pcm, options);
  const level = rms(pcm);
  const amplitude = toneAmplitude(pcm, dominantHz, options.format);
  // A sine of amplitude A has an RMS of A/sqrt(2).
  const purity = level === 0 ? 0 : Math.min(1, (amplitude / Math.SQRT2 / level) ** 2);
  return { dominantHz, rms: level, purity };
}

// A test waits for audio with a predicate such as byTone(received, 660, 330) that the stand-in checks again
// on every frame the bot sends, over every frame received so far: each frame's figures are worked out once
// (a received frame's PCM is never changed), or the checks grow with the square of the frames and a busy
// machine falls behind the audio it is recording.
const frameFigures = new WeakMap<Int16Array, Map<string, number>>();

function frameFigure(pcm: Int16Array, key: string, work: () => number): number {
  let figures = frameFigures.get(pcm);
  if (!figures) {
    figures = new Map();
    frameFigures.set(pcm, figures);
  }
  let figure = figures.get(key);
  if (figure === undefined) {
    figure = work();
    figures.set(key, figure);
  }
  return figure;
}

/** Frames that carry sound (not the silence Discord clients skip). */
export function audible<Frame extends { pcm: Int16Array }>(frames: readonly Frame[]): Frame[] {
  return frames.filter((frame) => frameFigure(frame.pcm, 'rms', () => rms(frame.pcm)) > 0.02);
}

/**
 * Frames that carry the tone at `hz` (a tenth of full scale or more) and clearly more than the one at
 * `otherHz`: the fade-in of a tone, or a codec transient between two answers, counts for neither.
 */
export function byTone<Frame extends { pcm: Int16Array }>(frames: readonly Frame[], hz: number, otherHz: number): Frame[] {
  const amplitude = (pcm: Int16Array, at: number) => frameFigure(pcm, `${at} Hz`, () => toneAmplitude(pcm, at));
  return frames.filter((frame) => {
    const level = amplitude(frame.pcm, hz);
    return level > 0.1 && level > 2 * amplitude(frame.pcm, otherHz);
  });
}
