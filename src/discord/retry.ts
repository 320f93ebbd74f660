import { setTimeout as sleep } from 'node:timers/promises';
import { DiscordAPIError, DiscordjsErrorCodes, GatewayCloseCodes } from 'discord.js';
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import type { Logger } from '../lib/log.ts';

// The Discord calls the bot cannot do without (login, command registration) are tried until they
// succeed, Discord refuses them for good, or the bot shuts down. @discordjs/rest already retries a 5xx
// three times and waits out a 429 with its Retry-After; this is the slower layer above it, for an
// outage longer than that (5xx, 429 and network failures alike).

/** The waits between attempts; the calls retry without a count, until shutdown. */
const DISCORD_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000, jitter: 0.25, spread: 'shorter' };

/** A 4xx other than 429: Discord understood the request and refused it; asking again changes nothing. */
export function isDiscordRefusal(error: unknown): error is DiscordAPIError {
  return error instanceof DiscordAPIError && error.status >= 400 && error.status < 500 && error.status !== 429;
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('aborted');
}

/** `promise`, or the signal's reason as soon as it aborts (the promise is left to settle unobserved). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export interface RetryUntilDoneOptions {
  /** What is attempted, for the logs: "login", "command registration". */
  operation: string;
  log: Logger;
  /** Aborting stops at once (even mid-attempt) and rejects with the signal's reason. */
  signal: AbortSignal;
  /** Errors another attempt cannot fix: thrown at once. */
  isFinal(error: unknown): boolean;
}

export async function retryUntilDone<T>(attempt: () => Promise<T>, options: RetryUntilDoneOptions): Promise<T> {
  const { signal, log } = options;
  for (let retriesDone = 0; ; retriesDone++) {
    if (signal.aborted) throw abortError(signal);
    try {
      return await untilAborted(attempt(), signal);
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      if (options.isFinal(error)) throw error;
      const retryInMs = backoffDelay(retriesDone, DISCORD_BACKOFF);
      log.warn('could not reach Discord; retrying', { operation: options.operation, attempt: retriesDone + 1, retryInMs, error });
      await sleep(retryInMs, undefined, { signal }).catch(() => undefined);
    }
  }
}

class LoginRefusedError extends Error {
  constructor() {
    super('Discord refused DISCORD_TOKEN: check the token in the Discord developer portal (Bot > Reset Token).');
    this.name = 'LoginRefusedError';
  }
}

/** Every route of a server that is not Discord's REST API (or the right path of one) answers 404. */
class DiscordApiUrlError extends Error {
  constructor() {
    super(
      'Discord answered 404 Not Found to the login request: DISCORD_API_URL does not point at a Discord REST API. ' +
        'Set it to the REST base, e.g. http://127.0.0.1:8900/api, or remove it to use discord.com.',
    );
    this.name = 'DiscordApiUrlError';
  }
}

/**
 * The application may not use the Server Members intent: Discord closed the gateway connection with 4014
 * Disallowed intent(s), or the application's flags said so before the bot identified. The only privileged
 * intent the bot ever asks for is Server Members, and only with FORGET_MEMBERS_WHO_LEAVE=on
 * (src/discord/client.ts).
 */
class DisallowedIntentsError extends Error {
  constructor(knownFrom: 'close code' | 'application flags') {
    const refused =
      knownFrom === 'close code'
        ? 'Discord refused the Server Members intent (gateway close code 4014)'
        : "Discord does not allow the Server Members intent (the application's flags say it is off; the bot did not connect)";
    super(
      `${refused} that FORGET_MEMBERS_WHO_LEAVE=on needs: ` +
        'turn on "Server Members Intent" in the Discord Developer Portal (your application, Bot, Privileged Gateway Intents), ' +
        'or set FORGET_MEMBERS_WHO_LEAVE=off.',
    );
    this.name = 'DisallowedIntentsError';
  }
}

/** Any other close code discord.js gives up on (4004, 4010 to 4013): reconnecting would be refused the same way. */
class GatewayRefusedError extends Error {
  constructor(code: number) {
    super(`Discord closed the gateway connection for good with code ${code} (${GatewayCloseCodes[code] ?? 'unknown'}).`);
    this.name = 'GatewayRefusedError';
  }
}

/** discord.js's own refusal of a token at login, before any request. */
export function isTokenRefusal(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === DiscordjsErrorCodes.TokenInvalid;
}

/**
 * A failure of the first calls to Discord (the shard count, the login) in words that name what to fix: a
 * refused token (401) names DISCORD_TOKEN, a 404 DISCORD_API_URL, a gateway closed with 4014 the portal's
 * Server Members Intent and FORGET_MEMBERS_WHO_LEAVE (`gatewayCloseCode`: the code discord.js gave up on
 * during the login, if any); anything else is unchanged.
 */
export function explainStartFailure(error: unknown, gatewayCloseCode?: number): unknown {
  if (isTokenRefusal(error) || (error instanceof DiscordAPIError && error.status === 401)) return new LoginRefusedError();
  if (isDiscordRefusal(error) && error.status === 404) return new DiscordApiUrlError();
  if (gatewayCloseCode === GatewayCloseCodes.DisallowedIntents) return new DisallowedIntentsError('close code');
  if (gatewayCloseCode !== undefined) return new GatewayRefusedError(gatewayCloseCode);
  return error;
}

/** The application's flags say it may not use the Server Members intent: refused before identifying. */
export function membersIntentRefused(): Error {
  return new DisallowedIntentsError('application flags');
}

/**
 * A start failure that starting again cannot fix, only a change of configuration (the explained refusals
 * above): the process exits with a code that says so, and a supervisor does not start it again.
 */
export function isRefusedForGood(error: unknown): boolean {
  return (
    error instanceof LoginRefusedError ||
    error instanceof DiscordApiUrlError ||
    error instanceof DisallowedIntentsError ||
    error instanceof GatewayRefusedError
  );
}
