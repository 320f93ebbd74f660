// DAVE's messages on the voice websocket (protocol v1, ops 21-31), byte for byte as Discord's voice
// gateway frames them and as @discordjs/voice 0.19.2 and @snazzah/davey 0.1.12 read and write them:
//   server -> client binary: u16 BE sequence number, u8 op, payload
//   client -> server binary: u8 op, payload (no sequence number)
// Ops 21-24 and 31 are JSON. Payload layouts: docs/research/dave-probe/README.md, "Byte formats".

export const DaveOp = {
  PrepareTransition: 21,
  ExecuteTransition: 22,
  TransitionReady: 23,
  PrepareEpoch: 24,
  MlsExternalSender: 25,
  MlsKeyPackage: 26,
  MlsProposals: 27,
  MlsCommitWelcome: 28,
  MlsAnnounceCommitTransition: 29,
  MlsWelcome: 30,
  MlsInvalidCommitWelcome: 31,
} as const;

/** The DAVE protocol version the stand-in speaks (davey's DAVE_PROTOCOL_VERSION). */
export const DAVE_PROTOCOL_VERSION = 1;

export const ProposalsOperation = { Append: 0, Revoke: 1 } as const;
export type ProposalsOperationType = (typeof ProposalsOperation)[keyof typeof ProposalsOperation];

/** MLS variable-length vector header (RFC 9420 section 2.1.2). */
export function encodeVarint(value: number): Buffer {
  if (value < 0x40) return Buffer.from([value]);
  if (value < 0x4000) return Buffer.from([0x40 | (value >> 8), value & 0xff]);
  if (value < 0x40000000) {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(value, 0);
    bytes[0] = (bytes[0] ?? 0) | 0x80;
    return bytes;
  }
  throw new RangeError('MLS varint too large');
}

/** Returns the value and how many bytes it took; refuses non-minimal encodings as RFC 9420 requires. */
export function decodeVarint(bytes: Uint8Array, offset = 0): { value: number; length: number } {
  const first = bytes[offset];
  if (first === undefined) throw new RangeError('MLS varint: no data');
  const prefix = first >> 6;
  if (prefix === 0) return { value: first & 0x3f, length: 1 };
  if (prefix === 1) {
    if (offset + 2 > bytes.length) throw new RangeError('MLS varint: truncated');
    const value = ((first & 0x3f) << 8) | (bytes[offset + 1] ?? 0);
    if (value < 0x40) throw new RangeError('MLS varint: not minimal');
    return { value, length: 2 };
  }
  if (prefix === 2) {
    if (offset + 4 > bytes.length) throw new RangeError('MLS varint: truncated');
    const value = ((first & 0x3f) << 24) + ((bytes[offset + 1] ?? 0) << 16) + ((bytes[offset + 2] ?? 0) << 8) + (bytes[offset + 3] ?? 0);
    if (value < 0x4000) throw new RangeError('MLS varint: not minimal');
    return { value, length: 4 };
  }
  throw new RangeError('MLS varint: invalid prefix 0b11');
}

/** `opaque data<V>`: the bytes behind their varint length. */
export function vector(bytes: Uint8Array): Buffer {
  return Buffer.concat([encodeVarint(bytes.length), bytes]);
}

/** Reads one `opaque data<V>` at `offset`; returns the bytes and where the next field starts. */
export function readVector(bytes: Uint8Array, offset = 0): { body: Buffer; next: number } {
  const { value, length } = decodeVarint(bytes, offset);
  const start = offset + length;
  if (start + value > bytes.length) throw new RangeError('MLS vector longer than its message');
  return { body: Buffer.from(bytes.subarray(start, start + value)), next: start + value };
}

/** A server -> client binary frame. */
export function serverBinaryFrame(sequence: number, op: number, payload: Uint8Array): Buffer {
  const head = Buffer.alloc(3);
  head.writeUInt16BE(sequence & 0xffff, 0);
  head.writeUInt8(op, 2);
  return Buffer.concat([head, payload]);
}

/** A client -> server binary frame, split; undefined when it is empty. */
export function parseClientBinaryFrame(frame: Buffer): { op: number; payload: Buffer } | undefined {
  if (frame.length < 1) return undefined;
  return { op: frame.readUInt8(0), payload: frame.subarray(1) };
}

/** Op 27's payload: the operation type, then the proposals (MLSMessages) or refs, in one vector. */
export function proposalsPayload(operation: ProposalsOperationType, items: readonly Uint8Array[]): Buffer {
  const body = Buffer.concat(
    operation === ProposalsOperation.Append ? items.map((item) => Buffer.from(item)) : items.map((ref) => vector(ref)),
  );
  return Buffer.concat([Buffer.from([operation]), vector(body)]);
}

/** Op 29's and op 30's payload: the transition id, then the commit (an MLSMessage) or the Welcome. */
export function transitionPayload(transitionId: number, bytes: Uint8Array): Buffer {
  const head = Buffer.alloc(2);
  head.writeUInt16BE(transitionId, 0);
  return Buffer.concat([head, bytes]);
}

/** Snowflakes are above 2^53: the basic credential identity is the user id as u64 big-endian. */
export function userIdBigEndian(userId: string): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(userId));
  return bytes;
}

/** The media key exporter's context is the sender's user id as u64 little-endian. */
export function userIdLittleEndian(userId: string): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64LE(BigInt(userId));
  return bytes;
}

export function userIdFromIdentity(identity: Uint8Array): string {
  if (identity.length !== 8) throw new Error(`a DAVE credential identity is 8 bytes, not ${identity.length}`);
  return Buffer.from(identity).readBigUInt64BE().toString();
}
