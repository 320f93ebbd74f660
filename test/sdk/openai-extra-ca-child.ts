import { setTimeout as delay } from 'node:timers/promises';
import OpenAI from 'openai';
import { OpenAIRealtimeWebSocket } from 'openai/realtime/websocket';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { isRecord, readString } from '../../src/lib/json.ts';

// The openai SDK as README's emulator section shows it, in a process started with
// NODE_EXTRA_CA_CERTS=<the emulator's caFile>: no `ca` option anywhere, the process trusts the emulator.
// Run by openai-realtime.test.ts with the emulator's https base URL as its argument; prints one JSON line
// with what it saw, and exits 0.

const baseUrl = process.argv[2] ?? '';

// Videos on the compatibility layer.
const client = new OpenAI({ apiKey: 'emulator-key', baseURL: `${baseUrl}/v1` });
const submitted: unknown = await client.post('/videos/generations', {
  body: { model: 'svc-imagine-video-1.5', prompt: 'a lighthouse', duration: 2 },
});
const taskId = isRecord(submitted) ? (readString(submitted, 'task_id') ?? '') : '';
let status: string | undefined;
while (status !== 'succeeded' && status !== 'failed') {
  await delay(20);
  const task: unknown = await client.get(`/videos/${taskId}`);
  status = isRecord(task) ? readString(task, 'status') : undefined;
}
const video = Buffer.from(await (await client.videos.downloadContent(taskId)).arrayBuffer());

// Realtime on the native layer, over wss.
const rt = new OpenAIRealtimeWS({ model: 'svc-voice-latest' }, new OpenAI({ apiKey: 'emulator-key', baseURL: `${baseUrl}/native/v1` }));
rt.on('error', (error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
rt.socket.on('open', () => rt.send({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } }));
const updated = await rt.emitted('session.updated');
rt.close();

// The browser flavour (the runtime's WebSocket) offers `openai-insecure-api-key.<key>`, which is not a
// subprotocol of the contract: the upgrade is refused, and the SDK reports it. The runtime's own fetch,
// on the same connector as its WebSocket, trusts the emulator: the refusal is not the certificate's.
const runtimeFetchStatus = (await fetch(`${baseUrl}/v1/models`, { headers: { authorization: 'Bearer emulator-key' } })).status;
const browserFlavour = new OpenAIRealtimeWebSocket(
  { model: 'svc-voice-latest' },
  new OpenAI({ apiKey: 'emulator-key', baseURL: `${baseUrl}/native/v1` }),
);
const browserFlavourOutcome = await new Promise<string>((resolve) => {
  browserFlavour.on('error', (error) => resolve(`error: ${error.message}`));
  browserFlavour.socket.addEventListener('open', () => resolve('opened'));
});
browserFlavour.close();

process.stdout.write(
  `${JSON.stringify({ status, videoBox: video.subarray(4, 8).toString('latin1'), instructions: 'instructions' in updated.session ? updated.session.instructions : undefined, runtimeFetchStatus, browserFlavourOutcome })}\n`,
);
