// The one audio format inside the bot: what the realtime session speaks (audio/pcm, 24 kHz, mono,
// 16-bit little-endian), cut in Discord's 20 ms frames. libopus decodes Discord's packets straight to it
// and encodes from it (Opus packets carry no sample rate), so nothing is resampled in JavaScript.

export const SAMPLE_RATE = 24_000;
export const CHANNELS = 1;
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (SAMPLE_RATE / 1000) * FRAME_MS;
export const BYTES_PER_SAMPLE = 2;

export function silentFrame(): Int16Array {
  return new Int16Array(FRAME_SAMPLES);
}

/** Little-endian PCM bytes as samples (copied when the bytes are not 2-byte aligned). */
export function bytesToSamples(bytes: Buffer): Int16Array {
  const usable = bytes.length - (bytes.length % BYTES_PER_SAMPLE);
  if (bytes.byteOffset % BYTES_PER_SAMPLE === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, usable / BYTES_PER_SAMPLE);
  const copy = Buffer.allocUnsafe(usable);
  bytes.copy(copy, 0, 0, usable);
  return new Int16Array(copy.buffer, copy.byteOffset, usable / BYTES_PER_SAMPLE);
}

export function samplesToBytes(samples: Int16Array): Buffer {
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}
