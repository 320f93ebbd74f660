import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REST } from 'discord.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { resolveLocale } from '../../src/i18n/index.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { DEFAULT_ATTACHMENT_SIZE_LIMIT, type InteractionContext } from '../../src/ports/interaction-context.ts';
import type { ServerRules } from '../../src/settings/guild-settings.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';
import { SettingsService } from '../../src/settings/service.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { createVideo, type Video } from '../../src/video/index.ts';
import type { Prepared } from '../../src/video/plan.ts';
import type { AttachmentInput, GenerationInput } from '../../src/video/requests.ts';
import { taskRecord } from '../support/task-result.ts';
import { worded } from '../support/worded.ts';

// A server's blocked words, on every way a prompt reaches the video part: the command's and the forms'
// preparations, Change and regenerate, Regenerate and Vary (a prompt let through before the rule), a held
// video confirmed after the rule came. The real settings service on a real SQLite file
// holds the rules, set as /config sets them (SettingsService.update); each refusal comes before anything
// is stored, reserved or sent (no task, nothing at the gateway: the pool here has no gateway to reach).

const GUILD = '100000000000000001';
const ADMIN = '200000000000000002';
const MEMBER = '300000000000000003';
const CHANNEL = '400000000000000005';
const OPERATOR_KEY = 'operator-key-0f1e2d3c4b';

let directory: string;
let store: Store;
let clients: GatewayClientPool;
let settings: SettingsService;
let video: Video;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'prompt-rules-'));
  store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  // Nothing listens there: a request that reached the gateway would fail the test.
  clients = new GatewayClientPool({ baseUrl: 'http://127.0.0.1:9', log: silentLogger, retry: { maxRetries: 0 } });
  settings = new SettingsService({
    store,
    clients,
    log: silentLogger,
    operatorKey: OPERATOR_KEY,
    defaultLayer: 'compat',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: DEFAULT_PRICES,
  });
  video = createVideo({ store, clients, policy: settings, outbox: new DiscordOutbox(new REST()), vendor: 'svc', log: silentLogger });
});
afterEach(() => setRules({ blockedWords: [], denied: [] }));
afterAll(async () => {
  await video.sender.stop();
  await video.tracker.stop();
  video.confirmations.stop();
  await clients.close();
  await store.close();
  rmSync(directory, { recursive: true, force: true });
});

/** The server's rules, changed as `/config rules` changes them. */
async function setRules(rules: Partial<ServerRules>): Promise<void> {
  await settings.update(GUILD, ADMIN, 'changed the rules', (current) => ({ ...current, rules: { ...current.rules, ...rules } }));
}

function context(userId = MEMBER, locale = 'en-US'): InteractionContext {
  return {
    guildId: GUILD,
    channelId: CHANNEL,
    userId,
    applicationId: 'app',
    interactionToken: 'token',
    interactionReceivedAt: Date.now(),
    attachmentSizeLimit: DEFAULT_ATTACHMENT_SIZE_LIMIT,
    locale,
  };
}

/** `/video generate prompt:<prompt>` (and Animate image's form, whose prompt goes the same way). */
function generate(prompt: string | undefined, image?: AttachmentInput): Promise<Prepared> {
  const input: Omit<GenerationInput, 'model'> & { model: undefined } = {
    prompt,
    model: undefined,
    duration: undefined,
    resolution: undefined,
    aspectRatio: undefined,
    image,
    lastFrame: undefined,
    referenceImages: [],
    voices: [],
    referenceAudio: undefined,
  };
  return video.prepare.generation(context(), input);
}

const PNG = { url: 'https://cdn.example/still.png', filename: 'still.png', contentType: 'image/png', size: 1_000 };
const MP4 = { url: 'https://cdn.example/clip.mp4', filename: 'clip.mp4', contentType: 'video/mp4', size: 1_000 };

/** A finished video of the server's, made before any rule. */
async function madeBefore(prompt: string): Promise<string> {
  const task = taskRecord({
    id: `v${Math.random().toString(36).slice(2, 9)}`,
    guildId: GUILD,
    channelId: CHANNEL,
    userId: MEMBER,
    layer: 'compat',
    model: 'svc-imagine-video',
    prompt,
    request: { model: 'svc-imagine-video', prompt },
    state: 'succeeded',
    createdAt: Date.now(),
  });
  await video.tasks.create(task);
  return task.id;
}

describe('a prompt with a blocked word', () => {
  it('is refused naming the word and the option, whatever its case and punctuation; nothing is stored', async () => {
    await setRules({ blockedWords: ['dragon'] });
    // The prompt refused comes with the refusal, for the server's moderation log.
    expect(worded(await generate('DRAGON!'))).toEqual({
      ok: false,
      message: '`prompt`: this server\'s rules do not allow "dragon".',
      prompt: 'DRAGON!',
    });
    expect(worded(await generate('a red-Dragón, breathing fire'))).toMatchObject({ ok: false });
    expect(await video.tasks.recentForUser(GUILD, MEMBER)).toEqual([]);
  });

  it('is not a word that only starts with one: "dragonfly" passes `dragon`, `dragon*` refuses it', async () => {
    await setRules({ blockedWords: ['dragon'] });
    expect(await generate('a dragonfly over a pond')).toMatchObject({ ok: true });
    await setRules({ blockedWords: ['dragon*'] });
    expect(worded(await generate('a dragonfly over a pond'))).toEqual({
      ok: false,
      message: '`prompt`: this server\'s rules do not allow "dragon*".',
      prompt: 'a dragonfly over a pond',
    });
  });

  it('refuses nothing on a server without rules, nor a video made from pictures alone', async () => {
    expect(await generate('a dragon')).toMatchObject({ ok: true });
    await setRules({ blockedWords: ['dragon'] });
    expect(await generate(undefined, PNG)).toMatchObject({ ok: true });
  });

  it('in the Edit and Extend forms (and their commands) is refused before the source is even looked at, in the member’s language', async () => {
    await setRules({ blockedWords: ['red dragon'] });
    for (const operation of ['edit', 'extend'] as const) {
      const prepared = await video.prepare.editOrExtension(context(MEMBER, 'de'), operation, {
        prompt: 'Make it a RED   dragon.',
        model: undefined,
        duration: undefined,
        source: { attachment: MP4 },
      });
      expect(worded(prepared, resolveLocale('de', undefined, 'member'))).toEqual({
        ok: false,
        message: '`prompt`: Die Regeln dieses Servers erlauben „red dragon“ nicht.',
        prompt: 'Make it a RED   dragon.',
      });
    }
    // A task that does not exist would be refused as unknown: the word comes first.
    const unknown = await video.prepare.editOrExtension(context(), 'extend', {
      prompt: 'the red dragon lands',
      model: undefined,
      duration: undefined,
      source: { taskRef: 'vnothere' },
    });
    expect(unknown).toMatchObject({ ok: false, notice: { key: 'video.refusal.blocked-word' } });
  });

  it('typed in Change and regenerate is refused as typed; the task’s own prompt, changed away, passes', async () => {
    const taskId = await madeBefore('a lake at dawn');
    await setRules({ blockedWords: ['dragon'] });
    expect(worded(await video.prepare.regeneration(context(), taskId, { prompt: 'a lake with a dragon' }))).toEqual({
      ok: false,
      message: '`prompt`: this server\'s rules do not allow "dragon".',
      prompt: 'a lake with a dragon',
    });
    const dragonTask = await madeBefore('a dragon over a lake');
    expect(await video.prepare.regeneration(context(), dragonTask, { prompt: 'a heron over a lake' })).toMatchObject({ ok: true });
  });

  it('made before the rule is refused by Regenerate and Vary: the rules are checked again', async () => {
    const taskId = await madeBefore('a dragon over a lake');
    expect(await video.prepare.regeneration(context(), taskId)).toMatchObject({ ok: true });
    await setRules({ blockedWords: ['dragon'] });
    const again = 'This video\'s prompt contains "dragon", which this server\'s rules do not allow, so it cannot be made again.';
    const refused = { ok: false, message: again, prompt: 'a dragon over a lake' };
    expect(worded(await video.prepare.regeneration(context(), taskId))).toEqual(refused);
    expect(worded(await video.vary(context(), taskId))).toEqual(refused);
  });

  it('held for its member’s confirmation is refused when confirmed after the rule came', async () => {
    const prepared = await generate('a dragon at sea');
    if (!prepared.ok) throw new Error('the video was refused before any rule');
    await video.confirmations.hold(prepared.plan, context());
    await setRules({ blockedWords: ['dragon'] });
    const taken = await video.confirmations.take(prepared.plan.taskId, { guildId: GUILD, userId: MEMBER });
    if (taken.status !== 'taken') throw new Error(`the held video was ${taken.status}`);
    expect(worded(await video.confirmations.planOf(taken.held))).toEqual({
      ok: false,
      message: '`prompt`: this server\'s rules do not allow "dragon".',
      prompt: 'a dragon at sea',
    });
  });
});
