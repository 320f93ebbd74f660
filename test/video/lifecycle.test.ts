import { notice, word } from '../../src/wording/notice.ts';
import { worded } from '../support/worded.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { text } from 'node:stream/consumers';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentType, REST, Routes } from 'discord.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { isRecord, readRecord, readString } from '../../src/lib/json.ts';
import { createLogger, silentLogger, type LogFields, type Logger, type LogLevel } from '../../src/lib/log.ts';
import { openStore, StoreUnavailableError, type Collection, type Store } from '../../src/store/index.ts';
import { NO_METRICS, type VideoTaskLostReason } from '../../src/lib/metrics.ts';
import type { GatewayAccess } from '../../src/ports/gateway-access.ts';
import { LimitReachedError, type MemberTask, type SpendReservation } from '../../src/ports/guild-policy.ts';
import type { InteractionContext } from '../../src/ports/interaction-context.ts';
import type { LoggedJob } from '../../src/ports/moderation-log.ts';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { createVideo, type Video, type VideoDeps } from '../../src/video/index.ts';
import type { Prepared, SubmissionPlan } from '../../src/video/plan.ts';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../../src/video/poll-policy.ts';
import { parseTaskRecord, type TaskRecord } from '../../src/video/record.ts';
import { newTaskId, type TaskRepository } from '../../src/video/repository.ts';
import { knownCard, renderLostCard, renderStatusCard, resultButtons, voiceRequestCard } from '../../src/video/status-card.ts';
import { SubmissionRefusedError } from '../../src/video/submit.ts';
import type { TaskTracker } from '../../src/video/tracker.ts';
import { type DiscordStandIn, type Message, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { waitUntil } from '../../src/lib/wait-until.ts';
import { SAMPLE_MP4 } from '../support/media.ts';
import { shownInCard, taskRecord } from '../support/task-result.ts';
import { cardButtons, cardEditProblems, cardSaying, cardText, galleryItems } from '../support/cards.ts';
import { CARD_STATES_FINISHED_AT, CARD_STATES_TASK, cardStates } from '../support/card-states.ts';
import { openVideoPolicy } from '../support/open-policy.ts';
import { generationInput, memberContext } from '../support/video-request.ts';

// A video task's life when things go wrong (answers that cannot be read, downloads that keep failing,
// Discord refusing posts), with the bot's real task services in this process (so backoffs can be fast),
// the real discord.js REST client against the Discord stand-in, and a small gateway that answers what
// each test needs.

const KEY = 'fake-gateway-key-1';
/** Production's rules, with every wait cut to milliseconds. */
const FAST_POLICY: PollPolicy = {
  ...DEFAULT_POLL_POLICY,
  intervalMs: 20,
  maxIntervalMs: 20,
  errorBackoffMs: { base: 20, max: 80 },
  deliveryTries: 4,
  deadlineMs: 500,
};

/** A compatibility-layer gateway: every task is done, and its submissions and downloads answer what the test says. */
class DoneGateway {
  readonly server = createServer((request, response) => this.#handle(request, response));
  contentRequests = 0;
  /** The bodies of every submission, parsed. */
  readonly submissions: unknown[] = [];
  onSubmit = DoneGateway.accept;
  onPoll = DoneGateway.done;
  onContent = DoneGateway.serveVideo;
  baseUrl = '';

  static accept(this: void, response: ServerResponse): void {
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(`{"task_id":"task_${randomBytes(4).toString('hex')}","status":"queued"}`);
  }

  static done(this: void, response: ServerResponse, taskId: string, baseUrl: string): void {
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ task_id: taskId, status: 'succeeded', progress: 100, url: `${baseUrl}/files/${taskId}.mp4` }));
  }

  static serveVideo(this: void, response: ServerResponse): void {
    response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': SAMPLE_MP4.length }).end(SAMPLE_MP4);
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    response.setHeader('x-request-id', 'req_fake');
    if (request.method === 'POST') {
      void text(request).then((body) => {
        this.submissions.push(JSON.parse(body));
        this.onSubmit(response);
      });
      return;
    }
    request.resume();
    const content = /^\/v1\/videos\/([^/]+)\/content$/.exec(request.url ?? '');
    if (content) {
      this.contentRequests++;
      this.onContent(response);
      return;
    }
    this.onPoll(response, /^\/v1\/videos\/([^/]+)$/.exec(request.url ?? '')?.[1] ?? '', this.baseUrl);
  }

  async start(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    const address = this.server.address();
    this.baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }
}

/** The compatibility layer's answer to a refused key. */
const INVALID_KEY = '{"error":{"message":"Invalid API key.","type":"gateway_api_error","param":null,"code":"invalid_api_key"}}';

/**
 * The video part on this file's gateway and fast policy, on `on` (the shared store unless a test needs a
 * fresh one); `overrides` change what a test needs (its poll policy, its metrics).
 */
function videoPart(log: Logger = silentLogger, on: Store = store, overrides: Partial<VideoDeps> = {}): Video {
  return createVideo({
    store: on,
    clients,
    policy,
    outbox,
    vendor: 'svc',
    log,
    pollPolicy: FAST_POLICY,
    maxPollsInFlight: 4,
    cardEditIntervalMs: 0,
    ...overrides,
  });
}

let discord: DiscordStandIn;
let guild: TestGuild;
let gateway: DoneGateway;
let store: Store;
let directory: string;
let rest: REST;
let repository: TaskRepository;
let tracker: TaskTracker;
let clients: GatewayClientPool;
let outbox: DiscordOutbox;
let video: Video;
const logEvents = new EventEmitter();

/** A logger whose lines land in `lines`, to see what operators are told. */
function recordingLogger(lines: LogFields[], level: LogLevel): Logger {
  return createLogger({
    level,
    write: (line) => {
      const fields: unknown = JSON.parse(line);
      if (typeof fields === 'object' && fields !== null) lines.push({ ...fields });
      logEvents.emit('line');
    },
  });
}

/** What the delivery logged. */
const logged: LogFields[] = [];
const deliveryLog = recordingLogger(logged, 'warn');

function waitForLog(message: string, lines = logged): Promise<LogFields> {
  return waitUntil({
    check: () => lines.find((fields) => fields.msg === message),
    subscribe: (wake) => {
      logEvents.on('line', wake);
      return () => logEvents.off('line', wake);
    },
    timeoutMs: 10_000,
    timeoutError: () => new Error(`no log line "${message}"`),
  });
}
/** What the server's settings say about its key; a test can take it away. */
let access: GatewayAccess = { ok: true, apiKey: KEY, layer: 'compat', keyId: 'fake-key' };
/** The server keeps its videos in the gateway's storage for a week. */
const storage = { keepDays: 7, publicLink: false };

/** Counting a submission against the daily limits; a test can have it refused, as the settings do when a limit is reached. */
const admitAll = (_task: MemberTask, estimateUsdTicks: number): Promise<SpendReservation> =>
  Promise.resolve({ estimateUsdTicks, month: false });
let countSubmission = admitAll;

const policy = openVideoPolicy({
  defaults: { storage },
  resolveGatewayAccess: () => Promise.resolve(access),
  recordSubmission: (task, estimateUsdTicks) => countSubmission(task, estimateUsdTicks),
});

beforeAll(async () => {
  gateway = new DoneGateway();
  await gateway.start();
  // Discord forgets nonces after a few minutes; this one at once, as if every restart came long after.
  discord = await startDiscordStandIn({ nonceWindowMs: 1 });
  guild = discord.createGuild();
  directory = mkdtempSync(join(tmpdir(), 'video-delivery-'));
  store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  rest = new REST({ api: discord.apiUrl }).setToken(discord.botToken);
  outbox = new DiscordOutbox(rest);
  clients = new GatewayClientPool({ baseUrl: gateway.baseUrl, log: silentLogger });
  video = videoPart(deliveryLog);
  repository = video.tasks;
  tracker = video.tracker;
}, 30_000);

afterEach(() => {
  countSubmission = admitAll;
  gateway.onSubmit = DoneGateway.accept;
  gateway.onPoll = DoneGateway.done;
  gateway.onContent = DoneGateway.serveVideo;
  discord.restoreBotPermissions(guild.textChannelId);
});

afterAll(async () => {
  await tracker?.stop();
  await clients?.close();
  await store?.close();
  rest?.clearHashSweeper();
  rest?.clearHandlerSweeper();
  await discord?.close();
  gateway?.server.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/**
 * A task as submit() leaves it, whose card is a channel message of the bot (its interaction token long
 * gone), handed to the poller. `onceCardPosted` sets up what Discord refuses from then on.
 */
async function track(
  overrides: Partial<TaskRecord> = {},
  onceCardPosted: (cardId: string) => unknown = () => {},
  by: Video = video,
): Promise<{ task: TaskRecord; card: () => Message }> {
  const id = overrides.id ?? newTaskId();
  const { messageId: cardId } = await outbox.postCard(guild.textChannelId, voiceRequestCard(guild.member.id));
  await onceCardPosted(cardId);
  const now = Date.now();
  const task = taskRecord({
    id,
    gatewayId: `task_${id}`,
    layer: 'compat',
    guildId: guild.id,
    channelId: guild.textChannelId,
    userId: guild.member.id,
    createdAt: now,
    submittedAt: now,
    card: { applicationId: discord.applicationId, interactionToken: 'expired', tokenExpiresAt: 0, messageId: cardId },
    ...overrides,
  });
  await by.tasks.create(task);
  by.tracker.track(task);
  return { task, card: () => discord.state.messages.get(cardId)! };
}

async function closedCard(card: () => Message): Promise<string> {
  return cardSaying(discord, card, 'could not be shown');
}

/** Waits for the card to show its video (the file, or a link), and returns it as it stands then. */
async function cardWithVideo(card: () => Message): Promise<Message> {
  return discord.waitFor(() => (cardText(card()).includes('**Done**') ? card() : undefined), 10_000, 'a card showing its video');
}

describe('a finished video the bot cannot fetch', () => {
  it('is tried a bounded number of times, then the card says why and links the video', async () => {
    gateway.onContent = (response) => response.writeHead(401, { 'content-type': 'application/json' }).end(INVALID_KEY);
    const before = gateway.contentRequests;
    const { task, card } = await track();
    // Between the tries the card says what went wrong and that the bot tries again.
    await cardSaying(discord, card, 'tries again shortly');
    const text = await closedCard(card);
    expect(text).toContain("refused the server's key");
    expect(text).toContain(`tried ${FAST_POLICY.deliveryTries} times`);
    expect(text).toContain(`${gateway.baseUrl}/files/${task.gatewayId}.mp4`);
    expect(gateway.contentRequests - before).toBe(FAST_POLICY.deliveryTries);
    // The card is edited before the record is saved (a kill between the two repeats the last step).
    await vi.waitFor(async () =>
      expect((await repository.get(task.id))?.delivery).toMatchObject({ state: 'closed', failures: FAST_POLICY.deliveryTries }),
    );
    expect(galleryItems(card())).toEqual([]);
  });

  it("is closed the same way when the server's key was removed after it finished", async () => {
    access = { ok: false, notice: notice('config.key.no-key') };
    try {
      const videoUrl = `${gateway.baseUrl}/files/done.mp4`;
      const { card } = await track({ state: 'succeeded', finishedAt: Date.now(), outcome: { videoUrl } });
      const text = await closedCard(card);
      expect(text).toContain('no gateway key');
      expect(text).toContain(videoUrl);
    } finally {
      access = { ok: true, apiKey: KEY, layer: 'compat', keyId: 'fake-key' };
    }
  });
});

describe('a task the bot loses track of', () => {
  it('is closed past the deadline without claiming a refund, naming the gateway task to check', async () => {
    gateway.onPoll = (response) => response.writeHead(401, { 'content-type': 'application/json' }).end(INVALID_KEY);
    const { task, card } = await track();
    const text = await cardSaying(discord, card, 'Timed out');
    expect(text).toContain('lost track of this video');
    expect(text).toContain(`\`${task.gatewayId}\``);
    expect(text).not.toContain('refunded');
  });

  it('says on its card, while its polls fail, that the gateway is not answering and until when the bot keeps trying', async () => {
    let failing = true;
    gateway.onPoll = (response, taskId, baseUrl) => {
      if (!failing) return DoneGateway.done(response, taskId, baseUrl);
      response
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"error":{"message":"busy","type":"gateway_api_error","param":null,"code":"overloaded"}}');
    };
    // Sent a minute from now: its deadline, which runs from when it was sent, is far off.
    const sentAt = Date.now() + 60_000;
    const { task, card } = await track({ createdAt: sentAt, submittedAt: sentAt });
    const text = await cardSaying(discord, card, 'not answering');
    expect(text).toMatch(/keeps trying until <t:\d+:t>/);
    failing = false;
    const shown = await cardWithVideo(card);
    expect(cardText(shown)).not.toContain('not answering');
    expect(shown.attachments.map((file) => file.filename)).toEqual([`video-${task.id}.mp4`]);
    expect(galleryItems(shown)).toEqual([shown.attachments[0]?.url]);
  });

  // Before, the card's time was production's deadline whatever the tracker's, and a task whose polls
  // failed was looked at again only after its backoff: closed up to a backoff (60 s) past that time.
  it('is closed at the time its card says the bot keeps trying until, not a backoff later', async () => {
    // Room for the first poll to fail (with the client's own retries) on a busy machine before the deadline;
    // the first failed poll then backs off at least 5 s, well past it.
    const deadlineMs = 4_000;
    const slowBackoff: PollPolicy = { ...FAST_POLICY, errorBackoffMs: { base: 5_000, max: 60_000 }, deadlineMs };
    const fresh = await openStore(`sqlite://${join(directory, `deadline-${randomBytes(4).toString('hex')}.sqlite`)}`, silentLogger);
    const part = videoPart(silentLogger, fresh, { pollPolicy: slowBackoff });
    gateway.onPoll = (response) =>
      response
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"error":{"message":"busy","type":"gateway_api_error","param":null,"code":"overloaded"}}');
    try {
      const { task, card } = await track({}, () => {}, part);
      const trying = await cardSaying(discord, card, 'not answering');
      const statedSeconds = Number(/keeps trying until <t:(\d+):t>/.exec(trying)?.[1]);
      expect(statedSeconds).toBe(Math.floor((task.submittedAt! + deadlineMs) / 1000));
      await cardSaying(discord, card, 'Timed out');
      const closed = await vi.waitFor(async () => {
        const saved = await part.tasks.get(task.id);
        expect(saved?.state).toBe('timed_out');
        return saved!;
      });
      // Closed just past the stated time (a poll's round trip later), not the 5 s backoff later.
      const lateBy = (closed.finishedAt ?? 0) - (task.createdAt + deadlineMs);
      expect(lateBy).toBeGreaterThan(0);
      expect(lateBy).toBeLessThan(1_000);
    } finally {
      await part.tracker.stop();
      await fresh.close();
    }
  });

  it('is closed at the first 404 (the gateway lost it), the card saying so, instead of being polled until the deadline', async () => {
    let polls = 0;
    gateway.onPoll = (response) => {
      polls++;
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"No deferred video"}}');
    };
    const { card } = await track({ createdAt: Date.now() + 60_000 });
    const text = await cardSaying(discord, card, 'Failed');
    expect(text).toContain('no longer knows this task');
    expect(text).not.toContain('refunded');
    expect(polls).toBe(1);
  });
});

/** A compatibility-layer answer: the task is running, 10% done. */
function runningAnswer(response: ServerResponse, taskId: string): void {
  response
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ task_id: taskId, status: 'processing', progress: 10 }));
}

function overloadedAnswer(response: ServerResponse): void {
  response
    .writeHead(503, { 'content-type': 'application/json' })
    .end('{"error":{"message":"busy","type":"gateway_api_error","param":null,"code":"overloaded"}}');
}

describe('a followed task whose stored record the store loses or spoils', () => {
  let fresh: Store | undefined;
  let raw: Store | undefined;
  let part: Video | undefined;
  afterEach(async () => {
    await part?.tracker.stop();
    await fresh?.close();
    await raw?.close();
    part = fresh = raw = undefined;
  });

  /**
   * The video part on a store of its own, counting lost tasks into `lost`, with a second handle on the same
   * file through which the test changes task records as something else than the bot would (a store that
   * restarted empty, a damaged record).
   */
  async function partWithRawTasks(log: Logger, lost: VideoTaskLostReason[]): Promise<{ part: Video; tasks: Collection<unknown> }> {
    const file = join(directory, `spoiled-${randomBytes(4).toString('hex')}.sqlite`);
    fresh = await openStore(`sqlite://${file}`, silentLogger);
    raw = await openStore(`sqlite://${file}`, silentLogger);
    part = videoPart(log, fresh, {
      pollPolicy: { ...FAST_POLICY, deadlineMs: 60_000 },
      metrics: { ...NO_METRICS, videoTaskLost: (reason) => lost.push(reason) },
    });
    return { part, tasks: raw.collection('tasks', (value) => value) };
  }

  /**
   * Follows a task whose gateway answers "running" once, then holds the next poll: the task's record is
   * changed while that poll is out, as a store restarting meanwhile would change it, and the poll then fails.
   */
  async function followUntilSecondPoll(by: Video): Promise<{ task: TaskRecord; card: () => Message; failPoll: () => void }> {
    let polls = 0;
    let second!: (response: ServerResponse) => void;
    const held = new Promise<ServerResponse>((resolve) => {
      second = resolve;
    });
    gateway.onPoll = (response, taskId) => {
      polls++;
      if (polls === 1) runningAnswer(response, taskId);
      else if (polls === 2) second(response);
      else overloadedAnswer(response);
    };
    const { task, card } = await track({}, () => {}, by);
    const response = await held;
    return { task, card, failPoll: () => overloadedAnswer(response) };
  }

  // Before, the record's absence was met in silence: the failed poll wrote the task back as it last read it
  // (without its indexes) and the card said the gateway was not answering, with nothing logged or counted.
  it('is logged and counted as lost, and its card says so with its request id, when its record disappears', async () => {
    const lines: LogFields[] = [];
    const lost: VideoTaskLostReason[] = [];
    const { part: followed, tasks } = await partWithRawTasks(recordingLogger(lines, 'warn'), lost);
    const { task, card, failPoll } = await followUntilSecondPoll(followed);
    await tasks.delete(task.id);
    failPoll();
    const text = await cardSaying(discord, card, 'The bot lost this task');
    expect(text).toContain('request id `req_fake`');
    expect(text).toContain(`\`${task.gatewayId}\``);
    expect(text).not.toContain('Generating');
    const logged = await waitForLog(
      'a followed video task is gone from the store (restarted without persistence, or evicted?); it is lost',
      lines,
    );
    expect(logged).toMatchObject({ level: 'error', task: task.id, requestId: 'req_fake' });
    expect(lost).toEqual(['gone']);
    await vi.waitFor(() => expect(followed.tracker.size).toBe(0));
    // Nothing wrote the lost task back, and a restart does not resume it.
    expect(await followed.tasks.get(task.id)).toBeUndefined();
    expect(await followed.tracker.resume()).toBe(0);
  });

  it('is logged once with its key and closed on its card when its record cannot be read, the rest of the member working', async () => {
    const lines: LogFields[] = [];
    const lost: VideoTaskLostReason[] = [];
    const { part: followed, tasks } = await partWithRawTasks(recordingLogger(lines, 'warn'), lost);
    const { task, card, failPoll } = await followUntilSecondPoll(followed);
    const stored = await tasks.get(task.id);
    if (!isRecord(stored)) throw new Error('the task was not stored');
    // What a broken record looks like in the store: a state that is no state.
    await tasks.set(task.id, { ...stored, state: 'toString' });
    failPoll();
    const text = await cardSaying(discord, card, 'can no longer read');
    expect(text).toContain('request id `req_fake`');
    await vi.waitFor(() => expect(followed.tracker.size).toBe(0));
    // The member's list leaves it out, without a second log line.
    expect(await followed.tasks.recentForUser(guild.id, guild.member.id)).toEqual([]);
    const unreadable = lines.filter((line) => String(line.msg).includes('unreadable'));
    expect(unreadable).toHaveLength(1);
    expect(unreadable[0]).toMatchObject({ level: 'error', task: task.id });
    expect(lost).toEqual(['unreadable']);
  });
});

describe('Discord refusing the video', () => {
  const cardEdits = () =>
    discord.requests.filter((request) => request.method === 'PATCH' && /^\/channels\/\d+\/messages\/\d+$/.test(request.path));

  it('shows a link instead of the file, naming Attach Files, where the bot may not upload', async () => {
    const { task, card } = await track({}, () =>
      discord.failRoute({
        method: 'PATCH',
        route: /^\/channels\/\d+\/messages\/\d+$/,
        times: 1,
        status: 403,
        code: 50013,
        message: 'Missing Permissions',
      }),
    );
    const shown = await cardWithVideo(card);
    expect(shown.attachments).toHaveLength(0);
    expect(cardText(shown)).toContain('Attach Files');
    expect(cardText(shown)).toContain(`${gateway.baseUrl}/files/${task.gatewayId}.mp4`);
    // The emulator's link is not a public https address Discord could play: a link button, beside the video's buttons.
    expect(cardButtons(shown).map((button) => button.label)).toEqual([
      'Extend',
      'Edit',
      'Regenerate',
      'Change and regenerate',
      'Open the video',
      'Delete',
    ]);
    expect(cardEditProblems(shown)).toEqual([]);
  });

  it('posts the card again, with its video, when the card was deleted; once, however often the delivery is tried', async () => {
    let cardId = '';
    // Deleted before the video is ready.
    const { task } = await track({}, async (posted) => {
      cardId = posted;
      await rest.delete(Routes.channelMessage(guild.textChannelId, posted));
    });
    const reposted = await discord.waitForMessage(guild.textChannelId, (message) =>
      cardButtons(message).some((button) => button.customId === `video:extend:${task.id}`),
    );
    expect(reposted.id).not.toBe(cardId);
    expect(reposted.attachments.map((file) => file.bytes)).toEqual([SAMPLE_MP4]);
    expect(galleryItems(reposted)).toEqual([reposted.attachments[0]?.url]);
    await vi.waitFor(async () =>
      expect(await repository.get(task.id)).toMatchObject({
        delivery: { state: 'posted', messageId: reposted.id },
        card: { messageId: reposted.id, tokenExpiresAt: 0 },
      }),
    );
  });

  it('closes the task at the first refusal when its channel was deleted, keeping the link for /video status', async () => {
    const before = gateway.contentRequests;
    const { task } = await track({ channelId: '1999999999999999999' });
    const closed = await vi.waitFor(async () => {
      const saved = await repository.get(task.id);
      expect(saved?.delivery.state).toBe('closed');
      return saved!;
    });
    expect(closed.delivery.lastError).toContain('has been deleted');
    expect(closed.delivery.lastError).toContain(`${gateway.baseUrl}/files/${task.gatewayId}.mp4`);
    expect(closed.delivery.failures ?? 0).toBe(0);
    expect(gateway.contentRequests - before).toBe(1);
  });

  it('logs an error naming the task when not even the card can be edited (past the interaction token)', async () => {
    const editsBefore = cardEdits().length;
    const { task } = await track({}, () => discord.denyBotPermission(guild.textChannelId, 'viewChannel'));
    const line = await waitForLog('cannot tell the user about a video task: the bot may not edit its status card in the channel');
    expect(line).toMatchObject({ level: 'error', task: task.id, channel: guild.textChannelId, delivery: 'closed' });
    expect(String(line.problem)).toContain('View Channel');
    expect(cardEdits().length).toBeGreaterThan(editsBefore);
  });
});

describe('a crash between showing a video in its card and recording it', () => {
  it('edits the card again after the restart, and the card shows the video once', async () => {
    const id = newTaskId();
    const fileName = `video-${id}.mp4`;
    const { messageId: cardId } = await outbox.postCard(guild.textChannelId, voiceRequestCard(guild.member.id));
    // What the process that crashed managed to do: the card has the video, "posted" was never written.
    const address = {
      applicationId: discord.applicationId,
      interactionToken: 'expired',
      tokenExpiresAt: 0,
      channelId: guild.textChannelId,
      messageId: cardId,
    };
    const crashed = taskRecord({
      id,
      gatewayId: `task_${id}`,
      layer: 'compat',
      guildId: guild.id,
      channelId: guild.textChannelId,
      userId: guild.member.id,
    });
    const shownBefore = {
      ...crashed,
      state: 'succeeded' as const,
      delivery: shownInCard({ as: 'file', fileName }),
    };
    await outbox.editCard(address, {
      ...renderStatusCard(shownBefore),
      file: { name: fileName, data: SAMPLE_MP4, contentType: 'video/mp4' },
    });
    const now = Date.now();
    const task: TaskRecord = {
      ...crashed,
      createdAt: now,
      submittedAt: now,
      state: 'succeeded',
      finishedAt: now,
      card: address,
      delivery: { state: 'posting', attempts: 1, postingSince: now },
    };
    await repository.create(task);
    tracker.track(task);
    await vi.waitFor(async () =>
      expect((await repository.get(id))?.delivery).toMatchObject({ state: 'posted', messageId: cardId, attempts: 2 }),
    );
    const card = discord.state.messages.get(cardId)!;
    expect(card.edits).toHaveLength(2);
    expect(card.attachments.map((file) => file.filename)).toEqual([fileName]);
    expect(galleryItems(card)).toEqual([card.attachments[0]?.url]);
    expect(cardEditProblems(card)).toEqual([]);
    expect(
      discord
        .messages(guild.textChannelId)
        .filter((message) => cardButtons(message).some((button) => button.customId === `video:extend:${id}`)),
    ).toHaveLength(1);
  });
});

describe('every card the bot can draw', () => {
  it.each(cardStates())('is taken by Discord as it is drawn: %s', (_state, task, expected) => {
    const card = renderStatusCard(task, { now: CARD_STATES_FINISHED_AT });
    expect(discord.messageErrors({ ...card }, { filenames: expected.files ?? [] })).toBeUndefined();
    const privately = renderStatusCard(
      { ...task, delivery: task.delivery.state === 'posted' ? { ...task.delivery, messageId: '1' } : task.delivery },
      { now: CARD_STATES_FINISHED_AT },
      { audience: 'private' },
    );
    expect(discord.messageErrors({ ...privately, flags: privately.flags | 64 })).toBeUndefined();
  });

  it('is taken when it closes the card of a lost task', () => {
    const known = knownCard(CARD_STATES_TASK, CARD_STATES_FINISHED_AT);
    for (const reason of ['gone', 'unreadable'] as const)
      expect(discord.messageErrors({ ...renderLostCard(known, reason) })).toBeUndefined();
  });
});

/** A member's /video interaction, as the command hands it to the service. */
function interactionContext(): InteractionContext {
  return memberContext(
    { guildId: guild.id, channelId: guild.textChannelId, userId: guild.member.id },
    { applicationId: discord.applicationId, interactionToken: 'no-interaction' },
  );
}

function planned(prepared: Prepared): SubmissionPlan {
  if (!prepared.ok) throw new Error(word(ENGLISH, prepared.notice));
  return prepared.plan;
}

async function generate(prompt: string, image?: string): Promise<TaskRecord> {
  const context = interactionContext();
  const attachment = image === undefined ? undefined : { url: image, filename: 'first.png', contentType: 'image/png', size: 100 };
  return video.submit(planned(await video.prepare.generation(context, generationInput(prompt, { image: attachment }))), context);
}

/** A Discord attachment link, signed until `expiresAt` (ms), as Discord's CDN writes them. */
function attachmentLink(expiresAt: number): string {
  return `https://cdn.discordapp.com/attachments/1/2/first.png?ex=${Math.floor(expiresAt / 1000).toString(16)}&is=${Math.floor(Date.now() / 1000).toString(16)}&hm=abc123`;
}

describe('a submission whose answer cannot be read', () => {
  it('stays "outcome unknown" with the gateway\'s request id, instead of failing', async () => {
    gateway.onSubmit = (response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>surprise</html>');
    const task = await generate('unreadable answer');
    expect(task.state).toBe('unknown');
    const card = cardText(renderStatusCard(task));
    expect(card).toContain('Outcome unknown');
    expect(card).toContain('request id `req_fake`');
  });
});

describe('a daily limit reached on another worker since the check', () => {
  it("refuses the submission in the limit's words, with nothing stored or sent", async () => {
    const reached = notice('limits.server-daily', { count: 5, retry: 'tomorrow' });
    const words = 'This server reached its 5 videos for today; try again tomorrow.';
    const counted: MemberTask[] = [];
    countSubmission = (task) => {
      counted.push(task);
      return Promise.reject(new LimitReachedError(reached));
    };
    const submissionsBefore = gateway.submissions.length;
    const error = await generate('one video too many').then(
      () => undefined,
      (refusal: unknown) => refusal,
    );
    expect(error).toBeInstanceOf(SubmissionRefusedError);
    expect(error).toMatchObject({ message: words, task: undefined });
    expect(counted).toHaveLength(1);
    expect(gateway.submissions).toHaveLength(submissionsBefore);
    const recent = await repository.recentForUser(guild.id, guild.member.id);
    expect(recent.map((task) => task.prompt)).not.toContain('one video too many');
  });
});

describe('a submission whose count the store refuses to write', () => {
  it('is refused in words that say nothing was sent or counted, with nothing stored or sent', async () => {
    // The store refuses a record holding Infinity, as the usage ledger's would be past any sane amount.
    const ledger = store.collection(`usage_${randomBytes(4).toString('hex')}`, (raw) => raw);
    countSubmission = async (_task, estimateUsdTicks) => {
      await ledger.update('day', () => ({ reservedUsdTicks: Infinity }));
      return { estimateUsdTicks, month: false };
    };
    const submissionsBefore = gateway.submissions.length;
    const error = await generate('a count past any amount').then(
      () => undefined,
      (refusal: unknown) => refusal,
    );
    expect(error).toBeInstanceOf(SubmissionRefusedError);
    expect(error).toMatchObject({
      message:
        "The bot could not record this video (one of its amounts cannot be stored), so nothing was sent or counted. The bot's operator can see why in its log.",
      task: undefined,
    });
    expect(gateway.submissions).toHaveLength(submissionsBefore);
    expect(await ledger.get('day')).toBeUndefined();
    const recent = await repository.recentForUser(guild.id, guild.member.id);
    expect(recent.map((task) => task.prompt)).not.toContain('a count past any amount');
  });
});

describe('Regenerate', () => {
  it("stores the new video under the new task's own name", async () => {
    const original = await generate('a lake at noon');
    const again = await video.submit(planned(await video.prepare.regeneration(interactionContext(), original.id)), interactionContext());
    expect(again.id).not.toBe(original.id);
    const filenames = gateway.submissions.slice(-2).map((body) => readString(readRecord(body, 'storage_options'), 'filename'));
    expect(filenames).toEqual([`discord-${guild.id}-${original.id}.mp4`, `discord-${guild.id}-${again.id}.mp4`]);
  });

  it("asks for fresh attachments when Discord's links to the original ones have expired", async () => {
    const original = await generate('it starts to rain', attachmentLink(Date.now() + 3_600_000));
    await repository.save({ ...original, request: { ...original.request, image: { url: attachmentLink(Date.now() - 60_000) } } });
    const prepared = await video.prepare.regeneration(interactionContext(), original.id);
    expect(worded(prepared)).toMatchObject({
      ok: false,
      message: expect.stringContaining('Run `/video generate` again with fresh attachments'),
    });
  });

  it('asks for fresh attachments when the gateway refuses an attachment link', async () => {
    const original = await generate('it starts to snow', attachmentLink(Date.now() + 3_600_000));
    gateway.onSubmit = (response) =>
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(
          '{"error":{"message":"The image could not be fetched.","type":"gateway_api_error","param":"image.url","code":"invalid_request_error"}}',
        );
    const submitted = video.submit(planned(await video.prepare.regeneration(interactionContext(), original.id)), interactionContext());
    await expect(submitted).rejects.toThrow(SubmissionRefusedError);
    await expect(submitted).rejects.toThrow(/fresh attachments/);
  });
});

describe('a crash between posting a video and recording it, in an earlier version that posted it as a message of its own', () => {
  it('shows the video in its card after the upgrade, and the earlier post stays: twice at worst, never lost', async () => {
    const id = newTaskId();
    // What the process that crashed managed to do: the post went out, "posted" was never written.
    // It posted through discord.js's REST client as the bot still does, in the layout of its day.
    const posted: unknown = await rest.post(Routes.channelMessages(guild.textChannelId), {
      body: {
        content: `<@${guild.member.id}> your video is ready.`,
        components: [{ type: ComponentType.ActionRow, components: resultButtons(id) }],
        allowed_mentions: { users: [] },
        nonce: id,
        enforce_nonce: true,
        attachments: [{ id: 0, filename: `video-${id}.mp4` }],
      },
      files: [{ name: `video-${id}.mp4`, data: SAMPLE_MP4, contentType: 'video/mp4' }],
    });
    const earlierId = readString(posted, 'id');
    // Its delivery as that version stored it, read by this one.
    const { delivery } = parseTaskRecord({
      ...JSON.parse(JSON.stringify(taskRecord({ id }))),
      v: undefined,
      delivery: { state: 'posting', nonce: id, attempts: 1, postingSince: Date.now() - 10 * 60_000 },
    });
    const { card } = await track({ id, state: 'succeeded', finishedAt: Date.now(), delivery });
    expect(galleryItems(await cardWithVideo(card))).toHaveLength(1);
    const posts = discord
      .messages(guild.textChannelId)
      .filter((message) => JSON.stringify(message.components).includes(`video:extend:${id}`));
    expect(posts.map((message) => message.id)).toContain(earlierId);
    expect(posts).toHaveLength(2);
  });
});

describe("the salt that keeps members' ids from the gateway", () => {
  it("is made once when two members' first videos are prepared at the same moment", async () => {
    const fresh = await openStore(`sqlite://${join(directory, 'fresh.sqlite')}`, silentLogger);
    try {
      const firstUse = videoPart(silentLogger, fresh);
      const input = generationInput('first');
      const [first, second] = await Promise.all([
        firstUse.prepare.generation(interactionContext(), input),
        firstUse.prepare.generation(interactionContext(), input),
      ]);
      expect(planned(first).request.user).toBeDefined();
      expect(planned(second).request.user).toBe(planned(first).request.user);
    } finally {
      await fresh.close();
    }
  });
});

describe('a task that finishes', () => {
  it('is saved as finished only once what its end records (its cost) is recorded, so a kill in between records it after the restart', async () => {
    const told = Promise.withResolvers<void>();
    const recorded = Promise.withResolvers<void>();
    const fresh = await openStore(`sqlite://${join(directory, 'finishing.sqlite')}`, silentLogger);
    const finishing = videoPart(silentLogger, fresh);
    finishing.tracker.onFinished(async () => {
      told.resolve();
      await recorded.promise;
    });
    const saves = vi.spyOn(finishing.tasks, 'save');
    try {
      const { task } = await track({}, () => {}, finishing);
      await told.promise;
      const savedAsFinished = () => saves.mock.calls.some(([saved]) => saved.id === task.id && saved.state === 'succeeded');
      expect(savedAsFinished()).toBe(false);
      recorded.resolve();
      await vi.waitFor(() => expect(savedAsFinished()).toBe(true));
    } finally {
      recorded.resolve();
      saves.mockRestore();
      await finishing.tracker.stop();
      await fresh.close();
    }
  });
});

describe('a task the gateway accepted while the store fails', () => {
  it('is stored once the store answers again and then followed to its post, not lost', async () => {
    const fresh = await openStore(`sqlite://${join(directory, 'store-fails.sqlite')}`, silentLogger);
    // This file's policy gives up after half a second; storing late takes longer than that here.
    const part = createVideo({
      store: fresh,
      clients,
      policy,
      outbox,
      vendor: 'svc',
      log: silentLogger,
      pollPolicy: { ...FAST_POLICY, deadlineMs: 60_000 },
      cardEditIntervalMs: 0,
    });
    const realSave = part.tasks.save.bind(part.tasks);
    let refused = 0;
    const saves = vi.spyOn(part.tasks, 'save').mockImplementation(async (task) => {
      // The store fails the first two writes of the accepted task (the one that records the gateway's id).
      if (task.gatewayId !== undefined && task.state === 'running' && refused < 2) {
        refused++;
        throw new StoreUnavailableError('the store did not answer within 5000 ms (write tasks)');
      }
      return realSave(task);
    });
    try {
      const context = interactionContext();
      const task = await part.submit(planned(await part.prepare.generation(context, generationInput('stored late'))), context);
      expect(refused).toBe(2);
      expect(task.state).toBe('running');
      await discord.waitForMessage(guild.textChannelId, (message) =>
        JSON.stringify(message.components).includes(`video:extend:${task.id}`),
      );
    } finally {
      saves.mockRestore();
      await part.tracker.stop();
      await fresh.close();
    }
  });
});

describe('a resume while a task is being submitted', () => {
  it('leaves the task to its submission instead of declaring its outcome unknown', async () => {
    const fresh = await openStore(`sqlite://${join(directory, 'resume.sqlite')}`, silentLogger);
    const trackerLines: LogFields[] = [];
    const trackerLog = recordingLogger(trackerLines, 'debug');
    // The process starts: its tracker, then a member's /video whose submission the gateway holds.
    const freshVideo = videoPart(trackerLog, fresh);
    const freshTracker = freshVideo.tracker;
    const finished: TaskRecord[] = [];
    freshTracker.onFinished((task) => {
      finished.push(task);
    });
    try {
      let answer!: () => void;
      const held = new Promise<void>((resolve) => {
        gateway.onSubmit = (response) => {
          answer = () => DoneGateway.accept(response);
          resolve();
        };
      });
      const context = interactionContext();
      const input = generationInput('sent while resuming');
      const submitted = freshVideo.submit(planned(await freshVideo.prepare.generation(context, input)), context);
      await held;
      // Discord's "ready" comes now, and the resume lists the task that is still being sent.
      await freshTracker.resume();
      await waitForLog('a task is still being submitted; leaving it to its sender', trackerLines);
      answer();
      const task = await submitted;
      expect(task.state).toBe('running');
      await discord.waitForMessage(guild.textChannelId, (message) =>
        JSON.stringify(message.components).includes(`video:extend:${task.id}`),
      );
      expect(finished.map((done) => done.state)).toEqual(['succeeded']);
    } finally {
      await freshTracker.stop();
      await fresh.close();
    }
  });
});

describe("a job in its server's moderation log", () => {
  it('is told once per job with its member, prompt, card and estimate; a job a limit refused is not', async () => {
    const jobs: LoggedJob[] = [];
    const fresh = await openStore(`sqlite://${join(directory, 'moderation-log.sqlite')}`, silentLogger);
    const part = videoPart(silentLogger, fresh, {
      policy: { ...policy, estimate: () => 0.4 * USD_TICKS },
      moderationLog: { job: (job) => jobs.push(job) },
    });
    try {
      // A card posted before the job, as for a video asked for by voice: its message is known.
      const { messageId: cardId } = await outbox.postCard(guild.textChannelId, voiceRequestCard(guild.member.id));
      const context = { ...interactionContext(), cardMessageId: cardId };
      const input = generationInput('two foxes', { variants: 2 });
      await part.submit(planned(await part.prepare.generation(context, input)), context);
      expect(jobs).toEqual([
        {
          guildId: guild.id,
          channelId: guild.textChannelId,
          messageId: cardId,
          userId: guild.member.id,
          prompt: 'two foxes',
          videos: 2,
          estimateUsdTicks: 0.8 * USD_TICKS,
        },
      ]);

      countSubmission = () => Promise.reject(new LimitReachedError(notice('limits.server-daily', { count: 5, retry: 'tomorrow' })));
      const refused = part.submit(planned(await part.prepare.generation(context, generationInput('one too many'))), context);
      await expect(refused).rejects.toBeInstanceOf(SubmissionRefusedError);
      expect(jobs).toHaveLength(1);
    } finally {
      await part.tracker.stop();
      await fresh.close();
    }
  });
});
