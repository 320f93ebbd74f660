import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BotMetrics, VoiceDirection } from '../lib/metrics.ts';

// The bot's metrics in a prom-client registry: Node's defaults (event-loop delay included) and what the
// parts record through BotMetrics. Every label value comes from a fixed set or is an id-free route.

const PREFIX = 'bot_';
/** Seconds from the gateway's terminal status to the posted message. */
const POST_DELAY_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900];
const VOICE_LATENCY_BUCKETS = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 5];
/** Seconds a video job waited in its key's line, from asked to sent: most none, a busy key minutes. */
const QUEUE_WAIT_BUCKETS = [0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600];

export interface OpsMetrics extends BotMetrics {
  readonly registry: Registry;
}

export interface OpsMetricsOptions {
  /** Video tasks the process follows right now (read at each scrape). */
  followedVideoTasks?: () => number;
}

export function createOpsMetrics(options: OpsMetricsOptions = {}): OpsMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const gatewayRequests = new Counter({
    name: `${PREFIX}gateway_requests_total`,
    help: 'Requests to the video and voice gateway, by method, route (ids taken out) and HTTP status (error: no answer).',
    labelNames: ['method', 'route', 'status'],
    registers,
  });
  const submissions = new Counter({
    name: `${PREFIX}video_submissions_total`,
    help: 'Video submissions by outcome (accepted, refused, limited, unknown), layer and gateway error code.',
    labelNames: ['outcome', 'layer', 'code'],
    registers,
  });
  const finished = new Counter({
    name: `${PREFIX}video_tasks_finished_total`,
    help: 'Video tasks that reached a terminal state, by state and layer.',
    labelNames: ['state', 'layer'],
    registers,
  });
  const lost = new Counter({
    name: `${PREFIX}video_tasks_lost_total`,
    help: 'Video tasks the bot stopped following because their stored record disappeared (gone) or could not be read (unreadable).',
    labelNames: ['reason'],
    registers,
  });
  const polls = new Counter({
    name: `${PREFIX}video_polls_total`,
    help: "Polls of a video task's status at the gateway, by layer.",
    labelNames: ['layer'],
    registers,
  });
  const postDelay = new Histogram({
    name: `${PREFIX}video_post_delay_seconds`,
    help: "Seconds from the gateway's terminal status to the posted message.",
    buckets: POST_DELAY_BUCKETS,
    registers,
  });
  const deliveryFailures = new Counter({
    name: `${PREFIX}video_delivery_failures_total`,
    help: 'Failures to post a finished video, by reason.',
    labelNames: ['reason'],
    registers,
  });
  const rateLimited = new Counter({
    name: `${PREFIX}discord_rate_limited_total`,
    help: 'Discord REST 429s the bot met, by scope (global or route).',
    labelNames: ['scope'],
    registers,
  });
  const retries = new Counter({
    name: `${PREFIX}discord_retries_total`,
    help: 'Discord REST requests tried again (after a 429 or a 5xx).',
    registers,
  });
  const conversations = new Gauge({ name: `${PREFIX}voice_conversations`, help: 'Live voice conversations.', registers });
  const frames = new Counter({
    name: `${PREFIX}voice_frames_total`,
    help: 'Opus frames heard from voice channels (in) and played into them (out).',
    labelNames: ['direction'],
    registers,
  });
  const decryptFailures = new Counter({
    name: `${PREFIX}voice_decrypt_failures_total`,
    help: 'Voice frames that failed to decrypt (DAVE).',
    registers,
  });
  const reconnects = new Counter({
    name: `${PREFIX}realtime_reconnects_total`,
    help: 'Realtime sessions lost and reopened (each time reconnecting begins).',
    registers,
  });
  const renewals = new Counter({
    name: `${PREFIX}realtime_renewals_total`,
    help: 'Realtime sessions renewed before their time limit.',
    registers,
  });
  const latency = new Histogram({
    name: `${PREFIX}voice_latency_seconds`,
    help: 'Audio latency each way, in seconds.',
    labelNames: ['direction'],
    buckets: VOICE_LATENCY_BUCKETS,
    registers,
  });
  const spend = new Counter({
    name: `${PREFIX}spend_usd_total`,
    help: 'Dollars counted against server keys, by feature (video, voice) and kind (reported by the gateway, or estimated by the bot).',
    labelNames: ['feature', 'kind'],
    registers,
  });
  const queueWaiting = new Gauge({
    name: `${PREFIX}video_queue_waiting`,
    help: 'Video jobs waiting in the lines of the gateway keys this process sends on, as last read (no server label).',
    registers,
  });
  const queueWait = new Histogram({
    name: `${PREFIX}video_queue_wait_seconds`,
    help: 'Seconds from a video job asked for to its submission to the gateway.',
    buckets: QUEUE_WAIT_BUCKETS,
    registers,
  });
  const limitRefusals = new Counter({
    name: `${PREFIX}gateway_limit_refusals_total`,
    help: "Submissions the gateway refused for a key's limits (too_many_requests, rate_limit); the job waits again.",
    labelNames: ['code'],
    registers,
  });
  // Frames and latency are counted per packet and per append of every conversation: each direction's
  // series is looked up once, at its first count, not hashed from its labels again on every call.
  const framesBy: Partial<Record<VoiceDirection, Counter.Internal>> = {};
  const latencyBy: Partial<Record<VoiceDirection, Histogram.Internal<'direction'>>> = {};
  const { followedVideoTasks } = options;
  if (followedVideoTasks) {
    new Gauge({
      name: `${PREFIX}video_tasks_followed`,
      help: 'Video tasks this process follows (running, or finished and waiting to be posted).',
      registers,
      collect() {
        this.set(followedVideoTasks());
      },
    });
  }

  return {
    registry,
    gatewayRequest: (method, route, status) => gatewayRequests.inc({ method, route, status: String(status) }),
    videoSubmission: (outcome, layer, code) => submissions.inc({ outcome, layer, code: code ?? 'none' }),
    videoTaskFinished: (state, layer) => finished.inc({ state, layer }),
    videoTaskLost: (reason) => lost.inc({ reason }),
    videoPoll: (layer) => polls.inc({ layer }),
    videoPosted: (seconds) => postDelay.observe(seconds),
    videoDeliveryFailure: (reason) => deliveryFailures.inc({ reason }),
    discordRateLimited: (global) => rateLimited.inc({ scope: global ? 'global' : 'route' }),
    discordRetry: () => retries.inc(),
    voiceConversations: (change) => conversations.inc(change),
    voiceFrames: (direction, count) => (framesBy[direction] ??= frames.labels({ direction })).inc(count),
    voiceDecryptFailures: (count) => decryptFailures.inc(count),
    realtimeReconnect: () => reconnects.inc(),
    realtimeRenewal: () => renewals.inc(),
    voiceLatency: (direction, seconds) => (latencyBy[direction] ??= latency.labels({ direction })).observe(seconds),
    spend: (feature, kind, usd) => spend.inc({ feature, kind }, usd),
    videoQueueWaiting: (jobs) => queueWaiting.set(jobs),
    videoQueueWaited: (seconds) => queueWait.observe(seconds),
    gatewayLimitRefusal: (code) => limitRefusals.inc({ code }),
  };
}
