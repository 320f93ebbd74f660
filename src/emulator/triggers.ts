import { createHash } from 'node:crypto';

// Deterministic behaviour chosen in the prompt, for tests and demos:
//   [[fail:CODE]]            the task fails with that asynchronous code
//   [[hang]]                 the task never finishes, so the gateway's timeout fails it
//   [[http:STATUS:CODE]]     the submission is refused synchronously with that error (STATUS 400-599;
//                            any other number is no trigger, since it would not be an error answer)
//   [[http:STATUS:CODE:N]]   only the first N submissions carrying this exact prompt are refused
//   [[moderate]]             a moderated result (done, respect_moderation false, no url)
//   [[moderate:prompt]]      the provider's moderation refuses the prompt: the task fails (refunded), with
//                            `imagine:content-moderated` on the native layer and `invalid_argument` on the
//                            compatibility one, whose task codes are the gateway's own five
//   [[storage-fail]]         storage fails; the task succeeds and the url still works
//   [[no-cost]]              the task's answers carry no `usage` (the contract does not promise a cost)
//   [[truncated]]            the task succeeds, but its video file is cut short: it starts as an mp4
//                            (its `ftyp` box) and holds nothing a player or decoder can play

export interface Triggers {
  failCode: string | undefined;
  hang: boolean;
  http: { status: number; code: string; times: number | undefined } | undefined;
  moderate: boolean;
  moderatePrompt: boolean;
  storageFail: boolean;
  noCost: boolean;
  truncated: boolean;
}

function isErrorStatus(status: number): boolean {
  return status >= 400 && status <= 599;
}

export function parseTriggers(prompt: string | undefined): Triggers {
  const text = prompt ?? '';
  const fail = /\[\[fail:([a-z0-9_:.-]+)\]\]/i.exec(text);
  const http = /\[\[http:(\d{3}):([a-z0-9_:.-]+?)(?::(\d+))?\]\]/i.exec(text);
  return {
    failCode: fail?.[1],
    hang: text.includes('[[hang]]'),
    http:
      http && isErrorStatus(Number(http[1]))
        ? { status: Number(http[1]), code: http[2] ?? 'upstream_error', times: http[3] === undefined ? undefined : Number(http[3]) }
        : undefined,
    moderate: text.includes('[[moderate]]'),
    moderatePrompt: text.includes('[[moderate:prompt]]'),
    storageFail: text.includes('[[storage-fail]]'),
    noCost: text.includes('[[no-cost]]'),
    truncated: text.includes('[[truncated]]'),
  };
}

/** Prompts whose `[[http:STATUS:CODE:N]]` submissions are counted: the most recently used this many. */
export const MAX_COUNTED_PROMPTS = 1000;

/**
 * How many times each prompt carrying `[[http:STATUS:CODE:N]]` has been submitted, for the most recently
 * used MAX_COUNTED_PROMPTS prompts; an older prompt's count is forgotten and starts again. Prompts are
 * known by their digest, so a megabyte prompt costs no more to remember than a short one.
 */
export class TriggerCounts {
  /** Least recently used first (a Map keeps insertion order). */
  readonly #counts = new Map<string, number>();

  /** Counts one more submission of `prompt`; answers how many there have been, this one included. */
  count(prompt: string): number {
    const key = createHash('sha256').update(prompt).digest('base64url');
    const count = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.delete(key);
    this.#counts.set(key, count);
    if (this.#counts.size > MAX_COUNTED_PROMPTS) {
      const [oldest] = this.#counts.keys();
      if (oldest !== undefined) this.#counts.delete(oldest);
    }
    return count;
  }
}
