// What a downloaded video must start with before the bot posts it as one: an ISO base media file (mp4)
// opens with an `ftyp` box, a WebM (Matroska) file with the EBML magic number. Anything else (an error
// page answered 200, a file of another kind) is not posted.

export type VideoContainer = 'mp4' | 'webm';

/** How many leading bytes the check reads. */
export const VIDEO_SIGNATURE_BYTES = 12;

const FTYP = Buffer.from('ftyp', 'latin1');
const EBML_MAGIC = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);

/** The container a file's first bytes announce, or undefined when they are not a video's. */
export function videoContainerOf(head: Buffer): VideoContainer | undefined {
  if (head.length >= 8 && head.subarray(4, 8).equals(FTYP)) return 'mp4';
  if (head.length >= EBML_MAGIC.length && head.subarray(0, EBML_MAGIC.length).equals(EBML_MAGIC)) return 'webm';
  return undefined;
}
