import { readFileSync } from 'node:fs';

// The mp4 the emulator serves: a real, playable 2 s H.264 clip. Padding appends an mp4 `free` box, which
// players skip, so a padded file is still a valid video of the requested size.

const FIXTURE = readFileSync(new URL('./fixtures/sample.mp4', import.meta.url));
const BOX_HEADER = 8;

export function videoBytes(size: number | null): Buffer {
  if (size === null || size < FIXTURE.length + BOX_HEADER) return FIXTURE;
  const padding = Buffer.alloc(size - FIXTURE.length);
  padding.writeUInt32BE(padding.length, 0);
  padding.write('free', 4, 'latin1');
  return Buffer.concat([FIXTURE, padding]);
}

/** The fixture cut short after its first bytes (`[[truncated]]`): an mp4's `ftyp` box and the start of the next. */
export const TRUNCATED_BYTES = 64;

export function truncatedVideoBytes(): Buffer {
  return FIXTURE.subarray(0, TRUNCATED_BYTES);
}

export const FIXTURE_DURATION_S = 2;
