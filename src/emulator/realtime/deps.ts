import type { Logger } from '../../lib/log.ts';

// The seam between the emulator's HTTP side (keys, groups, client secrets) and its realtime side.

export type RealtimeAuthorization =
  | { ok: true; /** Stable, non-secret id of the key (for journals and logs). */ keyId: string }
  | { ok: false; status: 400 | 401 | 403 | 404; code: string; message: string };

export interface RealtimeDeps {
  vendor: string;
  /** Read on every new session, so tests can shorten it at run time. */
  sessionMaxMs(): number;
  /** An API key from `Authorization: Bearer` or the `compat-insecure-api-key.` subprotocol, for a model. */
  authorizeApiKey(apiKey: string, model: string): RealtimeAuthorization;
  /** A token issued by `POST /native/v1/realtime/client_secrets` (`<vendor>-client-secret.` subprotocol). */
  authorizeClientSecret(token: string, model: string): RealtimeAuthorization;
  log: Logger;
}
