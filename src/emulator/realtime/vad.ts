// Server voice activity detection by signal energy, in 20 ms windows. `threshold` (0..1, as in the
// session's turn_detection) scales the RMS a window must reach to count as speech: at the default 0.5 a
// window must reach 0.1 of full scale (-20 dBFS); at 1.0, 0.2. `silence_duration_ms` of quiet windows
// end a turn; `prefix_padding_ms` of audio before the first voiced window belongs to the turn.

export const VAD_WINDOW_MS = 20;
const FULL_SCALE_RMS_AT_THRESHOLD_ONE = 0.2;

export interface VadSettings {
  threshold: number;
  silenceDurationMs: number;
  prefixPaddingMs: number;
}

export const DEFAULT_VAD: VadSettings = { threshold: 0.5, silenceDurationMs: 500, prefixPaddingMs: 300 };

export type VadEvent = { type: 'speech_started'; atMs: number } | { type: 'speech_stopped'; atMs: number };

function windowRms(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (const sample of samples) sum += (sample / 32768) ** 2;
  return Math.sqrt(sum / samples.length);
}

/** Feeds windows in order and reports where speech starts and stops, in ms of input audio. */
export class EnergyVad {
  #settings: VadSettings;
  #speaking = false;
  #silentMs = 0;
  #positionMs: number;

  /** `positionMs`: where in the session's input the first window starts. */
  constructor(settings: VadSettings, positionMs = 0) {
    this.#settings = settings;
    this.#positionMs = positionMs;
  }

  /** New settings from the next window on; the position in the input and a turn in progress are kept. */
  set settings(settings: VadSettings) {
    this.#settings = settings;
  }

  get speaking(): boolean {
    return this.#speaking;
  }

  window(samples: Int16Array, durationMs: number): VadEvent | undefined {
    const voiced = windowRms(samples) >= this.#settings.threshold * FULL_SCALE_RMS_AT_THRESHOLD_ONE;
    const start = this.#positionMs;
    this.#positionMs += durationMs;
    if (voiced) {
      this.#silentMs = 0;
      if (!this.#speaking) {
        this.#speaking = true;
        return { type: 'speech_started', atMs: start };
      }
      return undefined;
    }
    if (!this.#speaking) return undefined;
    this.#silentMs += durationMs;
    if (this.#silentMs < this.#settings.silenceDurationMs) return undefined;
    this.#speaking = false;
    this.#silentMs = 0;
    return { type: 'speech_stopped', atMs: this.#positionMs };
  }
}
