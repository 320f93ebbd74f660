import WebSocket from 'ws';
import { isRecord } from '../lib/json.ts';
import { websocketText } from '../lib/websocket-text.ts';

// A gateway client frame by frame, for tests that look at what the stand-in's gateway sends (no library
// in between): frames are kept in order and awaited one after another.

export interface Frame {
  op: number;
  t: string | null;
  s: number | null;
  d: unknown;
}

/** A gateway connection whose frames can be awaited in order. */
export class RawGateway {
  readonly socket: WebSocket;
  readonly frames: Frame[] = [];
  #cursor = 0;
  #waiters: (() => void)[] = [];

  constructor(url: string) {
    this.socket = new WebSocket(`${url}?v=10&encoding=json`);
    this.socket.on('message', (data) => {
      const parsed: unknown = JSON.parse(websocketText(data));
      if (!isRecord(parsed) || typeof parsed.op !== 'number') return;
      this.frames.push({
        op: parsed.op,
        t: typeof parsed.t === 'string' ? parsed.t : null,
        s: typeof parsed.s === 'number' ? parsed.s : null,
        d: parsed.d,
      });
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  send(op: number, d: unknown): void {
    this.socket.send(JSON.stringify({ op, d }));
  }

  /** The next frame after the last one returned that matches; frames skipped on the way stay readable in `frames`. */
  async next(predicate: (frame: Frame) => boolean, timeoutMs = 3000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.frames.findIndex((frame, position) => position >= this.#cursor && predicate(frame));
      if (index >= 0) {
        this.#cursor = index + 1;
        return this.frames[index]!;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error('no matching gateway frame arrived');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  dispatch(event: string): Promise<Frame> {
    return this.next((frame) => frame.op === 0 && frame.t === event);
  }

  /** Frames received since `from` (an index into `frames`). */
  since(from: number): Frame[] {
    return this.frames.slice(from);
  }

  close(): void {
    this.socket.terminate();
  }
}

/** The value at `path` inside parsed JSON (array indexes as strings), or undefined. */
export function field(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) current = Array.isArray(current) ? current[Number(key)] : isRecord(current) ? current[key] : undefined;
  return current;
}
