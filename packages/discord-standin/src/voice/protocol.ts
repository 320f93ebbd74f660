// The voice websocket's messages (gateway v8), as @discordjs/voice 0.19 sends and expects them.
// Client messages are untrusted input: parsed with checks, never cast.

export const VoiceOp = {
  Identify: 0,
  SelectProtocol: 1,
  Ready: 2,
  Heartbeat: 3,
  SessionDescription: 4,
  Speaking: 5,
  HeartbeatAck: 6,
  Resume: 7,
  Hello: 8,
  Resumed: 9,
  ClientsConnect: 11,
  Video: 12,
  ClientDisconnect: 13,
} as const;

/** DAVE (end-to-end encryption) uses ops 21-31 (dave-wire.ts names them). */
export const DAVE_OPS = { first: 21, last: 31 } as const;

const DAVE_TRANSITION_READY = 23;
const DAVE_INVALID_COMMIT_WELCOME = 31;

export function isDaveOp(op: number): boolean {
  return op >= DAVE_OPS.first && op <= DAVE_OPS.last;
}

export const VoiceCloseCode = {
  UnknownOpcode: 4001,
  DecodeError: 4002,
  NotAuthenticated: 4003,
  AuthenticationFailed: 4004,
  AlreadyAuthenticated: 4005,
  SessionNoLongerValid: 4006,
  ServerNotFound: 4011,
  UnknownProtocol: 4012,
  /** Kicked, channel deleted, or left: the client must not reconnect by itself. */
  Disconnected: 4014,
  /** The client resumes after this one. */
  ServerCrashed: 4015,
  UnknownEncryptionMode: 4016,
  /** A client that offers no DAVE protocol version where end-to-end encryption is required. */
  DaveProtocolRequired: 4017,
} as const;

export interface IdentifyData {
  serverId: string;
  userId: string;
  sessionId: string;
  token: string;
  maxDaveProtocolVersion: number;
}

export interface SelectProtocolData {
  protocol: string;
  address: string;
  port: number;
  mode: string;
}

export interface ResumeData {
  serverId: string;
  sessionId: string;
  token: string;
  seqAck: number | undefined;
}

export type ClientMessage =
  | { kind: 'identify'; data: IdentifyData }
  | { kind: 'selectProtocol'; data: SelectProtocolData }
  | { kind: 'heartbeat'; nonce: unknown }
  | { kind: 'speaking'; speaking: number; ssrc: number | undefined }
  | { kind: 'resume'; data: ResumeData }
  /** DAVE's JSON ops from a client: 23 (ready for a transition) and 31 (an invalid commit or Welcome). */
  | { kind: 'dave'; op: number; transitionId: number }
  /** Anything else with a numeric op: the caller decides (DAVE ops are tolerated, unknown ones close). */
  | { kind: 'other'; op: number };

export type ParseResult = { ok: true; message: ClientMessage } | { ok: false; reason: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

function numberField(record: Record<string, unknown>, key: string): number | undefined {
  const value = record[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function fail(reason: string): ParseResult {
  return { ok: false, reason };
}

export function parseClientMessage(text: string): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail('not JSON');
  }
  if (!isRecord(json)) return fail('not an object');
  const op = numberField(json, 'op');
  if (op === undefined || !Number.isInteger(op)) return fail('no numeric op');
  const d = json.d;

  switch (op) {
    case VoiceOp.Identify: {
      if (!isRecord(d)) return fail('IDENTIFY without d');
      const serverId = stringField(d, 'server_id');
      const userId = stringField(d, 'user_id');
      const sessionId = stringField(d, 'session_id');
      const token = stringField(d, 'token');
      if (serverId === undefined || userId === undefined || sessionId === undefined || token === undefined) {
        return fail('IDENTIFY needs server_id, user_id, session_id and token strings');
      }
      const maxDaveProtocolVersion = numberField(d, 'max_dave_protocol_version') ?? 0;
      return { ok: true, message: { kind: 'identify', data: { serverId, userId, sessionId, token, maxDaveProtocolVersion } } };
    }
    case VoiceOp.SelectProtocol: {
      if (!isRecord(d) || !isRecord(d.data)) return fail('SELECT_PROTOCOL without d.data');
      const protocol = stringField(d, 'protocol');
      const address = stringField(d.data, 'address');
      const port = numberField(d.data, 'port');
      const mode = stringField(d.data, 'mode');
      if (protocol === undefined || address === undefined || port === undefined || mode === undefined) {
        return fail('SELECT_PROTOCOL needs protocol, data.address, data.port and data.mode');
      }
      return { ok: true, message: { kind: 'selectProtocol', data: { protocol, address, port, mode } } };
    }
    case VoiceOp.Heartbeat: {
      // v8 sends {t, seq_ack}; older versions sent the nonce alone. Either way the nonce is echoed.
      const nonce = isRecord(d) ? d.t : d;
      return { ok: true, message: { kind: 'heartbeat', nonce } };
    }
    case VoiceOp.Speaking: {
      if (!isRecord(d)) return fail('SPEAKING without d');
      const speaking = numberField(d, 'speaking');
      if (speaking === undefined) return fail('SPEAKING needs a numeric speaking field');
      return { ok: true, message: { kind: 'speaking', speaking, ssrc: numberField(d, 'ssrc') } };
    }
    case VoiceOp.Resume: {
      if (!isRecord(d)) return fail('RESUME without d');
      const serverId = stringField(d, 'server_id');
      const sessionId = stringField(d, 'session_id');
      const token = stringField(d, 'token');
      if (serverId === undefined || sessionId === undefined || token === undefined) {
        return fail('RESUME needs server_id, session_id and token strings');
      }
      return { ok: true, message: { kind: 'resume', data: { serverId, sessionId, token, seqAck: numberField(d, 'seq_ack') } } };
    }
    case DAVE_TRANSITION_READY:
    case DAVE_INVALID_COMMIT_WELCOME: {
      const transitionId = isRecord(d) ? numberField(d, 'transition_id') : undefined;
      if (transitionId === undefined || !Number.isInteger(transitionId)) return fail(`op ${op} needs a numeric transition_id`);
      return { ok: true, message: { kind: 'dave', op, transitionId } };
    }
    default:
      return { ok: true, message: { kind: 'other', op } };
  }
}
