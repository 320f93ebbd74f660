// Byte framing of the DAVE voice-gateway ops 25-30, as Discord's whitepaper (protocol.md, "Voice Gateway
// Opcodes") describes them and as @discordjs/voice 0.19.2 / @snazzah/davey 0.1.12 / libdave actually
// read and write them. See README.md for the sources of each fact.
//
// Server -> client binary frame: u16 BE sequence number, u8 opcode, payload.
// Client -> server binary frame: u8 opcode, payload (no sequence number).

/** MLS variable-size vector length header (RFC 9420 section 2.1.2). */
export function encodeVarint(n) {
  if (n < 0x40) return Buffer.from([n]);
  if (n < 0x4000) return Buffer.from([0x40 | (n >> 8), n & 0xff]);
  if (n < 0x40000000) {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n, 0);
    b[0] |= 0x80;
    return b;
  }
  throw new RangeError('varint too large');
}

/** Returns [value, bytesRead]. Rejects non-minimal encodings as RFC 9420 requires. */
export function decodeVarint(buf, offset = 0) {
  const first = buf[offset];
  if (first === undefined) throw new RangeError('varint: no data');
  const prefix = first >> 6;
  if (prefix === 0) return [first & 0x3f, 1];
  if (prefix === 1) {
    const v = ((first & 0x3f) << 8) | buf[offset + 1];
    if (v < 0x40) throw new RangeError('varint: not minimal');
    return [v, 2];
  }
  if (prefix === 2) {
    const v = (((first & 0x3f) << 24) >>> 0) + (buf[offset + 1] << 16) + (buf[offset + 2] << 8) + buf[offset + 3];
    if (v < 0x4000) throw new RangeError('varint: not minimal');
    return [v, 4];
  }
  throw new RangeError('varint: invalid prefix 0b11');
}

/** opaque data<V> */
export function vec(bytes) {
  return Buffer.concat([encodeVarint(bytes.length), Buffer.from(bytes)]);
}

export const Op = {
  DavePrepareTransition: 21,
  DaveExecuteTransition: 22,
  DaveTransitionReady: 23,
  DavePrepareEpoch: 24,
  DaveMlsExternalSender: 25,
  DaveMlsKeyPackage: 26,
  DaveMlsProposals: 27,
  DaveMlsCommitWelcome: 28,
  DaveMlsAnnounceCommitTransition: 29,
  DaveMlsWelcome: 30,
  DaveMlsInvalidCommitWelcome: 31,
};

export const ProposalsOperation = { APPEND: 0, REVOKE: 1 };

/** Server -> client binary message. */
export function serverBinary(seq, op, payload) {
  const head = Buffer.alloc(3);
  head.writeUInt16BE(seq & 0xffff, 0);
  head.writeUInt8(op, 2);
  return Buffer.concat([head, payload]);
}

/** Parse a server -> client binary message the way @discordjs/voice's VoiceWebSocket.onMessage does. */
export function parseServerBinary(buf) {
  return { seq: buf.readUInt16BE(0), op: buf.readUInt8(2), payload: buf.subarray(3) };
}

/** Client -> server binary message (VoiceWebSocket.sendBinaryMessage). */
export function clientBinary(op, payload) {
  return Buffer.concat([Buffer.from([op]), payload]);
}

export function parseClientBinary(buf) {
  return { op: buf.readUInt8(0), payload: buf.subarray(1) };
}

/** op 27 payload: u8 operation_type, then MLSMessage proposal_messages<V> or ProposalRef proposal_refs<V>. */
export function proposalsPayload(operation, items) {
  const body = Buffer.concat(
    operation === ProposalsOperation.APPEND ? items.map((m) => Buffer.from(m)) : items.map((ref) => vec(ref)),
  );
  return Buffer.concat([Buffer.from([operation]), vec(body)]);
}

/** op 29 / op 30 payload: u16 BE transition_id, then the commit MLSMessage / the Welcome. */
export function transitionPayload(transitionId, bytes) {
  const head = Buffer.alloc(2);
  head.writeUInt16BE(transitionId, 0);
  return Buffer.concat([head, Buffer.from(bytes)]);
}
