import type { IncomingMessage } from 'node:http';

/**
 * A request body, or undefined when it is (or announces itself) larger than `maxBytes`: then the rest
 * is drained unread, so the caller can still answer on the same connection.
 */
export async function readBodyWithin(request: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    request.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > maxBytes) {
      request.resume();
      return undefined;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
