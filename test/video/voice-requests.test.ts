import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import type { GuildVideoPolicy } from '../../src/ports/guild-policy.ts';
import type { VoiceCaller } from '../../src/ports/voice-video.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { EndUserIds } from '../../src/video/end-users.ts';
import { VideoPreparation } from '../../src/video/prepare.ts';
import { TaskRepository } from '../../src/video/repository.ts';
import { VoiceVideo } from '../../src/video/voice-requests.ts';
import { blockedWordIn, compileBlockedWords } from '../../src/settings/blocked-words.ts';
import { notice, refuse } from '../../src/wording/notice.ts';
import type { LoggedRefusal } from '../../src/ports/moderation-log.ts';
import { startOneSlotKey, type OneSlotKey } from '../support/one-slot-key.ts';

// A video asked for by voice is refused as /video refuses it, in words the voice model says where the
// whole channel hears them: the server's language.

const caller: VoiceCaller = {
  guildId: 'g1',
  channelId: 'c1',
  userId: 'u1',
  displayName: 'Ana',
  roleIds: [],
  isServerManager: false,
  alsoHeard: [],
};
const request = { prompt: 'a heron fishing at dawn', duration: undefined, aspectRatio: undefined, resolution: undefined };

function unused(): never {
  throw new Error('a refused request reaches no further');
}

/** A server without a key: every request is refused before anything else is read. */
const keyless: GuildVideoPolicy = {
  resolveGatewayAccess: () => Promise.resolve(refuse('config.key.no-key')),
  defaults: unused,
  checkLimits: unused,
  recordSubmission: unused,
  releaseSubmission: unused,
  estimate: unused,
  recordCost: unused,
};

/** Each block's own SQLite store, in a folder of its own: all of them closed and deleted after the file. */
const opened: { store: Store; directory: string }[] = [];
async function openedStore(prefix: string): Promise<Store> {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  const store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  opened.push({ store, directory });
  return store;
}
afterAll(async () => {
  for (const { store, directory } of opened) {
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  }
});

describe('a video asked for by voice on a server without a key', () => {
  let store: Store;
  let tasks: TaskRepository;
  let prepare: VideoPreparation;

  beforeAll(async () => {
    store = await openedStore('voice-requests-');
    tasks = new TaskRepository(store, silentLogger);
    prepare = new VideoPreparation({ policy: keyless, repository: tasks, endUsers: new EndUserIds(store), vendor: 'svc' });
  });

  function videoByVoice(serverLanguage: string | undefined): VoiceVideo {
    return new VoiceVideo({
      prepare,
      submit: unused,
      tasks,
      outbox: { postCard: unused },
      mayUseVideo: () => Promise.resolve({ ok: true }),
      ...(serverLanguage === undefined ? {} : { serverContext: () => ({ guildLocale: serverLanguage }) }),
      log: silentLogger,
    });
  }

  it("is refused in /video's words, in the server's language", async () => {
    expect(await videoByVoice('de').generate(caller, request)).toEqual({
      status: 'refused',
      message: 'Dieser Server hat noch keinen Gateway-Schlüssel: Ein Server-Admin kann mit `/config key` einen hinzufügen.',
    });
  });

  it('is refused in English when the server has no language the bot speaks', async () => {
    expect(await videoByVoice(undefined).generate(caller, request)).toEqual({
      status: 'refused',
      message: 'This server has no gateway key yet: a server admin can add one with `/config key`.',
    });
  });
});

describe("a video asked for by voice past the server's limit", () => {
  let store: Store;

  beforeAll(async () => {
    store = await openedStore('voice-requests-limit-');
  });

  it("is refused, and the server's moderation log told who asked for what and why", async () => {
    const limited: GuildVideoPolicy = {
      resolveGatewayAccess: () => Promise.resolve({ ok: true, apiKey: 'server-key-1234', layer: 'compat', keyId: 'k1' }),
      defaults: () =>
        Promise.resolve({
          model: undefined,
          resolution: undefined,
          duration: undefined,
          aspectRatio: undefined,
          storage: { keepDays: 0, publicLink: false },
        }),
      checkLimits: () => Promise.resolve(refuse('limits.member-daily', { count: 3, retry: 'tomorrow' })),
      recordSubmission: unused,
      releaseSubmission: unused,
      estimate: () => 0,
      recordCost: unused,
    };
    const tasks = new TaskRepository(store, silentLogger);
    const refusals: LoggedRefusal[] = [];
    const byVoice = new VoiceVideo({
      prepare: new VideoPreparation({ policy: limited, repository: tasks, endUsers: new EndUserIds(store), vendor: 'svc' }),
      submit: unused,
      tasks,
      outbox: { postCard: unused },
      mayUseVideo: () => Promise.resolve({ ok: true }),
      moderationLog: { refused: (refusal) => refusals.push(refusal) },
      log: silentLogger,
    });
    expect(await byVoice.generate(caller, request)).toEqual({
      status: 'refused',
      message: "You reached this server's limit of 3 videos a day. Try again tomorrow.",
    });
    expect(refusals).toEqual([
      {
        guildId: 'g1',
        userId: 'u1',
        what: 'voice-tool',
        why: notice('limits.member-daily', { count: 3, retry: 'tomorrow' }),
        prompt: request.prompt,
      },
    ]);
  });
});

// A prompt spoken with a word the server's moderators blocked: the model is told the server's rules refused
// it, naming the word, so that it can say so; the moderation log has the refusal and the prompt.

describe('a video asked for by voice with a blocked word', () => {
  let store: Store;
  let tasks: TaskRepository;
  let prepare: VideoPreparation;
  const rules = compileBlockedWords(['dragon', 'ドラゴン']);

  beforeAll(async () => {
    store = await openedStore('voice-requests-blocked-');
    tasks = new TaskRepository(store, silentLogger);
    const policy: GuildVideoPolicy = { ...keyless, blockedWordIn: (_guildId, prompt) => Promise.resolve(blockedWordIn(rules, prompt)) };
    prepare = new VideoPreparation({ policy, repository: tasks, endUsers: new EndUserIds(store), vendor: 'svc' });
  });

  function videoByVoice(refusals: LoggedRefusal[], serverLanguage?: string): VoiceVideo {
    return new VoiceVideo({
      prepare,
      submit: unused,
      tasks,
      outbox: { postCard: unused },
      mayUseVideo: () => Promise.resolve({ ok: true }),
      ...(serverLanguage === undefined ? {} : { serverContext: () => ({ guildLocale: serverLanguage }) }),
      moderationLog: { refused: (refusal) => refusals.push(refusal) },
      log: silentLogger,
    });
  }

  it("is refused by the server's rules, naming the word, before anything is made; the log has it", async () => {
    const refusals: LoggedRefusal[] = [];
    const prompt = 'A DRAGON, flying over the bay!';
    expect(await videoByVoice(refusals).generate(caller, { ...request, prompt })).toEqual({
      status: 'refused',
      message: 'Refused by this server\'s rules: the request contains "dragon", which its moderators do not allow. No video was made.',
    });
    expect(await videoByVoice(refusals, 'ja').generate(caller, { ...request, prompt: '空を飛ぶドラゴンの群れ' })).toEqual({
      status: 'refused',
      message:
        'このサーバーのルールにより断りました: 依頼に「ドラゴン」が含まれており、モデレーターが許可していません。動画は作成されていません。',
    });
    expect(refusals).toEqual([
      { guildId: 'g1', userId: 'u1', what: 'voice-tool', why: notice('video.voice.blocked-word', { word: 'dragon' }), prompt },
      {
        guildId: 'g1',
        userId: 'u1',
        what: 'voice-tool',
        why: notice('video.voice.blocked-word', { word: 'ドラゴン' }),
        prompt: '空を飛ぶドラゴンの群れ',
      },
    ]);
  });

  it('lets a longer word through: "dragonfly" goes on (to the missing key)', async () => {
    const refusals: LoggedRefusal[] = [];
    expect(await videoByVoice(refusals).generate(caller, { ...request, prompt: 'a dragonfly on a reed' })).toMatchObject({
      status: 'refused',
      message: expect.stringMatching(/^This server has no gateway key yet/),
    });
    expect(refusals).toHaveLength(1);
    expect(refusals[0]?.why.key).toBe('config.key.no-key');
  });
});

// A request several members spoke goes as far as the most restricted of them may: one without the video
// role stops a video, one the moderators deny stops every tool; the model is told who, in the server's
// language. (The server has no key: a request every member may make gets as far as that refusal.)

describe('a video asked for by voice in a turn several members spoke', () => {
  let store: Store;
  let prepare: VideoPreparation;
  let tasks: TaskRepository;

  beforeAll(async () => {
    store = await openedStore('voice-requests-members-');
    tasks = new TaskRepository(store, silentLogger);
    prepare = new VideoPreparation({ policy: keyless, repository: tasks, endUsers: new EndUserIds(store), vendor: 'svc' });
  });

  const bo = { userId: 'u2', displayName: 'Bo', roleIds: [], isServerManager: false };
  /** What the moderation log was told, over a test. */
  const logged: LoggedRefusal[] = [];
  beforeEach(() => {
    logged.length = 0;
  });
  const withRole = { userId: 'u3', displayName: undefined, roleIds: ['r1'], isServerManager: false };

  /** Only members with role r1 may make videos; the moderators deny `denied`. */
  function videoByVoice(denied: readonly string[], serverLanguage?: string): VoiceVideo {
    return new VoiceVideo({
      prepare,
      submit: unused,
      tasks,
      outbox: { postCard: unused },
      mayUseVideo: (_guildId, member) =>
        Promise.resolve(
          member.roleIds.includes('r1')
            ? { ok: true }
            : refuse('access.roles-only', { command: '/video', roles: { phrase: 'list', items: ['<@&r1>'] } }),
        ),
      deniedMembers: () => Promise.resolve(denied),
      ...(serverLanguage === undefined ? {} : { serverContext: () => ({ guildLocale: serverLanguage }) }),
      moderationLog: { refused: (refusal) => logged.push(refusal) },
      log: silentLogger,
    });
  }

  it("makes none when another member who spoke may not, naming them; the caller without the role is told in /video's words", async () => {
    const caller3 = { ...caller, ...withRole, alsoHeard: [bo] };
    expect(await videoByVoice([]).generate(caller3, request)).toEqual({
      status: 'refused',
      message:
        'No video was made: Bo (<@u2>) spoke in this request too, and may not make videos on this server. On this server, /video is for members with <@&r1>. Ask a server admin if you need it.',
    });
    expect(await videoByVoice([]).generate({ ...caller, ...bo, alsoHeard: [withRole] }, request)).toEqual({
      status: 'refused',
      message: 'On this server, /video is for members with <@&r1>. Ask a server admin if you need it.',
    });
    // Everyone may: the request goes on (to the server's missing key).
    expect(await videoByVoice([]).generate({ ...caller3, alsoHeard: [withRole] }, request)).toMatchObject({
      message: expect.stringMatching(/^This server has no gateway key yet/),
    });
  });

  it("does nothing, not even a status, when the moderators deny a member who spoke, naming them in the server's language", async () => {
    const turn = { ...caller, ...withRole, alsoHeard: [bo] };
    expect(await videoByVoice(['u3'], 'de').generate(turn, request)).toEqual({
      status: 'refused',
      message:
        'Nichts wurde getan: <@u3> hat bei dieser Bitte mitgesprochen und darf diesen Bot nach dem Willen der Moderatoren dieses Servers nicht nutzen.',
    });
    expect(await videoByVoice(['u2']).status(turn, undefined)).toEqual({
      status: 'refused',
      message: "Nothing was done: Bo (<@u2>) spoke in this request, and this server's moderators do not let them use this bot.",
    });
    expect(await videoByVoice([]).status(turn, undefined)).toMatchObject({ status: 'not_found' });
    // Each refusal is the moderation log's too, the caller named as who asked.
    expect(logged.map(({ userId, what, why }) => [userId, what, why.key])).toEqual([
      ['u3', 'voice-tool', 'video.voice.member-denied'],
      ['u3', 'voice-tool', 'video.voice.member-denied'],
    ]);
  });
});

// A video asked for by voice while the server's key is busy waits in the key's line: the model is told it
// is queued and its place, and video_status says where it stands now, or who took it out of line.

describe('a video asked for by voice while the key takes no more', () => {
  let line: OneSlotKey;
  beforeAll(async () => {
    line = await startOneSlotKey();
  }, 30_000);
  afterAll(() => line?.stop());

  function videoByVoice(): VoiceVideo {
    const { video, outbox } = line;
    return new VoiceVideo({
      prepare: video.prepare,
      submit: (plan, context) => video.submit(plan, context),
      tasks: video.tasks,
      outbox,
      mayUseVideo: () => Promise.resolve({ ok: true }),
      currentPlace: (task) => video.sender.currentPlace(task),
      log: silentLogger,
    });
  }

  it('is queued with its place in line, which video_status reads as the line moves; a cancelled one says so', async () => {
    const { guild, video } = line;
    const voice = videoByVoice();
    const member: VoiceCaller = { ...caller, guildId: guild.id, channelId: guild.textChannelId, userId: guild.member.id };
    const ask = (prompt: string, variants?: number) =>
      voice.generate(member, { ...request, prompt, ...(variants === undefined ? {} : { variants }) });

    const running = await ask('a heron fishing at dawn');
    expect(running).toMatchObject({ status: 'submitted', message: expect.stringMatching(/^The video is being made, for /) });
    const second = await ask('a fox surfing at sunset');
    expect(second).toMatchObject({ status: 'queued', place: 1 });
    expect(second.message).toMatch(
      new RegExp(
        `^The video is queued, 1st in line for this server's key, for .+: task ${second.task}\\. It starts when the key has a free slot; its card in the text channel shows its place`,
      ),
    );
    const third = await ask('a cat asleep in the sun');
    expect(third).toMatchObject({ status: 'queued', place: 2, message: expect.stringMatching(/^The video is queued, 2nd in line/) });
    const variants = await ask('an owl at night', 2);
    expect(variants).toMatchObject({
      status: 'queued',
      place: 3,
      message: expect.stringMatching(/^2 variants of the video are queued, the first 3rd in line for this server's key/),
    });

    expect((await voice.status(member, third.task)).message).toBe(
      `Task ${third.task} ("a cat asleep in the sun") is queued, 2nd in line for this server's key: it starts when the key has a free slot.`,
    );
    // The member takes their first waiting video out of line: the next moves up at once.
    expect(await video.cancelWaiting(member, second.task!, false)).toEqual({ ok: true });
    expect((await voice.status(member, third.task)).message).toContain('is queued, 1st in line');
    expect(await voice.status(member, second.task)).toEqual({
      status: 'found',
      message: `Task ${second.task} ("a fox surfing at sunset") was cancelled by the member who asked for it before it was sent, so nothing was made or charged.`,
      task: second.task,
    });
  }, 30_000);
});
