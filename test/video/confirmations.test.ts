import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InteractionMessage, MessagePayload } from '../../src/discord/outbox.ts';
import type { GatewayAccess } from '../../src/ports/gateway-access.ts';
import { INTERACTION_TOKEN_LIFETIME_MS, type InteractionContext } from '../../src/ports/interaction-context.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { parseHeldVideo, VideoConfirmations } from '../../src/video/confirmations.ts';
import { ENGLISH, resolveLocale } from '../../src/i18n/index.ts';
import type { SubmissionPlan } from '../../src/video/plan.ts';
import { newTaskId } from '../../src/video/repository.ts';

// A video over the server's confirmation threshold, kept in the store (real SQLite) while its member
// decides: taken once, by its member only, never after it expired, sent with the key looked up again
// (the key is never kept), and a question left unanswered says so when it expires.

const SECRET_KEY = 'sk-server-secret';
const USD = 10_000_000_000;

describe('videos waiting for their member', () => {
  let directory: string;
  let store: Store;
  let access: GatewayAccess = { ok: true, apiKey: SECRET_KEY, layer: 'compat', keyId: 'key-1' };
  const edits: { message: InteractionMessage; payload: MessagePayload }[] = [];
  let edited: (() => void) | undefined;
  let confirmations: VideoConfirmations;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'confirmations-'));
    store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
    confirmations = new VideoConfirmations({
      store,
      policy: { resolveGatewayAccess: () => Promise.resolve(access) },
      outbox: {
        editInteractionMessage: (message, payload) => {
          edits.push({ message, payload });
          edited?.();
          return Promise.resolve();
        },
      },
      vendor: 'svc',
      log: silentLogger,
    });
  });
  afterAll(async () => {
    confirmations.stop();
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  });

  function plan(): SubmissionPlan {
    return {
      operation: 'generate',
      request: { model: 'svc-imagine-video-1.5', prompt: 'a long river', duration: 10, user: 'u-hash' },
      taskId: newTaskId(),
      mode: 'text-to-video',
      model: 'svc-imagine-video-1.5',
      prompt: 'a long river',
      access: { apiKey: SECRET_KEY, layer: 'compat', keyId: 'key-1' },
      estimateUsdTicks: 0.5 * USD,
      confirmOverUsdTicks: 0.3 * USD,
    };
  }

  function context(receivedAt = Date.now()): InteractionContext {
    return {
      guildId: 'g1',
      channelId: 'c1',
      userId: 'member',
      applicationId: 'app',
      interactionToken: 'token-1',
      interactionReceivedAt: receivedAt,
      attachmentSizeLimit: 10_000_000,
    };
  }

  it('asks with a Generate and a Cancel button, keeps the plan without the key, and gives it to its member once', async () => {
    const held = plan();
    const question = await confirmations.hold(held, context());
    expect(question.content).toMatch(/^\*\*Generate for about \$0\.50\?\*\*/);
    expect(question.components[0]?.components).toMatchObject([
      { label: 'Generate', custom_id: `video:confirm:${held.taskId}` },
      { label: 'Cancel', custom_id: `video:cancel:${held.taskId}` },
    ]);
    await confirmations.shown(held.taskId, 'followup-1');

    expect(await confirmations.take(held.taskId, { guildId: 'g1', userId: 'someone' })).toEqual({ status: 'others', userId: 'member' });
    expect(await confirmations.take(held.taskId, { guildId: 'g2', userId: 'member' })).toEqual({ status: 'gone' });
    const taken = await confirmations.take(held.taskId, { guildId: 'g1', userId: 'member' });
    if (taken.status !== 'taken') throw new Error(`expected the video, got ${taken.status}`);
    expect(JSON.stringify(taken.held)).not.toContain(SECRET_KEY);
    expect(taken.held.question).toEqual({ applicationId: 'app', interactionToken: 'token-1', messageId: 'followup-1' });
    expect(await confirmations.take(held.taskId, { guildId: 'g1', userId: 'member' })).toEqual({ status: 'gone' });

    const prepared = await confirmations.planOf(taken.held);
    expect(prepared).toEqual({ ok: true, plan: held });
    access = { ok: true, apiKey: SECRET_KEY, layer: 'native', keyId: 'key-1' };
    expect((await confirmations.planOf(taken.held)).ok).toBe(false);
    access = { ok: true, apiKey: SECRET_KEY, layer: 'compat', keyId: 'key-1' };
  });

  it('asks about a job of variants as a whole, and keeps its size for the press', async () => {
    const held: SubmissionPlan = { ...plan(), estimateUsdTicks: 0.4 * USD, variants: 3 };
    const question = await confirmations.hold(held, context());
    expect(question.content).toMatch(/^\*\*Generate 3 variants for about \$1\.20\?\*\*\n/);
    const taken = await confirmations.take(held.taskId, { guildId: 'g1', userId: 'member' });
    if (taken.status !== 'taken') throw new Error(`expected the video, got ${taken.status}`);
    expect(await confirmations.planOf(taken.held)).toEqual({ ok: true, plan: held });
  });

  it('is gone once its question expired, and the question says so when nobody answered it', async () => {
    const held = plan();
    // Its interaction came in so long ago that its token is about to end.
    const receivedAt = Date.now() - INTERACTION_TOKEN_LIFETIME_MS + 30_000 + 50;
    await confirmations.hold(held, context(receivedAt));
    const closed = new Promise<void>((resolve) => {
      edited = resolve;
    });
    await confirmations.shown(held.taskId, '@original');
    await closed;
    expect(edits.at(-1)).toEqual({
      message: { applicationId: 'app', interactionToken: 'token-1', messageId: '@original' },
      payload: { content: expect.stringContaining('expired unanswered: nothing was sent') as unknown, components: [] },
    });
    expect(await confirmations.take(held.taskId, { guildId: 'g1', userId: 'member' })).toEqual({ status: 'gone' });
  });
});

describe('a held video as an earlier version stored it', () => {
  /** As the versions before records had a version wrote it (to 2026-11-28). */
  const unversioned = {
    guildId: '100000000000000001',
    channelId: '100000000000000002',
    userId: '100000000000000003',
    question: { applicationId: '100000000000000004', interactionToken: 'token', messageId: '@original' },
    expiresAt: 1_764_300_870_000,
    plan: {
      operation: 'generate',
      request: { model: 'svc-imagine-video-1.5', prompt: 'a long river', duration: 10 },
      taskId: 'vmi3abc0123456789ab',
      mode: 'text-to-video',
      model: 'svc-imagine-video-1.5',
      prompt: 'a long river',
      layer: 'compat',
      keyId: 'key-1',
      estimateTicks: 5 * USD,
      confirmOverTicks: 2 * USD,
      postedSource: { channelId: '100000000000000002', messageId: '100000000000000008', fileName: 'video-v1.mp4' },
    },
    locale: 'fr',
  };

  /** The plan as this version keeps it: its amounts named as USD ticks. */
  const { estimateTicks, confirmOverTicks, ...plan } = unversioned.plan;
  const currentPlan = { ...plan, estimateUsdTicks: estimateTicks, confirmOverUsdTicks: confirmOverTicks };

  it("is read as this version keeps it, in its member's language", () => {
    const held = parseHeldVideo(JSON.parse(JSON.stringify(unversioned)));
    expect(held).toEqual({ ...unversioned, plan: currentPlan, v: 2, locale: resolveLocale('fr', undefined, 'member') });
  });

  it('of version 1 (amounts named …Ticks) is read with its amounts as USD ticks', () => {
    const held = parseHeldVideo(JSON.parse(JSON.stringify({ ...unversioned, v: 1 })));
    expect(held).toEqual({ ...unversioned, plan: currentPlan, v: 2, locale: resolveLocale('fr', undefined, 'member') });
  });

  it("from before the member's language was kept, is worded in English; a Vary note worded then goes with its words", () => {
    const { locale: _none, ...older } = unversioned;
    const held = parseHeldVideo(JSON.parse(JSON.stringify({ ...older, plan: { ...older.plan, note: 'Sent without its first frame.' } })));
    expect(held.locale).toBe(ENGLISH);
    expect(held.plan).toEqual(currentPlan);
  });
});
