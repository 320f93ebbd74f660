import { decodeAudio } from './audio-format.ts';
import type { SessionConfig } from './session-config.ts';
import { newId, type ClientEvent, type Emit, type Refuse } from './session-io.ts';
import { DEFAULT_VAD, EnergyVad, VAD_WINDOW_MS, type VadSettings } from './vad.ts';

// A session's input audio: appended, committed and cleared by the client, or cut into turns by server
// VAD; what is buffered stays within MAX_BUFFERED_AUDIO_MS, on the session's input timeline.

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The most input audio a session holds uncommitted, at any rate (the spec gives no bound): in manual
 * mode what does not fit is dropped, with server VAD a turn keeps its newest part; either way the client
 * hears of it in an `input_audio_buffer_full` error.
 */
export const MAX_BUFFERED_AUDIO_MS = 180_000;

/** What the buffer needs of its session. */
export interface InputBufferDeps {
  config: SessionConfig;
  emit: Emit;
  refuse: Refuse;
  /** Whether the caller's audio is dropped now (a force_message with `interruptible: false` plays). */
  muted: () => boolean;
  /** A user turn ends: its audio, the item id it gets, and whether the model answers it at once (server VAD). */
  commitTurn: (audio: Int16Array, itemId: string, respond: boolean) => void;
  /** Each append's audio as it arrived (muted or not), for the session's journal of loudness. */
  heard?: (audio: Int16Array) => void;
}

export class InputAudioBuffer {
  readonly #deps: InputBufferDeps;
  /** Server VAD and the settings it runs with; undefined in manual mode. */
  #vad: { detector: EnergyVad; settings: VadSettings } | undefined = { detector: new EnergyVad(DEFAULT_VAD), settings: DEFAULT_VAD };
  /** Input not yet committed, starting at #startMs of the session's input timeline. */
  #parts: Int16Array[] = [];
  #samples = 0;
  #startMs = 0;
  /** Samples that do not yet fill a whole VAD window. */
  #window = new Int16Array(0);
  #turnStartMs = 0;
  /** Whether the turn in progress (server VAD) outgrew the buffer and the client was told. */
  #turnOverflowReported = false;
  /** The item id server VAD gave the turn in progress when its speech started. */
  #pendingUserItem: string | undefined;

  constructor(deps: InputBufferDeps) {
    this.#deps = deps;
  }

  get #rate(): number {
    return this.#deps.config.inputFormat.rate;
  }

  /** Follows a change of turn detection (session.update): undefined keeps it, null is manual mode. */
  setTurnDetection(settings: VadSettings | null | undefined): void {
    if (settings === null) {
      this.#vad = undefined;
      this.#window = new Int16Array(0);
    } else if (settings !== undefined) {
      // The VAD keeps its place in the input: restarting its clock would misplace every later turn.
      if (this.#vad) this.#vad.detector.settings = settings;
      this.#vad = { detector: this.#vad?.detector ?? new EnergyVad(settings, this.#endMs()), settings };
    }
  }

  /** Drops everything (the session closed). */
  reset(): void {
    this.#parts = [];
    this.#samples = 0;
    this.#window = new Int16Array(0);
  }

  /** input_audio_buffer.clear */
  clear(): void {
    this.#trim(this.#endMs());
    this.#window = new Int16Array(0);
    this.#deps.emit('input_audio_buffer.cleared');
  }

  #endMs(): number {
    return this.#startMs + (this.#samples / this.#rate) * 1000;
  }

  /** The buffered audio between two points of the input timeline. */
  #audio(fromMs: number, toMs: number): Int16Array {
    const all = new Int16Array(this.#samples);
    let offset = 0;
    for (const part of this.#parts) {
      all.set(part, offset);
      offset += part.length;
    }
    const toSample = (ms: number) => Math.min(all.length, Math.max(0, Math.round(((ms - this.#startMs) * this.#rate) / 1000)));
    return all.slice(toSample(fromMs), Math.max(toSample(fromMs), toSample(toMs)));
  }

  /** Forgets the input before `untilMs`: whole appended parts at once, so it costs little however often it runs. */
  #trim(untilMs: number): void {
    let drop = Math.min(this.#samples, Math.max(0, Math.round(((untilMs - this.#startMs) * this.#rate) / 1000)));
    this.#samples -= drop;
    let whole = 0;
    while (whole < this.#parts.length && this.#parts[whole]!.length <= drop) drop -= this.#parts[whole++]!.length;
    this.#parts.splice(0, whole);
    // A copy, so the dropped head's memory goes with it.
    if (drop > 0) this.#parts[0] = this.#parts[0]!.slice(drop);
    this.#startMs = untilMs;
  }

  #maxSamples(): number {
    return Math.round((MAX_BUFFERED_AUDIO_MS * this.#rate) / 1000);
  }

  #full(clientEventId: unknown, dropped: string): void {
    this.#deps.refuse(
      'input_audio_buffer_full',
      `The input audio buffer holds at most ${MAX_BUFFERED_AUDIO_MS / 1000} s of uncommitted audio; ${dropped}.`,
      clientEventId,
      'audio',
    );
  }

  #commitTurn(audio: Int16Array, respond: boolean): void {
    const itemId = this.#pendingUserItem ?? newId('item');
    this.#pendingUserItem = undefined;
    this.#deps.commitTurn(audio, itemId, respond);
  }

  /** input_audio_buffer.append */
  append(event: ClientEvent): void {
    const text = typeof event.audio === 'string' ? event.audio : undefined;
    if (text === undefined || !BASE64.test(text) || text.length % 4 !== 0) {
      this.#deps.refuse(
        'invalid_audio',
        `input_audio_buffer.append needs audio: base64 ${this.#deps.config.inputFormat.type}.`,
        event.event_id,
        'audio',
      );
      return;
    }
    let samples = decodeAudio(Buffer.from(text, 'base64'), this.#deps.config.inputFormat);
    this.#deps.heard?.(samples);
    // docs/gateway.md, "force_message": while a force_message with interruptible false plays, the caller's audio is dropped.
    if (this.#deps.muted()) return;
    const vad = this.#vad;
    if (!vad) {
      // Manual mode: what does not fit waits for no commit; it is dropped, and the client is told.
      const room = Math.max(0, this.#maxSamples() - this.#samples);
      if (samples.length > room) {
        this.#full(event.event_id, room === 0 ? 'this audio was dropped: commit or clear the buffer' : 'the end of this audio was dropped');
        samples = samples.slice(0, room);
      }
      if (samples.length === 0) return;
      this.#parts.push(samples);
      this.#samples += samples.length;
      return;
    }
    this.#parts.push(samples);
    this.#samples += samples.length;
    const windowSamples = Math.round((this.#rate * VAD_WINDOW_MS) / 1000);
    let pending = new Int16Array(this.#window.length + samples.length);
    pending.set(this.#window);
    pending.set(samples, this.#window.length);
    while (pending.length >= windowSamples) {
      const verdict = vad.detector.window(pending.subarray(0, windowSamples), VAD_WINDOW_MS);
      pending = pending.subarray(windowSamples);
      if (verdict?.type === 'speech_started') {
        this.#turnOverflowReported = false;
        this.#turnStartMs = Math.max(this.#startMs, verdict.atMs - vad.settings.prefixPaddingMs);
        this.#pendingUserItem = newId('item');
        this.#deps.emit('input_audio_buffer.speech_started', { audio_start_ms: this.#turnStartMs, item_id: this.#pendingUserItem });
      } else if (verdict?.type === 'speech_stopped') {
        this.#deps.emit('input_audio_buffer.speech_stopped', { audio_end_ms: verdict.atMs, item_id: this.#pendingUserItem });
        // The turn is the speech itself: from the prefix padding to the last voiced window.
        this.#commitTurn(this.#audio(this.#turnStartMs, verdict.atMs - vad.settings.silenceDurationMs), true);
        this.#trim(verdict.atMs);
      }
    }
    this.#window = Int16Array.from(pending);
    if (vad.detector.speaking && this.#samples > this.#maxSamples()) {
      // A turn that never pauses keeps its newest part; the client hears of it once per turn.
      this.#trim(this.#endMs() - MAX_BUFFERED_AUDIO_MS);
      this.#turnStartMs = Math.max(this.#turnStartMs, this.#startMs);
      if (!this.#turnOverflowReported) this.#full(event.event_id, 'this turn keeps only its newest audio');
      this.#turnOverflowReported = true;
    }
    if (!vad.detector.speaking) {
      // Between turns only the prefix padding can still matter; silence fed for hours must not pile up.
      const processedEndMs = this.#endMs() - (this.#window.length / this.#rate) * 1000;
      this.#trim(Math.max(this.#startMs, processedEndMs - vad.settings.prefixPaddingMs));
    }
  }

  /** input_audio_buffer.commit */
  commit(event: ClientEvent): void {
    if (this.#vad) {
      this.#deps.refuse(
        'commit_in_server_vad',
        'With server VAD the server commits turns; input_audio_buffer.commit is for manual mode.',
        event.event_id,
      );
      return;
    }
    if (this.#samples === 0) {
      this.#deps.refuse('input_audio_buffer_commit_empty', 'The input audio buffer is empty.', event.event_id);
      return;
    }
    const endMs = this.#endMs();
    this.#commitTurn(this.#audio(this.#startMs, endMs), false);
    this.#trim(endMs);
  }
}
