// Discord carries voice as 48 kHz stereo; every helper in the stand-in speaks this one PCM layout:
// interleaved signed 16-bit samples, left then right.

export interface PcmFormat {
  sampleRate: number;
  channels: number;
}

export const SAMPLE_RATE = 48_000;
export const CHANNELS = 2;
export const SAMPLES_PER_MS = SAMPLE_RATE / 1000;
/** Discord's frame: 20 ms, 960 samples per channel, which is also the RTP timestamp step. */
export const FRAME_MS = 20;
export const FRAME_SAMPLES_PER_CHANNEL = FRAME_MS * SAMPLES_PER_MS;
export const FULL_SCALE = 32_767;
/** Discord's PCM: 48 kHz stereo interleaved. */
export const DISCORD_PCM: PcmFormat = { sampleRate: SAMPLE_RATE, channels: CHANNELS };
/** The realtime session's PCM: 24 kHz mono. */
export const REALTIME_PCM: PcmFormat = { sampleRate: 24_000, channels: 1 };

export function interleavedLength(ms: number): number {
  return Math.round(ms * SAMPLES_PER_MS) * CHANNELS;
}

export function pcmDurationMs(pcm: Int16Array): number {
  return pcm.length / CHANNELS / SAMPLES_PER_MS;
}

export function concatPcm(...parts: Int16Array[]): Int16Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const joined = new Int16Array(total);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}

/** A window of `ms` starting `fromMs` into the PCM (clamped to what exists). */
export function slicePcm(pcm: Int16Array, fromMs: number, ms: number): Int16Array {
  const start = Math.min(pcm.length, interleavedLength(fromMs));
  return pcm.subarray(start, Math.min(pcm.length, start + interleavedLength(ms)));
}
