import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ComponentType, MessageFlags, REST } from 'discord.js';
import { DiscordOutbox } from '../src/discord/outbox.ts';
import { GatewayClientPool } from '../src/gateway/pool.ts';
import type { TaskResult } from '../src/gateway/types.ts';
import { readNumber, readString } from '../src/lib/json.ts';
import { silentLogger } from '../src/lib/log.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { createVideo, type Video } from '../src/video/index.ts';
import { DEFAULT_POLL_POLICY } from '../src/video/poll-policy.ts';
import { TASK_RECORD_VERSION, type TaskRecord } from '../src/video/record.ts';
import { ENGLISH } from '../src/i18n/index.ts';
import { newTaskId } from '../src/video/repository.ts';
import { openVideoPolicy } from '../test/support/open-policy.ts';

// The memory a finished video's delivery takes (download from the gateway, upload to Discord), for a
// large video under a raised upload limit: the bot's real delivery (through a file on disk), one at a
// time and several at once, against the baseline of the same video fetched and posted from memory (how
// deliveries worked before: the body buffered whole, then copied into a Blob by @discordjs/rest). The
// servers run in a child process (bench/delivery-servers.ts), so only the bot's side is measured.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MIB = 1024 * 1024;
const KEY = 'bench-key';
const SAMPLE_MS = 2;
/** Samples of live memory (after a full collection each) are further apart: a collection takes a moment. */
const LIVE_SAMPLE_MS = 50;
const CHANNEL = '100000000000000002';

export interface MemoryPeak {
  /** The largest rise of the resident set over the run's start, in bytes. */
  rss: number;
  /** The largest rise of memory held by ArrayBuffers and Buffers (outside the JS heap). */
  arrayBuffers: number;
  /** The largest rise of the JS heap. */
  heap: number;
}

export interface DeliveryBenchReport {
  videoBytes: number;
  concurrent: number;
  /** One delivery as the bot makes it. */
  streamed: MemoryPeak;
  /** The same, counting only what is held (a full collection before each sample). */
  streamedLive: MemoryPeak;
  /** `concurrent` deliveries at once. */
  streamedConcurrent: MemoryPeak;
  /** The same video fetched into memory and posted from there. */
  buffered: MemoryPeak;
  bufferedLive: MemoryPeak;
  /** What Discord's side received per post (all of the video, plus the multipart framing). */
  postedBytes: number[];
  wallSeconds: number;
}

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run benchmarks with --expose-gc (npm run bench does)');
  gc();
  gc();
}

/**
 * Runs `work` and reports how far memory rose above where it was before, sampled every few ms. `live`:
 * each sample follows a full collection, so it counts what the work holds, not the chunks it already
 * let go of and the collector has not reclaimed yet.
 */
async function peakDuring(work: () => Promise<unknown>, live = false): Promise<MemoryPeak> {
  collectGarbage();
  const before = process.memoryUsage();
  const peak: MemoryPeak = { rss: 0, arrayBuffers: 0, heap: 0 };
  const sample = (): void => {
    if (live) collectGarbage();
    const now = process.memoryUsage();
    peak.rss = Math.max(peak.rss, now.rss - before.rss);
    peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers - before.arrayBuffers);
    peak.heap = Math.max(peak.heap, now.heapUsed - before.heapUsed);
  };
  const timer = setInterval(sample, live ? LIVE_SAMPLE_MS : SAMPLE_MS);
  try {
    await work();
  } finally {
    clearInterval(timer);
    sample();
  }
  return peak;
}

const policy = openVideoPolicy({ access: { apiKey: KEY, layer: 'native', keyId: 'bench' } });

function finishedTask(attachmentSizeLimit: number): TaskRecord {
  const id = newTaskId();
  const now = Date.now();
  return {
    v: TASK_RECORD_VERSION,
    id,
    gatewayId: `req_${id}`,
    layer: 'native',
    keyId: 'bench',
    guildId: '100000000000000001',
    channelId: CHANNEL,
    userId: '100000000000000003',
    operation: 'generate',
    mode: 'text-to-video',
    model: 'svc-imagine-video-1.5',
    prompt: 'benchmark',
    request: { model: 'svc-imagine-video-1.5', prompt: 'benchmark' },
    createdAt: now,
    submittedAt: now,
    state: 'running',
    polls: 0,
    pollErrors: 0,
    outcome: {},
    card: { applicationId: '100000000000000004', interactionToken: 'expired', tokenExpiresAt: 0, messageId: '100000000000000005' },
    attachmentSizeLimit,
    delivery: { state: 'waiting', attempts: 0 },
    locale: ENGLISH,
  };
}

/** Follows `tasks` until each is posted (or closed), polling the store. */
async function deliverAll(video: Video, tasks: TaskRecord[]): Promise<void> {
  for (const task of tasks) {
    await video.tasks.create(task);
    video.tracker.track(task);
  }
  for (const task of tasks) {
    for (;;) {
      const current = await video.tasks.get(task.id);
      if (current?.delivery.state === 'posted') break;
      if (current?.delivery.state === 'closed') throw new Error(`task ${task.id} was not posted: ${current.delivery.lastError ?? ''}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

export async function benchmarkDelivery(options: { videoBytes?: number; concurrent?: number } = {}): Promise<DeliveryBenchReport> {
  const videoBytes = options.videoBytes ?? 50 * MIB;
  const concurrent = options.concurrent ?? 4;
  const attachmentSizeLimit = videoBytes + MIB;
  const child = spawn(join(ROOT, 'scripts', 'node'), [join(ROOT, 'bench', 'delivery-servers.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_VIDEO_BYTES: String(videoBytes) },
  });
  const directory = mkdtempSync(join(tmpdir(), 'bench-delivery-'));
  let store: Store | undefined;
  let video: Video | undefined;
  let clients: GatewayClientPool | undefined;
  let rest: REST | undefined;
  try {
    const started = performance.now();
    const info: unknown = JSON.parse(
      await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve)),
    );
    const gatewayUrl = readString(info, 'gatewayUrl');
    const apiUrl = readString(info, 'apiUrl');
    if (gatewayUrl === undefined || apiUrl === undefined || readNumber(info, 'videoBytes') !== videoBytes)
      throw new Error('the delivery bench servers did not start');

    store = await openStore(`sqlite://${join(directory, 'bench.sqlite')}`, silentLogger);
    rest = new REST({ api: apiUrl, globalRequestsPerSecond: 100_000 }).setToken('bench-token');
    const outbox = new DiscordOutbox(rest);
    clients = new GatewayClientPool({ baseUrl: gatewayUrl, log: silentLogger });
    const running = createVideo({
      store,
      clients,
      policy,
      outbox,
      vendor: 'svc',
      log: silentLogger,
      pollPolicy: { ...DEFAULT_POLL_POLICY, intervalMs: 10, maxIntervalMs: 10 },
      cardEditIntervalMs: 0,
      downloadDirectory: join(directory, 'downloads'),
    });
    video = running;
    // A first small round warms up the code paths and connections, so the runs measure deliveries only.
    await deliverAll(running, [finishedTask(attachmentSizeLimit)]);

    const streamed = await peakDuring(() => deliverAll(running, [finishedTask(attachmentSizeLimit)]));
    const streamedLive = await peakDuring(() => deliverAll(running, [finishedTask(attachmentSizeLimit)]), true);
    const streamedConcurrent = await peakDuring(() =>
      deliverAll(
        running,
        Array.from({ length: concurrent }, () => finishedTask(attachmentSizeLimit)),
      ),
    );

    // The baseline: the same video, fetched whole into memory and posted from there.
    const client = clients.get(KEY, 'native');
    const done = await client.getTask('req_baseline');
    const inMemory = async (): Promise<void> => {
      const downloaded = await client.downloadVideo(done satisfies TaskResult, { maxBytes: attachmentSizeLimit });
      const file = { name: 'video.mp4', contentType: 'video/mp4', data: downloaded.bytes };
      await outbox.postCard(
        CHANNEL,
        {
          flags: MessageFlags.IsComponentsV2,
          components: [
            {
              type: ComponentType.Container,
              components: [
                { type: ComponentType.TextDisplay, content: 'baseline' },
                { type: ComponentType.MediaGallery, items: [{ media: { url: `attachment://${file.name}` } }] },
              ],
            },
          ],
          file,
        },
        'baseline',
      );
    };
    const buffered = await peakDuring(inMemory);
    const bufferedLive = await peakDuring(inMemory, true);

    const posts: unknown = await (await fetch(`${apiUrl}/bench/posts`)).json();
    return {
      videoBytes,
      concurrent,
      streamed,
      streamedLive,
      streamedConcurrent,
      buffered,
      bufferedLive,
      postedBytes: Array.isArray(posts) ? posts.filter((size): size is number => typeof size === 'number') : [],
      wallSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    await video?.tracker.stop();
    await clients?.close();
    await store?.close();
    rest?.clearHashSweeper();
    rest?.clearHandlerSweeper();
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(directory, { recursive: true, force: true });
  }
}

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MB`;
}

function describePeak(peak: MemoryPeak, videoBytes: number, deliveries = 1): string {
  return `rss +${mib(peak.rss)} (${((peak.rss / videoBytes / deliveries) * 100).toFixed(1)}% of the video per delivery), buffers +${mib(peak.arrayBuffers)}, heap +${mib(peak.heap)}`;
}

export function printDeliveryReport(report: DeliveryBenchReport): void {
  const perVideo = Math.min(...report.postedBytes);
  const lines = [
    `video delivery: a ${mib(report.videoBytes)} video, upload limit raised above it, in ${report.wallSeconds.toFixed(1)} s`,
    `  one delivery         ${describePeak(report.streamed, report.videoBytes)}`,
    `    held               ${describePeak(report.streamedLive, report.videoBytes)}  (target: a few MB whatever the size)`,
    `  ${report.concurrent} at once            ${describePeak(report.streamedConcurrent, report.videoBytes, report.concurrent)}`,
    `  baseline, in memory  ${describePeak(report.buffered, report.videoBytes)}  (the video fetched whole, then posted from a Buffer)`,
    `    held               ${describePeak(report.bufferedLive, report.videoBytes)}`,
    `  one delivery / baseline: rss ${(report.streamed.rss / Math.max(1, report.buffered.rss)).toPrecision(2)}x; held buffers ${(report.streamedLive.arrayBuffers / Math.max(1, report.bufferedLive.arrayBuffers)).toPrecision(2)}x`,
    '  ("buffers" without "held" include chunks already let go of that the collector has not reclaimed yet: they do not grow with the video)',
    `  Discord received     ${report.postedBytes.length} posts of at least ${perVideo} bytes each (the video is ${report.videoBytes})`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
