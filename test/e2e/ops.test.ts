import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from '../support/world.ts';
import { pollUntil } from '../support/poll.ts';
import { audible } from 'discord-standin';
import { parsePrometheus, total, type Sample } from '../support/prometheus.ts';

// The operator's port (OPS_PORT): /healthz, /readyz through a Discord gateway outage, and /metrics as
// Prometheus text whose counters move as a /video task and a voice conversation run, with no secret,
// prompt or user id in it.

const PROMPT = 'a lighthouse that must never appear in metrics';
const SECRET = 'ops-test-encryption-secret-0123456789';
/** How often /readyz is asked while it is expected to change (the bot emits no event a test could await). */
const READYZ_POLL_MS = 100;

let world: World;
let base: string;

beforeAll(async () => {
  world = await startWorld({ env: { OPS_PORT: '0', KEY_ENCRYPTION_SECRET: SECRET }, emulator: { timing: { generation_ms: 200 } } });
  const listening = await world.bot.waitForLog((line) => line.msg === 'ops port listening');
  expect(listening.host).toBe('127.0.0.1');
  base = `http://127.0.0.1:${String(listening.port)}`;
}, 60_000);
afterAll(() => world?.stop());

async function get(path: string): Promise<{ status: number; type: string; body: string }> {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: await response.text() };
}

function readyzUntil(status: number, timeoutMs = 30_000): Promise<string> {
  return pollUntil({
    ask: () => get('/readyz'),
    found: (answer) => (answer.status === status ? answer.body : undefined),
    intervalMs: READYZ_POLL_MS,
    timeoutMs,
    timeoutError: (last) => new Error(`/readyz stayed ${last?.status} (${last?.body.trim()}), not ${status}`),
  });
}

async function metrics(): Promise<{ text: string; samples: Sample[] }> {
  const answer = await get('/metrics');
  expect(answer.status).toBe(200);
  expect(answer.type).toContain('text/plain');
  return { text: answer.body, samples: parsePrometheus(answer.body) };
}

describe('the ops port', () => {
  it('answers /healthz while the process runs', async () => {
    const answer = await get('/healthz');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('ok\n');
    expect((await get('/nothing')).status).toBe(404);
  });

  it('is ready, answers 503 with the reason while the Discord gateway is down, and is ready again once it is back', async () => {
    await readyzUntil(200);
    world.discord.takeGatewayDown();
    try {
      expect(await readyzUntil(503)).toMatch(/^not ready: not connected to Discord on shard 0/);
    } finally {
      world.discord.bringGatewayBack();
    }
    expect(await readyzUntil(200, 60_000)).toBe('ready\n');
  }, 90_000);

  it('counts a /video task from submission to post, and a voice conversation, in Prometheus text', async () => {
    const { discord, guild } = world;
    const before = (await metrics()).samples;
    for (const name of [
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_eventloop_lag_seconds',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(before.some((sample) => sample.name === name)).toBe(true);
    }

    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: PROMPT },
    });
    const posted = await discord.waitForMessage(guild.textChannelId, (message) => message.attachments.length > 0, 20_000);
    await world.bot.waitForLog((line) => line.msg === 'video posted' && line.message === posted.id);
    await run.response();

    const { samples: afterVideo } = await metrics();
    const moved = (name: string, labels: Record<string, string> = {}) => total(afterVideo, name, labels) - total(before, name, labels);
    expect(moved('bot_video_submissions_total', { outcome: 'accepted', layer: 'compat' })).toBe(1);
    expect(moved('bot_video_tasks_finished_total', { state: 'succeeded', layer: 'compat' })).toBe(1);
    expect(moved('bot_video_polls_total', { layer: 'compat' })).toBeGreaterThanOrEqual(1);
    expect(moved('bot_gateway_requests_total', { method: 'POST', route: '/v1/videos/generations', status: '200' })).toBe(1);
    expect(moved('bot_gateway_requests_total', { method: 'GET', route: '/v1/videos/:id', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(moved('bot_video_post_delay_seconds_count')).toBe(1);
    // Every video passes through its key's line: sent at once here, and nothing is left waiting.
    expect(moved('bot_video_queue_wait_seconds_count')).toBe(1);
    expect(total(afterVideo, 'bot_video_queue_waiting')).toBe(0);
    expect(moved('bot_gateway_limit_refusals_total')).toBe(0);

    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    await discord
      .runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'join' })
      .reply();
    await discord.voice.waitForBotConnection(guild.id);
    // The join is answered once its first line (that the bot listens) was heard: what the bot plays next is new.
    discord.voice.clearBotAudio(guild.id);
    // What the call counts from here is the member's turn and its answer, not that first line.
    const { samples: joined } = await metrics();
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 440, ms: 500, amplitude: 0.5 });
    // The emulator echoes the turn: the bot plays it, then stops speaking (op 5 with no flags).
    await discord.voice.waitForBotAudio(guild.id, (frames) => audible(frames).length >= 20, 15_000);
    await discord.voice.waitForBotSpeaking(guild.id, (events) => events.at(-1)?.speaking === 0, 15_000);
    const { samples: inCall } = await metrics();
    const movedInCall = (name: string, labels: Record<string, string> = {}) => total(inCall, name, labels) - total(joined, name, labels);
    expect(total(inCall, 'bot_voice_conversations')).toBe(1);
    // 20 ms frames: half a second of speech is 25 of them, all heard; the echo is as long, all played.
    expect(movedInCall('bot_voice_frames_total', { direction: 'in' })).toBeGreaterThanOrEqual(25);
    expect(movedInCall('bot_voice_frames_total', { direction: 'out' })).toBeGreaterThanOrEqual(20);
    // Each append carries its oldest packet's wait; the answer its wait from first audio to play.
    expect(movedInCall('bot_voice_latency_seconds_count', { direction: 'in' })).toBeGreaterThanOrEqual(12);
    expect(movedInCall('bot_voice_latency_seconds_count', { direction: 'out' })).toBe(1);
    expect(movedInCall('bot_voice_latency_seconds_bucket', { direction: 'out', le: '1' })).toBe(1);
    // The call is end-to-end encrypted and every frame decrypted.
    expect(movedInCall('bot_voice_decrypt_failures_total')).toBe(0);
    expect(total(inCall, 'bot_realtime_reconnects_total')).toBe(0);

    await discord
      .runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'leave' })
      .reply();
    expect(total((await metrics()).samples, 'bot_voice_conversations')).toBe(0);
  }, 60_000);

  it('puts no secret, prompt or user id in /metrics, and only bounded label values', async () => {
    const { discord, guild } = world;
    const { text, samples } = await metrics();
    for (const forbidden of [
      discord.botToken,
      'emulator-key',
      SECRET,
      PROMPT,
      'lighthouse',
      guild.member.id,
      guild.admin.id,
      discord.botUserId,
      guild.id,
    ]) {
      expect(text).not.toContain(forbidden);
    }
    for (const sample of samples.filter((sample) => sample.name.startsWith('bot_'))) {
      for (const value of Object.values(sample.labels)) expect(value).toMatch(/^[a-zA-Z0-9_:/.+-]{1,64}$/);
      if (sample.labels.route !== undefined) expect(sample.labels.route).toMatch(/^(\/(v\d+|[a-z]+|:id))+$|^video url$/);
    }
  });
});
