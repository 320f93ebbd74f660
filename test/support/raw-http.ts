import { once } from 'node:events';
import { connect } from 'node:net';

/** Sends raw bytes (what fetch and ws refuse to send) and returns all the server answered until it closed the connection. */
export async function rawHttp(port: number, text: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.write(text);
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('utf8');
}
