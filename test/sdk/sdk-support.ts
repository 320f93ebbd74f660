import type { Emulator } from '../../src/emulator/server.ts';
import { isRecord } from '../../src/lib/json.ts';
import { generateSilence, generateTone, REALTIME_PCM } from 'discord-standin';

// Shared by the tests that drive the emulator with third-party SDKs: the emulator's default key and
// models, a spoken turn as 24 kHz PCM, and the script endpoint that makes the echo model call a tool.

export const EMULATOR_KEY = 'emulator-key';
export const VIDEO_MODEL = 'svc-imagine-video-1.5';
export const VOICE_MODEL = 'svc-voice-latest';
/** Server VAD that ends a turn quickly, so a test waits 200 ms of silence rather than the default 500. */
export const QUICK_VAD = { type: 'server_vad', threshold: 0.5, silence_duration_ms: 200, prefix_padding_ms: 0 } as const;

/** A 0.4 s tone loud enough for server VAD, with silence before and after it. */
export function spokenTurn(ms = 400): { speech: Int16Array; before: Int16Array; after: Int16Array } {
  return {
    before: generateSilence(100, REALTIME_PCM),
    speech: generateTone({ hz: 440, ms, amplitude: 0.4, format: REALTIME_PCM }),
    after: generateSilence(300, REALTIME_PCM),
  };
}

/** 20 ms frames of base64 PCM, as a client streaming live audio appends them. */
export function base64Frames(pcm: Int16Array): string[] {
  const frames: string[] = [];
  for (let offset = 0; offset < pcm.length; offset += 480) {
    const frame = pcm.subarray(offset, offset + 480);
    frames.push(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64'));
  }
  return frames;
}

/** Base64 audio deltas joined back into PCM. */
export function pcmOf(deltas: readonly string[]): Int16Array {
  const bytes = Buffer.concat(deltas.map((delta) => Buffer.from(delta, 'base64')));
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
}

/** Scripts the next user turn of the key's sessions (POST /_emulator/realtime/script); throws when refused. */
export async function scriptTurn(emulator: Emulator, script: Record<string, unknown>, key = EMULATOR_KEY): Promise<void> {
  const response = await fetch(`${emulator.listenUrl}/_emulator/realtime/script`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(script),
  });
  const body: unknown = await response.json();
  if (response.status !== 200 || !isRecord(body)) throw new Error(`the script was refused: ${response.status} ${JSON.stringify(body)}`);
}
