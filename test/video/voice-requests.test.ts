import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import type { GuildVideoPolicy } from '../../src/ports/guild-policy.ts';
import type { VoiceCaller } from '../../src/ports/voice-video.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { EndUserIds } from '../../src/video/end-users.ts';
import { VideoPreparation } from '../../src/video/prepare.ts';
import { TaskRepository } from '../../src/video/repository.ts';
import { VoiceVideo } from '../../src/video/voice-requests.ts';
import { refuse } from '../../src/wording/notice.ts';

// A video asked for by voice is refused as /video refuses it, in words the voice model says where the
// whole channel hears them: the server's language.

const caller: VoiceCaller = { guildId: 'g1', channelId: 'c1', userId: 'u1', roleIds: [], isServerManager: false };
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

describe('a video asked for by voice on a server without a key', () => {
  let directory: string;
  let store: Store;
  let tasks: TaskRepository;
  let prepare: VideoPreparation;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'voice-requests-'));
    store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
    tasks = new TaskRepository(store, silentLogger);
    prepare = new VideoPreparation({ policy: keyless, repository: tasks, endUsers: new EndUserIds(store), vendor: 'svc' });
  });
  afterAll(async () => {
    await store.close();
    rmSync(directory, { recursive: true, force: true });
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
