import { readFileSync } from 'node:fs';

// Media the tests hand to the bot, the stand-ins and the gateway emulator.

/** The emulator's own sample video: a real mp4 (ftyp box first), a few KB. */
export const SAMPLE_MP4 = readFileSync(new URL('../../src/emulator/fixtures/sample.mp4', import.meta.url));

/** The start of a 1x1 PNG: its signature and IHDR, enough for anything that sniffs the format. */
export const PNG_HEADER = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
