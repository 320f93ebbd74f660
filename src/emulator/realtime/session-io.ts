import { randomBytes } from 'node:crypto';

// What the parts of a realtime session share: ids in the API's shape, and the two ways they answer.

/** A client event, parsed: an object with a string `type`. */
export type ClientEvent = Readonly<Record<string, unknown>>;

/** Sends a server event of `type` (its event_id is added). */
export type Emit = (type: string, fields?: Record<string, unknown>) => void;

/** Answers the client event `clientEventId` with an invalid_request_error of `code`, about `param`. */
export type Refuse = (code: string, message: string, clientEventId?: unknown, param?: string | null) => void;

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}
