import { describe, expect, it } from 'vitest';
import { ENGLISH, SUPPORTED_LOCALES, formatDuration, resolveLocale, t, type Locale } from '../../src/i18n/index.ts';
import type { TaskResult } from '../../src/gateway/types.ts';
import { applyResult } from '../../src/video/apply-result.ts';
import { GatewayApiError } from '../../src/gateway/errors.ts';
import { describeFailure, describeOverUploadLimit } from '../../src/video/wording.ts';
import { refusalNotice } from '../../src/video/submission-refusal.ts';
import { word } from '../../src/wording/notice.ts';
import { TASK_NOT_FOUND, needsWork, parseTaskRecord, type TaskRecord } from '../../src/video/record.ts';
import { userInstallScope } from '../../src/ports/user-install.ts';
import type { ComponentsV2Message } from '../../src/discord/outbox.ts';
import { cardStateKey, knownCard, progressBar, renderJobCard, renderLostCard, renderStatusCard } from '../../src/video/status-card.ts';
import { cardButtons, cardText, componentsV2Problems, galleryItems } from '../support/cards.ts';
import { CARD_STATES_FINISHED_AT, cardStates } from '../support/card-states.ts';
import { shownInCard, taskRecord, taskResult } from '../support/task-result.ts';

const task = taskRecord({ prompt: 'a cat surfing' });

const result = (overrides: Partial<TaskResult>): TaskResult => taskResult({ requestId: 'req-9', ...overrides });

/** What a member reads of a submission's refusal, in English. */
function refusedInEnglish(...args: Parameters<typeof refusalNotice>): string | undefined {
  const told = refusalNotice(...args);
  return told && word(ENGLISH, told);
}

describe('following a task', () => {
  it('keeps progress while running and still needs work', () => {
    const next = applyResult(task, result({ progress: 40 }), 0);
    expect(next.state).toBe('running');
    expect(next.progress).toBe(40);
    expect(needsWork(next)).toBe(true);
  });

  it('waits to post a succeeded video, with its cost and stored file', () => {
    const next = applyResult(
      task,
      result({
        status: 'succeeded',
        videoUrl: 'https://v/x.mp4',
        costUsdTicks: 6_400_000_000,
        file: { fileId: 'f1', filename: 'x.mp4', expiresAt: undefined, publicUrl: 'https://pub/x.mp4' },
      }),
      5,
    );
    expect(next).toMatchObject({ state: 'succeeded', finishedAt: 5, delivery: { state: 'waiting' } });
    expect(next.outcome).toMatchObject({
      videoUrl: 'https://v/x.mp4',
      costUsdTicks: 6_400_000_000,
      storedFile: { fileId: 'f1', publicUrl: 'https://pub/x.mp4' },
    });
  });

  it.each([
    ['a failure', result({ status: 'failed', error: { code: 'internal_error', message: 'boom' } })],
    ['a moderated result', result({ status: 'succeeded', moderated: true })],
    ['an expired result', result({ status: 'expired' })],
  ])('has nothing to post after %s', (_label, answer) => {
    const next = applyResult(task, answer, 5);
    expect(next.delivery.state).toBe('closed');
    expect(needsWork(next)).toBe(false);
  });

  it('survives a round trip through the store format', () => {
    const stored: unknown = JSON.parse(
      JSON.stringify(applyResult(task, result({ status: 'failed', error: { code: 'invalid_argument', message: 'bad' } }), 9)),
    );
    expect(parseTaskRecord(stored)).toEqual(
      applyResult(task, result({ status: 'failed', error: { code: 'invalid_argument', message: 'bad' } }), 9),
    );
    expect(() => parseTaskRecord({ ...task, state: 'exploded' })).toThrow(/task.state must be one of/);
    expect(() => parseTaskRecord({ ...task, delivery: { state: 'posted' } })).toThrow(/task.delivery.attempts must be a number/);
  });
});

describe("Vary's note", () => {
  const broken = { field: 'image', rule: 'last-frame-model', values: { latest: 'svc-imagine-video-2', model: 'svc-imagine-video-1.5' } };
  const varied = { ...task, varyNote: { reason: 'no-image' as const, broken } };
  const french = resolveLocale('fr', undefined, 'member');

  it("is kept as a reason and the rule broken, and worded in each card's reader's language", () => {
    const stored = parseTaskRecord(JSON.parse(JSON.stringify(varied)));
    expect(stored.varyNote).toEqual(varied.varyNote);
    for (const locale of [ENGLISH, french]) {
      const rule = t(locale, 'validation.last-frame-model', {
        field: 'image',
        latest: 'svc-imagine-video-2',
        model: 'svc-imagine-video-1.5',
      });
      const reason = t(locale, 'video.card.vary-note.no-image', { message: rule });
      expect(cardText(renderStatusCard(stored, { now: Date.now() }, { audience: 'private', locale }))).toContain(
        `-# ${t(locale, 'video.card.vary-note', { reason })}`,
      );
    }
    expect(() => parseTaskRecord({ ...task, varyNote: { reason: 'lost' } })).toThrow(/task.varyNote.reason must be one of/);
  });
});

/** The value of a card's `Name: value` line. */
function lineOf(card: ComponentsV2Message, name: string): string | undefined {
  return new RegExp(`^${name}: (.*)$`, 'm').exec(cardText(card))?.[1];
}

describe('the status card', () => {
  it('shows the prompt, the settings that matter, the layer, the task id, and progress with the elapsed time', () => {
    const card = renderStatusCard({
      ...task,
      progress: 60,
      request: { ...task.request, duration: 6, resolution: '720p', aspect_ratio: '16:9' },
    });
    const text = cardText(card);
    expect(text).toContain('### Video generation');
    expect(text).toContain('> a cat surfing');
    expect(text).toContain('`svc-imagine-video-1.5` · 6 s · 720p · 16:9 · Text to video');
    expect(text).toContain(`**Generating** ${progressBar(60)} · started <t:1700000001:R>`);
    expect(text).toContain('ref vabc123 · native · task `task_1`');
  });

  it("shows the elapsed time alone while the gateway reports no progress, and the gateway's defaults for what the request left out", () => {
    const text = cardText(renderStatusCard(task));
    expect(text).toContain('**Generating…** started <t:1700000001:R>');
    expect(text).toContain('`svc-imagine-video-1.5` · 8 s · 480p · Text to video');
  });

  it('says in plain words why a task failed, that the quota was refunded, and the request id', () => {
    const failed = applyResult(
      task,
      result({ status: 'failed', error: { code: 'service_unavailable', message: 'busy' } }),
      task.submittedAt! + 65_000,
    );
    const text = cardText(renderStatusCard(failed));
    expect(text).toContain('**Failed**');
    expect(text).toContain('overloaded');
    expect(text).toContain('refunded automatically');
    expect(text).toContain('req-9');
    expect(text).toContain('took 1m 5s');
  });

  it.each([
    ['its polls kept failing', 3, 'lost track of this video: its last 3 questions to the gateway failed'],
    ['the gateway never finished it', 0, 'still had not finished this video after 15 min'],
  ])('claims no refund when the bot gave up because %s, and names the gateway task to check', (_label, pollErrors, words) => {
    const gaveUp: TaskRecord = {
      ...task,
      state: 'timed_out',
      pollErrors,
      finishedAt: task.submittedAt! + 15 * 60_000,
      delivery: { ...task.delivery, state: 'closed' },
    };
    const text = cardText(renderStatusCard(gaveUp));
    expect(text).toContain(words);
    expect(text).toContain('gateway task `task_1`');
    expect(text).not.toContain('refunded');
  });

  it("cuts a long prompt so the card stays within Discord's 4000 characters", () => {
    const card = renderStatusCard({ ...task, prompt: 'x'.repeat(4000) });
    expect(componentsV2Problems(card, [])).toEqual([]);
    expect(cardText(card)).toContain('…');
  });

  it('cuts a long emoji prompt between whole emoji, never inside one', () => {
    // 990 family emoji, 11 UTF-16 units each: a cut at any length but a multiple of 11 splits one.
    const family = '👨‍👩‍👧‍👦';
    const card = renderStatusCard({ ...task, prompt: family.repeat(990) });
    expect(componentsV2Problems(card, [])).toEqual([]);
    const shown = /(?:👨‍👩‍👧‍👦)+…/u.exec(cardText(card))?.[0];
    expect(shown).toBeDefined();
    expect(shown!.slice(0, -1).replaceAll(family, '')).toBe('');
    expect(cardText(card)).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  describe('what a finished task cost', () => {
    const done: TaskRecord = {
      ...task,
      state: 'succeeded',
      finishedAt: task.submittedAt! + 30_000,
      outcome: { costUsdTicks: 4_200_000_000 },
      delivery: shownInCard({ as: 'file', fileName: 'video-vabc123.mp4' }),
    };
    const costOn = (shown: TaskRecord, context: Parameters<typeof renderStatusCard>[1]) => lineOf(renderStatusCard(shown, context), 'Cost');
    const sameDay = task.createdAt + 60_000;

    it("is shown with the member's total that day", () => {
      expect(costOn(done, { now: sameDay, memberDay: { costUsdTicks: 13_000_000_000, costUnreported: 0 } })).toBe(
        '$0.42 · your total today $1.30',
      );
      expect(costOn(done, { now: sameDay + 86_400_000, memberDay: { costUsdTicks: 13_000_000_000, costUnreported: 0 } })).toBe(
        '$0.42 · your total on 2023-11-14 $1.30',
      );
      expect(costOn(done, { now: sameDay, memberDay: { costUsdTicks: 4_200_000_000, costUnreported: 2 } })).toBe(
        '$0.42 · your total today $0.42 (+ 2 without a reported cost)',
      );
      expect(costOn(done, { now: sameDay })).toBe('$0.42');
    });

    it('is not shown while the task runs; a task without its estimate shows none when the gateway reported none: no $0.00', () => {
      expect(
        costOn({ ...done, state: 'running', finishedAt: undefined }, { now: sameDay, memberDay: { costUsdTicks: 1, costUnreported: 0 } }),
      ).toBeUndefined();
      const unreported = renderStatusCard(
        { ...done, outcome: {} },
        { now: sameDay, memberDay: { costUsdTicks: 13_000_000_000, costUnreported: 1 } },
      );
      expect(cardText(unreported)).not.toMatch(/Cost|\$/);
    });
  });

  describe('what a task is expected to cost (its estimate, reserved when it was submitted)', () => {
    const reserved: TaskRecord = { ...task, reservation: { estimateUsdTicks: 4_000_000_000, month: false } };
    const field = (shown: TaskRecord, name: string) => lineOf(renderStatusCard(shown, { now: task.createdAt }), name);

    it('is on the card from the first, while the task is sent and runs', () => {
      expect(field({ ...reserved, state: 'submitting' }, 'Estimate')).toBe('about $0.40');
      expect(field({ ...reserved, state: 'running', progress: 50 }, 'Estimate')).toBe('about $0.40');
    });

    it('gives way to the reported cost when the task is done, or stands in for it, marked, when the gateway reported none', () => {
      const done: TaskRecord = {
        ...reserved,
        state: 'succeeded',
        finishedAt: task.submittedAt! + 30_000,
        delivery: shownInCard({ as: 'file', fileName: 'video-vabc123.mp4' }),
      };
      expect(field({ ...done, outcome: { costUsdTicks: 4_200_000_000 } }, 'Estimate')).toBeUndefined();
      expect(field({ ...done, outcome: { costUsdTicks: 4_200_000_000 } }, 'Cost')).toBe('$0.42');
      expect(field({ ...done, outcome: {} }, 'Cost')).toBe('about $0.40 (estimated)');
    });

    it('is not shown as a cost for a task that made nothing (it was refunded)', () => {
      const failed: TaskRecord = { ...reserved, state: 'failed', finishedAt: task.submittedAt! + 30_000, outcome: {} };
      expect(field(failed, 'Cost')).toBeUndefined();
      expect(field(failed, 'Estimate')).toBeUndefined();
    });
  });

  it('changes its state key only when what it shows changes', () => {
    expect(cardStateKey({ ...task, polls: 3 })).toBe(cardStateKey(task));
    expect(cardStateKey({ ...task, progress: 10 })).not.toBe(cardStateKey(task));
  });
});

describe("a job's card through its states, each a valid Components V2 message", () => {
  const states = cardStates();
  const finishedAt = CARD_STATES_FINISHED_AT;
  const succeeded = states.find(([name]) => name === 'finished with its video')![1];
  it.each(states)('%s', (_state, shown, expected) => {
    const card = renderStatusCard(shown, { now: finishedAt });
    expect(componentsV2Problems(card, expected.files ?? [])).toEqual([]);
    expect(card.components).toHaveLength(1);
    const text = cardText(card);
    for (const words of expected.text) expect(text).toContain(words);
    expect(galleryItems(card)).toEqual(expected.gallery);
    expect(cardButtons(card).map((button) => button.label)).toEqual(expected.buttons);
  });

  it('in private (/video status), points at the card that holds the video instead of naming its file, without the buttons', () => {
    const posted: TaskRecord = {
      ...succeeded,
      delivery: shownInCard({ as: 'file', fileName: 'video-vabc123.mp4' }, { messageId: '7' }),
    };
    const card = renderStatusCard(posted, { now: finishedAt }, { audience: 'private' });
    expect(componentsV2Problems(card, [])).toEqual([]);
    expect(galleryItems(card)).toEqual([]);
    expect(cardButtons(card)).toEqual([
      { label: 'Go to the video', url: `https://discord.com/channels/${task.guildId}/${task.channelId}/7` },
    ]);
  });

  it("holds several tasks as numbered tiles, their videos side by side in one gallery, within Discord's limits", () => {
    const tiles = [1, 2, 3, 4].map((number) => ({
      ...succeeded,
      id: `v${number}`,
      prompt: 'p'.repeat(4000),
      outcome: { ...succeeded.outcome, error: { code: 'x', message: 'y'.repeat(3000) } },
      delivery: shownInCard({ as: 'file', fileName: `video-v${number}.mp4` }),
    }));
    const card = renderJobCard(tiles, { now: finishedAt });
    expect(
      componentsV2Problems(
        card,
        tiles.map((tile) => `video-${tile.id}.mp4`),
      ),
    ).toEqual([]);
    expect(galleryItems(card)).toEqual([
      'attachment://video-v1.mp4',
      'attachment://video-v2.mp4',
      'attachment://video-v3.mp4',
      'attachment://video-v4.mp4',
    ]);
    expect(
      cardButtons(card)
        .filter((button) => button.customId?.startsWith('video:extend:'))
        .map((button) => button.label),
    ).toEqual(['Extend 1', 'Extend 2', 'Extend 3', 'Extend 4']);
  });
});

describe('sizes in the "link instead" message', () => {
  const MB = 1024 * 1024;

  it.each([
    [10.4 * MB, 10 * MB, "The video is 10.4 MB, over this server's upload limit of 10.0 MB."],
    [10 * MB + 100, 10 * MB, "The video is 10.0001 MB, over this server's upload limit of 10.0000 MB."],
    [612_345, 5000, "The video is 598 kB, over this server's upload limit of 4.88 kB."],
    [52 * MB, 50 * MB, "The video is 52.0 MB, over this server's upload limit of 50.0 MB."],
    [undefined, 8 * MB, "The video is over this server's upload limit of 8.00 MB."],
  ])('%s bytes against a limit of %s read apart', (size, limit, text) => {
    expect(describeOverUploadLimit({ ...task, attachmentSizeLimit: limit }, size)).toBe(text);
  });
});

describe("a finished task's card through a member's own install", () => {
  // No server's key, admin or upload limit is in play: the key is the bot operator's, the limit Discord's
  // where they asked. Each text is checked in every language the bot speaks.
  const SERVER = /server|serveur|servidor|サーバー/i;
  const finished = { finishedAt: 1_700_000_065_000, gatewayId: 'task_9' };
  const own = (locale: Locale, overrides: Partial<TaskRecord>) =>
    taskRecord({ guildId: userInstallScope('100000000000000003'), userInstall: {}, locale, ...finished, ...overrides });
  const failed = (code: string) => ({ state: 'failed' as const, outcome: { error: { code, message: 'x' } } });
  const MB = 1024 * 1024;
  const overLimit = (locale: Locale, size: number | undefined, task: Pick<TaskRecord, 'userInstall'> = { userInstall: {} }) =>
    describeOverUploadLimit({ ...task, locale, attachmentSizeLimit: 8 * MB }, size);
  const linked = (locale: Locale, size: number | undefined): Partial<TaskRecord> => ({
    state: 'succeeded',
    outcome: { videoUrl: 'https://v/x.mp4', storedFile: { fileId: 'f1', filename: 'x.mp4', publicUrl: 'https://pub/x.mp4' } },
    delivery: shownInCard({ as: 'link', reason: overLimit(locale, size) }),
  });
  const lookUp = (locale: Locale) => t(locale, 'video.card.may-be-charged.look-up.operator', { id: 'task_9' });
  const cards: [string, (locale: Locale) => ComponentsV2Message, (locale: Locale) => string][] = [
    [
      'permission denied',
      (l) => renderStatusCard(own(l, failed('permission_denied'))),
      (l) => t(l, 'video.failure.permission-denied.operator'),
    ],
    [
      'no longer known to the gateway',
      (l) => renderStatusCard(own(l, failed(TASK_NOT_FOUND))),
      (l) => t(l, 'video.failure.not-found.operator'),
    ],
    ['timed out', (l) => renderStatusCard(own(l, { state: 'timed_out' })), lookUp],
    ['lost by the store', (l) => renderLostCard(knownCard(own(l, {}), 0), 'gone'), lookUp],
    ['too big to upload', (l) => renderStatusCard(own(l, linked(l, 9 * MB))), (l) => overLimit(l, 9 * MB)],
    ['too big, size unknown', (l) => renderStatusCard(own(l, linked(l, undefined))), (l) => overLimit(l, undefined)],
  ];

  it.each(cards)('%s: names no server, in any language', (_label, card, words) => {
    for (const locale of SUPPORTED_LOCALES) {
      const text = cardText(card(locale));
      expect(text).toContain(words(locale));
      expect(text).not.toMatch(SERVER);
    }
  });

  it("words the upload limit as Discord's where they asked, not a server's", () => {
    for (const size of [9 * MB, undefined]) expect(overLimit(ENGLISH, size)).not.toBe(overLimit(ENGLISH, size, {}));
    expect(overLimit(ENGLISH, 9 * MB)).toBe("The video is 9.00 MB, over Discord's upload limit of 8.00 MB where you asked.");
  });
});

describe('messages for refused submissions', () => {
  it.each([
    ['insufficient_quota', /quota is used up.*Nothing was charged/],
    ['rate_limit', /rate-limiting/],
    ['too_many_requests', /Too many videos/],
    ['invalid_api_key', /\/config key/],
    ['permission_denied', /not allowed to use `svc-imagine-video`/],
    ['model_not_found', /does not know the model `svc-imagine-video`/],
    ['overloaded', /having trouble \(`overloaded`\)/],
  ])('%s is explained', (code, pattern) => {
    const refused = refusedInEnglish(new GatewayApiError({ code, status: 429, serverMessage: 'raw', requestId: 'r1' }), {
      model: 'svc-imagine-video',
      operation: 'generate',
    });
    expect(refused).toMatch(pattern);
    expect(refused).toContain('`r1`');
  });

  it.each(['invalid_api_key', 'permission_denied', 'insufficient_quota', 'too_many_requests'])(
    "%s on the operator's key (a member's own install) names the operator, not a server",
    (code) => {
      const error = new GatewayApiError({ code, status: 429, serverMessage: 'raw', requestId: 'r1' });
      const refused = refusedInEnglish(error, { model: 'svc-imagine-video', operation: 'generate' }, 'operator');
      expect(refused).toContain("bot operator's");
      expect(refused).not.toMatch(/server/i);
    },
  );

  it('every asynchronous failure code is told in its own words', () => {
    const texts = ['invalid_argument', 'permission_denied', 'failed_precondition', 'service_unavailable', 'internal_error'].map((code) =>
      describeFailure(ENGLISH, { error: { code, message: 'detail.' } }, task),
    );
    expect(new Set(texts).size).toBe(5);
  });
});

describe('a lasting link that is not http(s)', () => {
  it('is kept as its scheme only, and the card says it is not shared', () => {
    const next = applyResult(
      task,
      result({
        status: 'succeeded',
        videoUrl: 'https://v/x.mp4',
        file: { fileId: 'f1', filename: 'x.mp4', expiresAt: undefined, publicUrl: undefined, refusedPublicUrl: 'javascript:alert(1)' },
      }),
      1_700_000_010_000,
    );
    expect(next.outcome.storedFile).toEqual({ fileId: 'f1', filename: 'x.mp4', refusedPublicUrl: 'javascript:' });
    expect(parseTaskRecord(JSON.parse(JSON.stringify(next)))).toEqual(next);
    const card = cardText(renderStatusCard(next));
    expect(card).toContain(
      "The gateway's storage gave a lasting link that is not an http(s) address (`javascript:`), so the bot does not share it.",
    );
    expect(card).not.toContain('alert');
  });
});

describe("a card's language", () => {
  const french = resolveLocale(undefined, 'fr', 'channel');

  it('is stored with the task and read back after a restart; a language the bot no longer has, or none, reads as English', () => {
    const stored = JSON.parse(JSON.stringify(taskRecord({ locale: french }))) as unknown;
    expect(parseTaskRecord(stored).locale).toBe(french);
    expect(parseTaskRecord({ ...taskRecord(), locale: 'tlh' }).locale).toBe(ENGLISH);
    const { locale: _none, v: _unversioned, ...earlier } = taskRecord({ locale: french });
    const upgraded = parseTaskRecord(JSON.parse(JSON.stringify(earlier)) as unknown);
    expect(cardText(renderStatusCard(upgraded))).toContain(`### ${t(ENGLISH, 'video.card.title', { operation: 'generate' })}`);
  });

  it("draws every edit in the task's language, and a member's private view in theirs", () => {
    const failed = taskRecord({
      locale: french,
      state: 'failed',
      finishedAt: 1_700_000_065_000,
      outcome: { error: { code: 'internal_error', message: 'x' } },
    });
    const text = cardText(renderStatusCard(failed));
    expect(text).toContain(t(french, 'video.card.status.failed'));
    expect(text).toContain(describeFailure(french, failed.outcome, failed));
    expect(text).toContain(t(french, 'video.card.took', { duration: formatDuration(french, 64, 'narrow') }));
    const german = resolveLocale('de', 'fr', 'member');
    expect(cardText(renderStatusCard(failed, undefined, { audience: 'private', locale: german }))).toContain(
      t(german, 'video.card.status.failed'),
    );
  });
});
