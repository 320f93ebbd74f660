import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGLISH, t } from '../../src/i18n/index.ts';
import { silentLogger } from '../../src/lib/log.ts';
import type { ReadyPing, VideoDefaults } from '../../src/ports/video-defaults.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { ReadyPings } from '../../src/video/ready-ping.ts';
import type { TaskRecord } from '../../src/video/record.ts';
import { taskRecord } from '../support/task-result.ts';

// The one message that tells a member their job ended: sent by the last of its tasks to end, once for
// every worker on the store, and not at all where the server turned it off. Real SQLite; Discord faked.

const MEMBER = '100000000000000003';
const CARD = '100000000000000009';

interface Sent {
  channelId: string;
  userId: string;
  content: string;
  replyTo: string | undefined;
}

function worker(store: Store, ping: ReadyPing = 'on'): { pings: ReadyPings; sent: Sent[] } {
  const sent: Sent[] = [];
  const defaults: VideoDefaults = {
    model: undefined,
    resolution: undefined,
    duration: undefined,
    aspectRatio: undefined,
    storage: { keepDays: 0, publicLink: false },
    ping,
  };
  const pings = new ReadyPings({
    store,
    outbox: {
      pingMember: (channelId, userId, content, replyTo) => {
        sent.push({ channelId, userId, content, replyTo });
        return Promise.resolve(String(sent.length));
      },
      openDm: () => Promise.resolve('dm-channel'),
    },
    defaults: () => Promise.resolve(defaults),
    log: silentLogger,
  });
  return { pings, sent };
}

/** A job of `states.length` variants, its card posted, each task as `states` says. */
function job(id: string, states: ('posted' | 'failed' | 'running')[]): TaskRecord[] {
  const taskIds = states.map((_, index) => `${id}${index}`);
  return states.map((state, index) =>
    taskRecord({
      id: taskIds[index]!,
      job: { id: taskIds[0]!, number: index + 1, size: states.length, taskIds },
      state: state === 'posted' ? 'succeeded' : state,
      card: { applicationId: 'app', interactionToken: 'token', tokenExpiresAt: 0, messageId: CARD },
      delivery:
        state === 'posted'
          ? { state: 'posted', attempts: 1, postingSince: 1, messageId: CARD, video: { as: 'file', fileName: 'video.mp4' } }
          : state === 'failed'
            ? { state: 'closed', attempts: 0 }
            : { state: 'waiting', attempts: 0 },
    }),
  );
}

describe('the ping when a job ends', () => {
  let directory: string;
  const stores: Store[] = [];
  /** A worker of its own on the one SQLite file, as a process of the bot would be. */
  async function onTheStore(ping: ReadyPing = 'on'): Promise<{ pings: ReadyPings; sent: Sent[] }> {
    const store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
    stores.push(store);
    return worker(store, ping);
  }

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'ready-ping-'));
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    rmSync(directory, { recursive: true, force: true });
  });

  it('is sent once for a job whose two variants end at once on two workers, replying to its card', async () => {
    const tasks = job('vtwo', ['posted', 'posted']);
    const [first, second] = [await onTheStore(), await onTheStore()];
    await Promise.all([first.pings.announce(tasks[0]!, tasks), second.pings.announce(tasks[1]!, tasks)]);
    const sent = [...first.sent, ...second.sent];
    expect(sent).toEqual([
      {
        channelId: tasks[0]!.channelId,
        userId: MEMBER,
        content: t(ENGLISH, 'video.ping.ready', { member: `<@${MEMBER}>`, count: 2 }),
        replyTo: CARD,
      },
    ]);
  });

  it('waits for the last variant: nothing while one is still being made', async () => {
    const { pings, sent } = await onTheStore();
    const tasks = job('vwait', ['posted', 'running']);
    await pings.announce(tasks[0]!, tasks);
    expect(sent).toEqual([]);
    const ended = job('vwait', ['posted', 'failed']);
    await pings.announce(ended[1]!, ended);
    expect(sent.map((message) => message.content)).toEqual([t(ENGLISH, 'video.ping.ready', { member: `<@${MEMBER}>`, count: 1 })]);
  });

  it('says a job that made nothing could not be made', async () => {
    const { pings, sent } = await onTheStore();
    const tasks = job('vnone', ['failed']);
    await pings.announce(tasks[0]!, tasks);
    expect(sent.map((message) => message.content)).toEqual([t(ENGLISH, 'video.ping.not-made', { member: `<@${MEMBER}>` })]);
  });

  it('is not sent where the server turned it off', async () => {
    const { pings, sent } = await onTheStore('off');
    const tasks = job('voff', ['posted']);
    await pings.announce(tasks[0]!, tasks);
    expect(sent).toEqual([]);
  });
});
