// Recognises a DAVE (end-to-end encrypted) media frame by the trailer Discord's DAVE protocol puts on
// every one: after the ciphertext, an 8-byte tag, a ULEB128 nonce, ULEB128 (offset, length) pairs of
// the ranges left in the clear, one byte giving the size of all of that plus itself and the marker, and
// the two-byte marker FA FA. @discordjs/voice hands such frames on undecrypted while its DAVE session has
// no keys yet (0.19.2); decoded as Opus they are loud noise, so the listener must know them.

const MARKER = 0xfa;
const TAG_BYTES = 8;
/** The tag, a one-byte nonce, the size byte and the marker. */
const MIN_SUPPLEMENTAL_BYTES = TAG_BYTES + 1 + 1 + 2;

/** Reads a ULEB128 number at `offset`, not past `end`; undefined when it runs over or is absurdly long. */
function readUleb128(bytes: Buffer, offset: number, end: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let index = offset, shift = 0; index < end && shift <= 28; index++, shift += 7) {
    const byte = bytes[index]!;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value, next: index + 1 };
  }
  return undefined;
}

/** Whether `packet` passes DAVE's protocol frame check: its trailer is well formed and fits the packet. */
export function isDaveFrame(packet: Buffer): boolean {
  const length = packet.length;
  if (length < MIN_SUPPLEMENTAL_BYTES || packet[length - 1] !== MARKER || packet[length - 2] !== MARKER) return false;
  const supplementalBytes = packet[length - 3]!;
  if (supplementalBytes < MIN_SUPPLEMENTAL_BYTES || supplementalBytes > length) return false;
  const mediaEnd = length - supplementalBytes;
  const rangesEnd = length - 3;
  const nonce = readUleb128(packet, mediaEnd + TAG_BYTES, rangesEnd);
  if (!nonce) return false;
  let cursor = nonce.next;
  let clearUpTo = 0;
  while (cursor < rangesEnd) {
    const offset = readUleb128(packet, cursor, rangesEnd);
    const size = offset && readUleb128(packet, offset.next, rangesEnd);
    if (!offset || !size || offset.value < clearUpTo || offset.value + size.value > mediaEnd) return false;
    clearUpTo = offset.value + size.value;
    cursor = size.next;
  }
  return true;
}
