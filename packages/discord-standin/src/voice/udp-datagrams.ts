// What arrives on the voice UDP port: 8-byte keepalives, 74-byte IP discovery requests, and RTP.

import { isIPv4 } from 'node:net';

export const KEEPALIVE_LENGTH = 8;
export const IP_DISCOVERY_LENGTH = 74;
const IP_DISCOVERY_REQUEST = 1;
const IP_DISCOVERY_RESPONSE = 2;
// The length field counts the bytes after the type and length fields.
const IP_DISCOVERY_BODY_LENGTH = 70;
const ADDRESS_OFFSET = 8;
const PORT_OFFSET = 72;

export type VoiceDatagram =
  { kind: 'keepalive' } | { kind: 'ipDiscovery'; ssrc: number } | { kind: 'rtp'; ssrc: number } | { kind: 'unknown' };

export function classifyDatagram(message: Buffer): VoiceDatagram {
  if (message.length === KEEPALIVE_LENGTH) return { kind: 'keepalive' };
  if (
    message.length === IP_DISCOVERY_LENGTH &&
    message.readUInt16BE(0) === IP_DISCOVERY_REQUEST &&
    message.readUInt16BE(2) === IP_DISCOVERY_BODY_LENGTH
  ) {
    return { kind: 'ipDiscovery', ssrc: message.readUInt32BE(4) };
  }
  if (message.length > 12 && (message[0] ?? 0) >> 6 === 2) return { kind: 'rtp', ssrc: message.readUInt32BE(8) };
  return { kind: 'unknown' };
}

/** The reply telling the client the address and port its datagrams came from. */
export function buildIpDiscoveryResponse(ssrc: number, address: string, port: number): Buffer {
  if (!isIPv4(address)) throw new Error(`IP discovery needs an IPv4 address, got ${address}`);
  const response = Buffer.alloc(IP_DISCOVERY_LENGTH);
  response.writeUInt16BE(IP_DISCOVERY_RESPONSE, 0);
  response.writeUInt16BE(IP_DISCOVERY_BODY_LENGTH, 2);
  response.writeUInt32BE(ssrc >>> 0, 4);
  // NUL-terminated: the rest of the zero-filled address field terminates it.
  response.write(address, ADDRESS_OFFSET, 'utf8');
  response.writeUInt16BE(port, PORT_OFFSET);
  return response;
}
