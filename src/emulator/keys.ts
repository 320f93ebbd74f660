import { createHash, randomBytes } from 'node:crypto';
import { CLIENT_SECRET_DEFAULT_S, CLIENT_SECRET_MAX_S } from '../gateway/spec.ts';
import { ownValue } from '../lib/json.ts';
import { allModels, limitsOfKey, type EmulatorConfig, type EmulatorLimits } from './config.ts';
import { HttpError } from './http.ts';
import type { RealtimeAuthorization } from './realtime/deps.ts';

// Who may call the emulator and what they may spend: keys and their groups, quotas (charged at
// submission, refunded when a task fails or times out), each key's rate limit, and short-lived realtime
// client secrets (expired ones are dropped whenever a new one is issued).

export interface KeyAccount {
  key: string;
  /** A stable, non-secret name of the key for journals. */
  keyId: string;
  group: string;
  remainingUsd: number;
  limits: EmulatorLimits;
  /** Request times in the current rate window. */
  recent: number[];
}

export function keyIdOf(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

const BEARER = /^Bearer ([^\s]+)$/;

export class KeyRegistry {
  readonly #config: EmulatorConfig;
  readonly #accounts = new Map<string, KeyAccount>();
  readonly #secrets = new Map<string, { keyId: string; key: string; expiresAt: number }>();

  constructor(config: EmulatorConfig) {
    this.#config = config;
    for (const [key, entry] of Object.entries(config.keys)) {
      this.#accounts.set(key, {
        key,
        keyId: keyIdOf(key),
        group: entry.group,
        remainingUsd: entry.quota_usd,
        limits: limitsOfKey(config, entry),
        recent: [],
      });
    }
  }

  /** The vendor's models and any a group names: anything else is unknown (404), however it is spelled. */
  isKnownModel(model: string): boolean {
    const lower = model.toLowerCase();
    return [...allModels(this.#config.vendor), ...Object.values(this.#config.groups).flatMap((group) => group.models)].some(
      (known) => known.toLowerCase() === lower,
    );
  }

  modelsOf(account: KeyAccount): string[] {
    return ownValue(this.#config.groups, account.group)?.models ?? [];
  }

  mayUse(account: KeyAccount, model: string): boolean {
    return this.modelsOf(account).some((allowed) => allowed.toLowerCase() === model.toLowerCase());
  }

  /** `Authorization: Bearer <key>`, exactly one space; anything else is 401 invalid_api_key. */
  authenticate(header: string | undefined): KeyAccount {
    const match = header === undefined ? null : BEARER.exec(header);
    const account = match?.[1] === undefined ? undefined : this.#accounts.get(match[1]);
    if (!account) {
      throw new HttpError(
        401,
        'invalid_api_key',
        header === undefined ? 'Missing API key: send Authorization: Bearer <API_KEY>.' : 'Invalid API key.',
      );
    }
    return account;
  }

  /** A sliding window (a minute, timing.rate_window_ms) of the key's rate_per_minute requests. */
  countRequest(account: KeyAccount, now: number): void {
    const window = this.#config.timing.rate_window_ms;
    const perMinute = account.limits.rate_per_minute;
    while (account.recent.length > 0 && account.recent[0]! <= now - window) account.recent.shift();
    if (account.recent.length >= perMinute) {
      // The seconds until the oldest request leaves the window and frees a slot.
      const retryAfter = Math.max(1, Math.ceil((account.recent[0]! + window - now) / 1000));
      throw new HttpError(429, 'rate_limit', `Rate limit reached: ${perMinute} requests per minute.`, null, retryAfter);
    }
    account.recent.push(now);
  }

  charge(account: KeyAccount, usd: number): void {
    // A charge can only take from the quota: a negative or NaN price is a fault, never a gift.
    if (!(usd >= 0)) throw new Error(`refusing to charge an invalid amount (${usd})`);
    if (usd > account.remainingUsd + 1e-9) {
      throw new HttpError(
        429,
        'insufficient_quota',
        `Insufficient quota: this request is estimated at $${usd.toFixed(2)} and $${account.remainingUsd.toFixed(2)} remains.`,
      );
    }
    account.remainingUsd -= usd;
  }

  refund(account: KeyAccount, usd: number): void {
    account.remainingUsd += usd;
  }

  account(key: string): KeyAccount | undefined {
    return this.#accounts.get(key);
  }

  issueClientSecret(account: KeyAccount, seconds: number | undefined, now: number): { value: string; expires_at: number } {
    const lifetime = seconds ?? CLIENT_SECRET_DEFAULT_S;
    if (!Number.isInteger(lifetime) || lifetime < 1 || lifetime > CLIENT_SECRET_MAX_S) {
      throw new HttpError(
        400,
        'invalid_request_error',
        `expires_after.seconds must be a whole number from 1 to ${CLIENT_SECRET_MAX_S}.`,
        'expires_after.seconds',
      );
    }
    for (const [token, secret] of this.#secrets) {
      if (secret.expiresAt <= now) this.#secrets.delete(token);
    }
    const value = `cs_${randomBytes(18).toString('base64url')}`;
    const expiresAt = now + lifetime * 1000;
    this.#secrets.set(value, { keyId: account.keyId, key: account.key, expiresAt });
    return { value, expires_at: Math.floor(expiresAt / 1000) };
  }

  #authorizeModel(account: KeyAccount, model: string): RealtimeAuthorization {
    if (!this.isKnownModel(model)) {
      return { ok: false, status: 404, code: 'model_not_found', message: `The model ${model} does not exist.` };
    }
    if (!this.mayUse(account, model)) {
      return { ok: false, status: 403, code: 'permission_denied', message: `This key's group may not use ${model}.` };
    }
    return { ok: true, keyId: account.keyId };
  }

  authorizeRealtimeKey(key: string, model: string): RealtimeAuthorization {
    const account = this.#accounts.get(key);
    if (!account) return { ok: false, status: 401, code: 'invalid_api_key', message: 'Invalid API key.' };
    return this.#authorizeModel(account, model);
  }

  authorizeRealtimeSecret(token: string, model: string, now: number): RealtimeAuthorization {
    const secret = this.#secrets.get(token);
    const account = secret && secret.expiresAt > now ? this.#accounts.get(secret.key) : undefined;
    if (!account) return { ok: false, status: 401, code: 'invalid_api_key', message: 'Invalid or expired client secret.' };
    return this.#authorizeModel(account, model);
  }
}
