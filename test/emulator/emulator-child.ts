import { isRecord } from '../../src/lib/json.ts';
import { startEmulator } from '../../src/emulator/server.ts';

// The emulator alone in a process of its own (started by emulator-process.ts), so that a test can see it
// survive what would end a process, and weigh its heap after a full garbage collection (run with
// --expose-gc). It answers the IPC message 'memory' with process.memoryUsage() taken after a collection.

function send(message: Record<string, unknown>): void {
  process.send?.(message);
}

const emulator = await startEmulator({
  config: {
    keys: { 'emulator-key': { group: 'default', quota_usd: 1_000_000_000 } },
    timing: { generation_ms: 50 },
    limits: { rate_per_minute: 1_000_000, concurrent_tasks: 1_000_000 },
  },
});

process.on('message', (message: unknown) => {
  if (!isRecord(message)) return;
  if (message.type === 'memory') {
    // Twice: the first pass may only make more garbage collectable (finalizers, weak references).
    globalThis.gc?.();
    globalThis.gc?.();
    send({ type: 'memory', heapUsed: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss });
  }
  if (message.type === 'close') void emulator.close().then(() => process.exit(0));
});
send({ type: 'listening', port: emulator.port });
