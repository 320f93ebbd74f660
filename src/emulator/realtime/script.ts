import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord } from '../../lib/json.ts';
import { HttpError, readJsonObject, sendJson } from '../http.ts';

// The emulator's model is an echo, but its next turn can be scripted, for tests and demos:
// `POST /_emulator/realtime/script` (a key of the emulator) with
// `{ session_id?, transcript?, response?: { text?, function_call?: { name, arguments } } }`.
// The transcript replaces what the next user turn is heard as; `text` is what the model answers instead
// of the echo; `function_call` makes it answer with a call of a tool the session declared (and `text`,
// when both are given, is what it says once the call's output comes back). Without a session id the
// script is for the next turn of any session of that key.

export const REALTIME_SCRIPT_PATH = '/_emulator/realtime/script';

/** A scripted transcript or line of text: as long as a force_message may be. */
export const MAX_SCRIPT_TEXT_CHARS = 4096;
const MAX_ARGUMENTS_CHARS = 16 * 1024;
/** Scripts waiting for a turn, per key: more is refused (429) until turns use them. */
export const MAX_WAITING_SCRIPTS = 64;

export interface ScriptedCall {
  name: string;
  /** The arguments as the JSON text the model sends. */
  arguments: string;
}

export interface TurnScript {
  id: string;
  keyId: string;
  /** The session it is for; undefined: the next turn of any session of the key. */
  sessionId: string | undefined;
  transcript: string | undefined;
  text: string | undefined;
  functionCall: ScriptedCall | undefined;
}

/** What the script board needs of a session. */
export interface ScriptTarget {
  readonly id: string;
  readonly keyId: string;
  readonly closedAt: number | undefined;
  declaresFunction(name: string): boolean;
  readonly functionNames: string[];
}

function bad(param: string | null, message: string): HttpError {
  return new HttpError(400, 'invalid_request_error', message, param);
}

function refuseUnknownFields(value: Readonly<Record<string, unknown>>, known: readonly string[], at: string): void {
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw bad(`${at}${unknown}`, `Unknown field ${at}${unknown}; ${at === '' ? 'a script' : at.slice(0, -1)} has ${known.join(', ')}.`);
}

function readText(value: unknown, param: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw bad(param, `${param} must be a non-empty string.`);
  if (value.length > MAX_SCRIPT_TEXT_CHARS) throw bad(param, `${param} may be at most ${MAX_SCRIPT_TEXT_CHARS} characters.`);
  return value;
}

function readCall(value: unknown): ScriptedCall | undefined {
  if (value === undefined) return undefined;
  const param = 'response.function_call';
  if (!isRecord(value)) throw bad(param, `${param} must be an object with name and arguments.`);
  refuseUnknownFields(value, ['name', 'arguments'], `${param}.`);
  if (typeof value.name !== 'string' || value.name === '')
    throw bad(`${param}.name`, `${param}.name must name a function tool of the session.`);
  const args = value.arguments ?? {};
  if (!isRecord(args))
    throw bad(`${param}.arguments`, `${param}.arguments must be a JSON object (the emulator writes it as the JSON text the model sends).`);
  const text = JSON.stringify(args);
  if (text.length > MAX_ARGUMENTS_CHARS)
    throw bad(`${param}.arguments`, `${param}.arguments may be at most ${MAX_ARGUMENTS_CHARS} characters of JSON.`);
  return { name: value.name, arguments: text };
}

/** The scripts waiting for turns, oldest first, and the checks a new one passes. */
export class ScriptBoard {
  readonly #waiting: TurnScript[] = [];

  /**
   * Checks a posted script against the sessions open now and keeps it. Throws an HttpError: 400 for a
   * malformed script or a call to a tool no matching session declared, 404 for an unknown session id,
   * 429 when too many wait.
   */
  add(keyId: string, body: Readonly<Record<string, unknown>>, sessions: readonly ScriptTarget[]): TurnScript {
    refuseUnknownFields(body, ['session_id', 'transcript', 'response'], '');
    if (body.session_id !== undefined && (typeof body.session_id !== 'string' || body.session_id === ''))
      throw bad('session_id', 'session_id must be a session id (session.id of session.created).');
    const sessionId = body.session_id;
    const transcript = readText(body.transcript, 'transcript');
    let text: string | undefined;
    let functionCall: ScriptedCall | undefined;
    if (body.response !== undefined) {
      if (!isRecord(body.response)) throw bad('response', 'response must be an object with text and/or function_call.');
      refuseUnknownFields(body.response, ['text', 'function_call'], 'response.');
      text = readText(body.response.text, 'response.text');
      functionCall = readCall(body.response.function_call);
      if (text === undefined && functionCall === undefined) throw bad('response', 'response needs text or function_call.');
    }
    if (transcript === undefined && text === undefined && functionCall === undefined)
      throw bad(null, 'A script needs a transcript or a response.');

    const open = sessions.filter((session) => session.keyId === keyId && session.closedAt === undefined);
    const targets = sessionId === undefined ? open : open.filter((session) => session.id === sessionId);
    if (sessionId !== undefined && targets.length === 0)
      throw new HttpError(404, 'not_found', `No open realtime session ${sessionId} of this key.`, 'session_id');
    if (functionCall && !targets.some((session) => session.declaresFunction(functionCall.name))) {
      const declared = [...new Set(targets.flatMap((session) => session.functionNames))];
      const whose = sessionId === undefined ? 'No open session of this key declares' : 'The session does not declare';
      throw bad(
        'response.function_call.name',
        `${whose} a function tool ${functionCall.name} (declared: ${declared.length === 0 ? 'none' : declared.join(', ')}).`,
      );
    }
    if (this.#waiting.filter((script) => script.keyId === keyId).length >= MAX_WAITING_SCRIPTS) {
      throw new HttpError(429, 'too_many_requests', `${MAX_WAITING_SCRIPTS} scripts already wait for turns of this key's sessions.`);
    }
    const script: TurnScript = { id: `script_${randomBytes(9).toString('base64url')}`, keyId, sessionId, transcript, text, functionCall };
    this.#waiting.push(script);
    return script;
  }

  /**
   * The script for this session's next turn, taken off the board: the oldest for this session, else
   * the oldest for any session of its key that it can play (a call needs the tool declared).
   */
  take(session: ScriptTarget): TurnScript | undefined {
    let index = this.#waiting.findIndex((script) => script.sessionId === session.id);
    if (index < 0) {
      index = this.#waiting.findIndex(
        (script) =>
          script.sessionId === undefined &&
          script.keyId === session.keyId &&
          (!script.functionCall || session.declaresFunction(script.functionCall.name)),
      );
    }
    return index < 0 ? undefined : this.#waiting.splice(index, 1)[0];
  }

  /** A closed session's scripts go with it. */
  forget(sessionId: string): void {
    for (let index = this.#waiting.length - 1; index >= 0; index--) {
      if (this.#waiting[index]!.sessionId === sessionId) this.#waiting.splice(index, 1);
    }
  }
}

/** What the route needs of the realtime side. */
export interface ScriptTaker {
  script(keyId: string, body: Readonly<Record<string, unknown>>): TurnScript;
}

/**
 * `POST /_emulator/realtime/script`. `authorize` checks the key (and counts the request) once the
 * method is right; errors are thrown as HttpError, for the server to answer in its usual format.
 */
export async function handleScriptRequest(
  request: IncomingMessage,
  response: ServerResponse,
  authorize: () => string,
  realtime: ScriptTaker,
): Promise<void> {
  if (request.method !== 'POST') throw new HttpError(405, 'invalid_request_error', `Use POST for ${REALTIME_SCRIPT_PATH}.`);
  const keyId = authorize();
  const { value: body } = await readJsonObject(request);
  const script = realtime.script(keyId, body);
  sendJson(response, 200, {
    id: script.id,
    object: 'emulator.realtime_script',
    session_id: script.sessionId ?? null,
    transcript: script.transcript ?? null,
    response:
      script.text === undefined && script.functionCall === undefined
        ? null
        : {
            text: script.text ?? null,
            function_call: script.functionCall ? { name: script.functionCall.name, arguments: script.functionCall.arguments } : null,
          },
  });
}
