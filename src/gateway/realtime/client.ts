import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import { registerSecret, silentLogger, type Logger } from '../../lib/log.ts';
import { GatewayError } from '../errors.ts';
import { requestIdOf, trustedAuthorities } from '../http.ts';
import { realtimeSubprotocolPrefixes } from '../spec.ts';
import type { ClientSecret } from '../types.ts';
import { isRecord, readRecord, readString, readTimestamp } from '../../lib/json.ts';
import { waitUntil } from '../../lib/wait-until.ts';
import { parseServerEvent, type RealtimeServerEvent } from './events.ts';
import { websocketText } from '../../lib/websocket-text.ts';

// The bot's side of a realtime voice session (docs/gateway.md, "Realtime voice"): one websocket to
// `{ws_base_url}/native/v1/realtime?model=…` with the Authorization header (or a credential
// subprotocol, the way the spec's browser clients connect), `session.update` first, then
// audio in as base64 PCM and typed events out. Reconnecting is the voice session's business, not this
// client's: it reports how a connection ended and nothing more.

/** The realtime audio rate when the caller names none (docs/gateway.md, "Audio formats": 24 kHz by default). */
const DEFAULT_SAMPLE_RATE = 24_000;
/** How long the websocket handshake and the first session.updated may take. */
const CONNECT_TIMEOUT_MS = 10_000;
/**
 * The largest server event the client takes; a bigger one closes the connection (1009) before it is
 * buffered. An event carries at most an audio delta or a transcript: 8 MiB is over 80 s of 24 kHz PCM in
 * base64 in one event, far past what an answer may queue (60 s, speech-player.ts), where ws's own default
 * would hold 100 MiB of one message in memory.
 */
const MAX_EVENT_BYTES = 8 * 1024 * 1024;

export interface TurnDetection {
  type: 'server_vad';
  threshold?: number;
  silenceDurationMs?: number;
  prefixPaddingMs?: number;
}

export interface RealtimeSessionConfig {
  voice?: string;
  instructions?: string;
  /** null: manual mode, the client commits turns and asks for responses. */
  turnDetection: TurnDetection | null;
  /** PCM sample rate in and out; default 24000. */
  rate?: number;
  /** Function tools the model may call (`{ type: 'function', name, description, parameters }`). */
  tools?: readonly FunctionTool[];
}

export interface FunctionTool {
  type: 'function';
  name: string;
  description: string;
  /** A JSON schema of the arguments. */
  parameters: Record<string, unknown>;
}

interface ConnectBase {
  wsBaseUrl: string;
  model: string;
  session: RealtimeSessionConfig;
  /** Give up on the handshake and the session.updated answer after this long. */
  timeoutMs?: number;
  /** A certificate (PEM) to trust besides the public authorities (a `wss:` emulator's own; see GatewayClient). */
  ca?: string;
  log?: Logger;
}

/**
 * How the connection is authorised (docs/gateway.md, "Authentication"): the API key in the Authorization
 * header, as a server connects (the bot does); or a subprotocol, as a browser must: a short-lived client
 * secret (`<vendor>-client-secret.<secret>`) or the key itself (`compat-insecure-api-key.<key>`).
 */
export type RealtimeConnectOptions = ConnectBase &
  (
    | { apiKey: string; keyIn?: 'header' | 'subprotocol' }
    | { clientSecret: string; /** The vendor word of the subprotocol; default `svc`. */ vendor?: string }
  );

/** What the gateway client offers for the client-secret flow. */
export interface ClientSecretSource {
  readonly vendor: string;
  createClientSecret(seconds?: number): Promise<ClientSecret>;
}

function credentials(options: RealtimeConnectOptions): { headers: Record<string, string>; protocols: string[] } {
  if ('clientSecret' in options) {
    registerSecret(options.clientSecret);
    return { headers: {}, protocols: [`${realtimeSubprotocolPrefixes(options.vendor).clientSecret}${options.clientSecret}`] };
  }
  registerSecret(options.apiKey);
  if (options.keyIn === 'subprotocol') return { headers: {}, protocols: [`${realtimeSubprotocolPrefixes().apiKey}${options.apiKey}`] };
  return { headers: { Authorization: `Bearer ${options.apiKey}` }, protocols: [] };
}

/** The gateway refused the connection (HTTP status and code of the refused upgrade) or it never came up. */
export class RealtimeConnectionError extends GatewayError {}

interface ClientEvents {
  event: [RealtimeServerEvent];
  close: [code: number, reason: string];
}

function sessionUpdate(config: RealtimeSessionConfig): Record<string, unknown> & { type: 'session.update' } {
  const format = { type: 'audio/pcm', rate: config.rate ?? DEFAULT_SAMPLE_RATE };
  const detection = config.turnDetection;
  return {
    type: 'session.update',
    session: {
      ...(config.voice === undefined ? {} : { voice: config.voice }),
      ...(config.instructions === undefined ? {} : { instructions: config.instructions }),
      turn_detection:
        detection === null
          ? null
          : {
              type: 'server_vad',
              ...(detection.threshold === undefined ? {} : { threshold: detection.threshold }),
              ...(detection.silenceDurationMs === undefined ? {} : { silence_duration_ms: detection.silenceDurationMs }),
              ...(detection.prefixPaddingMs === undefined ? {} : { prefix_padding_ms: detection.prefixPaddingMs }),
            },
      audio: { input: { format }, output: { format } },
      ...(config.tools === undefined ? {} : { tools: config.tools }),
    },
  };
}

async function refusal(response: IncomingMessage): Promise<RealtimeConnectionError> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  let code: string | undefined;
  let message = `the gateway refused the realtime connection with HTTP ${response.statusCode}`;
  try {
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (isRecord(body)) {
      const error = body.error;
      code = readString(body, 'code') ?? (isRecord(error) ? readString(error, 'code') : undefined);
      const text = typeof error === 'string' ? error : isRecord(error) ? readString(error, 'message') : undefined;
      if (text) message = `${message}: ${text}`;
    }
  } catch {
    // A body that is not JSON leaves the status as the whole story.
  }
  return new RealtimeConnectionError(message, { status: response.statusCode, code, requestId: requestIdOf(response.headers) });
}

/** A message written into the conversation as history: what a member said, or what the model answered. */
export interface ConversationMessage {
  role: 'user' | 'assistant';
  text: string;
}

/** Whether the gateway took every message of `addMessages` (with each one's item id, in order), or why not. */
export type MessagesTaken = { ok: true; itemIds: string[] } | { ok: false; message: string };

/** The id of the item a server event says was created (`conversation.item.created`, or `.added` as GA servers name it). */
function createdItemId(event: RealtimeServerEvent): string | undefined {
  if (event.type === 'conversation.item.created') return event.itemId;
  if (event.type === 'other' && event.name === 'conversation.item.added') return readString(readRecord(event.raw, 'item'), 'id');
  return undefined;
}

/** Client events remembered by id, so an error naming one can say what it answers. */
const REMEMBERED_CLIENT_EVENTS = 64;
/** input_audio_buffer.append as text bytes, around its base64 audio. */
const APPEND_HEAD = Buffer.from('{"type":"input_audio_buffer.append","audio":"');
const APPEND_TAIL = Buffer.from('"}');

export class RealtimeClient extends EventEmitter<ClientEvents> {
  readonly #socket: WebSocket;
  readonly #log: Logger;
  #eventCount = 0;
  #appendMessage = Buffer.alloc(0);
  #sessionExpiresAt: Date | undefined;
  /** Recent client event ids and their types. */
  readonly #sentTypes = new Map<string, string>();

  private constructor(socket: WebSocket, log: Logger) {
    super();
    this.#socket = socket;
    this.#log = log;
  }

  /**
   * Opens the session and resolves once the gateway confirmed the configuration (session.updated). An
   * error naming the session.update refuses the session at once; other errors before it are logged,
   * and a gateway that never confirms fails the connection after `timeoutMs`, saying so.
   */
  static connect(options: RealtimeConnectOptions): Promise<RealtimeClient> {
    const log = options.log ?? silentLogger;
    const url = `${options.wsBaseUrl.replace(/\/+$/, '')}/native/v1/realtime?model=${encodeURIComponent(options.model)}`;
    const timeoutMs = options.timeoutMs ?? CONNECT_TIMEOUT_MS;
    const { headers, protocols } = credentials(options);
    // No permessage-deflate: base64 audio hardly compresses, and zlib on every append and delta cost a
    // gateway that accepts it about 2% of a core (bench/voice.ts).
    const ca = trustedAuthorities(options.ca);
    const socket = new WebSocket(url, protocols, {
      headers,
      handshakeTimeout: timeoutMs,
      perMessageDeflate: false,
      maxPayload: MAX_EVENT_BYTES,
      ...(ca ? { ca } : {}),
    });
    const client = new RealtimeClient(socket, log);

    return new Promise((resolve, reject) => {
      let settled = false;
      let configurationEventId: string | undefined;
      let earlyError: string | undefined;
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.terminate();
        reject(error);
      };
      const timer = setTimeout(() => {
        const what =
          socket.readyState === WebSocket.OPEN
            ? `the gateway accepted the realtime connection but did not confirm the session (no session.updated within ${timeoutMs} ms)`
            : `the realtime connection was not accepted within ${timeoutMs} ms`;
        fail(new RealtimeConnectionError(earlyError === undefined ? what : `${what}; it reported: ${earlyError}`));
      }, timeoutMs);
      socket.on('unexpected-response', (_request, response) => {
        void refusal(response).then(fail, fail);
      });
      socket.on('error', (error) =>
        fail(new RealtimeConnectionError(`the realtime connection failed: ${error.message}`, { cause: error })),
      );
      socket.on('open', () => {
        configurationEventId = client.#send(sessionUpdate(options.session));
      });
      socket.on('message', (data) => {
        const event = client.#withCause(parseServerEvent(websocketText(data)));
        if (!event) {
          log.warn('ignoring a realtime message that is not an event');
          return;
        }
        if (event.type === 'session.created' || event.type === 'session.updated')
          client.#sessionExpiresAt = readTimestamp(event.session, 'expires_at') ?? client.#sessionExpiresAt;
        if (!settled) {
          if (event.type === 'error') {
            if (event.clientEventId !== undefined && event.clientEventId === configurationEventId) {
              return fail(
                new RealtimeConnectionError(`the realtime session refused its configuration: ${event.message}`, {
                  code: event.code,
                  param: event.param,
                }),
              );
            }
            earlyError = event.message;
            log.warn('realtime error before the session was configured', { code: event.code, message: event.message });
            return;
          }
          if (event.type !== 'session.updated') return;
          settled = true;
          clearTimeout(timer);
          resolve(client);
        }
        client.emit('event', event);
      });
      socket.on('close', (code, reason) => {
        fail(new RealtimeConnectionError(`the realtime connection closed (${code}) before the session was ready`));
        client.emit('close', code, reason.toString());
      });
    });
  }

  /**
   * The spec's flow for clients that cannot send headers: a short-lived secret from
   * `POST /native/v1/realtime/client_secrets` (through the gateway client), then the connection with it
   * as the subprotocol `<vendor>-client-secret.<secret>`.
   */
  static async connectWithClientSecret(
    gateway: ClientSecretSource,
    options: ConnectBase & { secretSeconds?: number },
  ): Promise<RealtimeClient> {
    const { secretSeconds, ...rest } = options;
    const secret = await gateway.createClientSecret(secretSeconds);
    return RealtimeClient.connect({ ...rest, clientSecret: secret.value, vendor: gateway.vendor });
  }

  /** When the gateway said the session expires (`expires_at` of session.created or session.updated), if it did. */
  get sessionExpiresAt(): Date | undefined {
    return this.#sessionExpiresAt;
  }

  get open(): boolean {
    return this.#socket.readyState === WebSocket.OPEN;
  }

  /** Bytes queued in the socket and not yet sent: the pump batches audio while this is high. */
  get bufferedAmount(): number {
    return this.#socket.bufferedAmount;
  }

  /** Sends the event with an id of its own (an error caused by it names that id); returns the id. */
  #send(event: Record<string, unknown> & { type: string }): string | undefined {
    if (!this.open) {
      this.#log.debug('dropping a realtime event on a closed socket', { type: event.type });
      return undefined;
    }
    const eventId = `bot_event_${++this.#eventCount}`;
    this.#sentTypes.set(eventId, event.type);
    if (this.#sentTypes.size > REMEMBERED_CLIENT_EVENTS) this.#sentTypes.delete(this.#sentTypes.keys().next().value!);
    this.#socket.send(JSON.stringify({ event_id: eventId, ...event }));
    return eventId;
  }

  /** An error event, told which of this client's events it answers. */
  #withCause(event: RealtimeServerEvent | undefined): RealtimeServerEvent | undefined {
    if (event?.type !== 'error' || event.clientEventId === undefined) return event;
    return { ...event, clientEventType: this.#sentTypes.get(event.clientEventId) };
  }

  /**
   * Sent up to fifty times a second: base64 needs no JSON escaping, so the message is put together as
   * bytes in one buffer kept from append to append, with Node's own base64 (a JavaScript encoder writing
   * straight into it spared the one short-lived string, but cost more CPU than that string's collection).
   * ws frames it before `send` returns (copying it as it masks it; it queues a message only while
   * compressing, which this client declines, or reading a Blob).
   */
  appendAudio(pcm: Int16Array): void {
    if (!this.open) return;
    const audio = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');
    const length = APPEND_HEAD.length + audio.length + APPEND_TAIL.length;
    if (this.#appendMessage.length < length) {
      this.#appendMessage = Buffer.allocUnsafe(length);
      APPEND_HEAD.copy(this.#appendMessage);
    }
    this.#appendMessage.write(audio, APPEND_HEAD.length, 'latin1');
    APPEND_TAIL.copy(this.#appendMessage, length - APPEND_TAIL.length);
    this.#socket.send(this.#appendMessage.subarray(0, length), { binary: false });
  }

  commit(): void {
    this.#send({ type: 'input_audio_buffer.commit' });
  }

  clearInput(): void {
    this.#send({ type: 'input_audio_buffer.clear' });
  }

  createResponse(): void {
    this.#send({ type: 'response.create' });
  }

  cancelResponse(): void {
    this.#send({ type: 'response.cancel' });
  }

  truncate(itemId: string, contentIndex: number, audioEndMs: number): void {
    this.#send({ type: 'conversation.item.truncate', item_id: itemId, content_index: contentIndex, audio_end_ms: Math.round(audioEndMs) });
  }

  /** Takes an item out of the conversation's context (conversation.item.delete): the model no longer reads it. */
  deleteItem(itemId: string): void {
    this.#send({ type: 'conversation.item.delete', item_id: itemId });
  }

  /** A function call's result, for the model (then `createResponse()` to have it speak about it). */
  sendFunctionOutput(callId: string, output: string): void {
    this.#send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output } });
  }

  /**
   * A line spoken as is, as a whole response turn of its own (no response.create after it). Returns the
   * event's id, which an error refusing it names; undefined when the socket was closed and nothing went.
   */
  forceMessage(text: string, options: { interruptible?: boolean } = {}): string | undefined {
    return this.#send({
      type: 'conversation.item.create',
      item: {
        type: 'force_message',
        role: 'assistant',
        interruptible: options.interruptible ?? true,
        content: [{ type: 'output_text', text }],
      },
    });
  }

  /**
   * Writes `messages` into the conversation, in order, as `message` items (a member's `input_text`, the
   * model's `output_text`: the widely used realtime protocol's history items), each with an id of its own
   * so that its creation can be told apart. Resolves once the gateway announced every one; `ok: false`
   * when it refused one (an error naming its event), the socket closed, or `timeoutMs` passed first.
   */
  async addMessages(messages: readonly ConversationMessage[], timeoutMs: number): Promise<MessagesTaken> {
    const waiting = new Set<string>();
    const eventIds = new Set<string>();
    let refused: string | undefined;
    let closed = false;
    const follow = (event: RealtimeServerEvent) => {
      const created = createdItemId(event);
      if (created !== undefined) waiting.delete(created);
      if (event.type === 'error' && event.clientEventId !== undefined && eventIds.has(event.clientEventId)) refused ??= event.message;
    };
    const onClose = () => {
      closed = true;
    };
    this.on('event', follow);
    this.on('close', onClose);
    const batch = `${Date.now().toString(36)}${(++this.#eventCount).toString(36)}`;
    const itemIds = messages.map((_message, index) => `item_ctx_${batch}_${index}`);
    try {
      for (const [index, message] of messages.entries()) {
        const id = itemIds[index]!;
        const eventId = this.#send({
          type: 'conversation.item.create',
          item: {
            id,
            type: 'message',
            role: message.role,
            content: [{ type: message.role === 'user' ? 'input_text' : 'output_text', text: message.text }],
          },
        });
        if (eventId === undefined) return { ok: false, message: 'the realtime session closed' };
        waiting.add(id);
        eventIds.add(eventId);
      }
      return await waitUntil<MessagesTaken>({
        check: () => {
          if (refused !== undefined) return { ok: false, message: refused };
          if (closed) return { ok: false, message: 'the realtime session closed' };
          return waiting.size === 0 ? { ok: true, itemIds } : undefined;
        },
        subscribe: (wake) => {
          this.on('event', wake);
          this.on('close', wake);
          return () => {
            this.off('event', wake);
            this.off('close', wake);
          };
        },
        timeoutMs,
        timeoutError: () =>
          new Error(`the gateway announced ${messages.length - waiting.size} of ${messages.length} items within ${timeoutMs} ms`),
      });
    } catch (error) {
      return { ok: false, message: error instanceof Error ? error.message : String(error) };
    } finally {
      this.off('event', follow);
      this.off('close', onClose);
    }
  }

  updateSession(config: RealtimeSessionConfig): void {
    this.#send(sessionUpdate(config));
  }

  close(code = 1000, reason = 'done'): void {
    if (this.#socket.readyState === WebSocket.OPEN || this.#socket.readyState === WebSocket.CONNECTING) this.#socket.close(code, reason);
  }
}
