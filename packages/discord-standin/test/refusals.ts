// What the stand-in answers a request Discord refuses, read through the real discord.js: the status, the
// JSON error code and the `errors` tree of a 400 / 50035, with the codes at one path of it.

import { DiscordAPIError } from 'discord.js';
import { isRecord } from '../src/lib/json.ts';

export interface Refusal {
  status: number;
  code: number | string;
  errors: unknown;
}

/** What Discord answered a request it refused; fails the test when it was accepted. */
export async function refusal(attempt: Promise<unknown>): Promise<Refusal> {
  try {
    await attempt;
  } catch (error) {
    if (!(error instanceof DiscordAPIError)) throw error;
    return { status: error.status, code: error.code, errors: 'errors' in error.rawError ? error.rawError.errors : undefined };
  }
  throw new Error('the stand-in accepted what Discord refuses');
}

/** The error codes Discord names at one path of an `errors` tree. */
export function codesAt(errors: unknown, ...path: (string | number)[]): string[] {
  let node = errors;
  for (const key of path) node = isRecord(node) ? node[String(key)] : undefined;
  const list = isRecord(node) && Array.isArray(node._errors) ? node._errors : [];
  return list.flatMap((entry: unknown) => (isRecord(entry) && typeof entry.code === 'string' ? [entry.code] : []));
}
