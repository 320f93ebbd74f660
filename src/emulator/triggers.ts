// Deterministic behaviour chosen in the prompt, for tests and demos:
//   [[fail:CODE]]            the task fails with that asynchronous code
//   [[hang]]                 the task never finishes, so the gateway's timeout fails it
//   [[http:STATUS:CODE]]     the submission is refused synchronously with that error (STATUS 400-599;
//                            any other number is no trigger, since it would not be an error answer)
//   [[http:STATUS:CODE:N]]   only the first N submissions carrying this exact prompt are refused
//   [[moderate]]             a moderated result (done, respect_moderation false, no url)
//   [[storage-fail]]         storage fails; the task succeeds and the url still works

export interface Triggers {
  failCode: string | undefined;
  hang: boolean;
  http: { status: number; code: string; times: number | undefined } | undefined;
  moderate: boolean;
  storageFail: boolean;
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
    http: http && isErrorStatus(Number(http[1])) ? { status: Number(http[1]), code: http[2] ?? 'upstream_error', times: http[3] === undefined ? undefined : Number(http[3]) } : undefined,
    moderate: text.includes('[[moderate]]'),
    storageFail: text.includes('[[storage-fail]]'),
  };
}
