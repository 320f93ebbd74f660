import { describe, expect, it } from 'vitest';
import type { TaskResult } from '../../src/gateway/types.ts';
import { applyResult } from '../../src/video/apply-result.ts';
import { GatewayApiError } from '../../src/gateway/errors.ts';
import { describeFailure, describeOverUploadLimit } from '../../src/video/wording.ts';
import { refusalMessage } from '../../src/video/submit.ts';
import { needsWork, parseTaskRecord, type TaskRecord } from '../../src/video/record.ts';
import { cardStateKey, progressBar, renderStatusCard } from '../../src/video/status-card.ts';
import { taskRecord, taskResult } from '../support/task-result.ts';

const task = taskRecord({ prompt: 'a cat surfing' });

const result = (overrides: Partial<TaskResult>): TaskResult => taskResult({ requestId: 'req-9', ...overrides });

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
        costTicks: 6_400_000_000,
        file: { fileId: 'f1', filename: 'x.mp4', expiresAt: undefined, publicUrl: 'https://pub/x.mp4' },
      }),
      5,
    );
    expect(next).toMatchObject({ state: 'succeeded', finishedAt: 5, delivery: { state: 'waiting' } });
    expect(next.outcome).toMatchObject({
      videoUrl: 'https://v/x.mp4',
      costTicks: 6_400_000_000,
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
    expect(() => parseTaskRecord({ ...task, delivery: { state: 'posted' } })).toThrow(/task.delivery.nonce must be a string/);
  });
});

describe('the status card', () => {
  it('shows prompt, model, mode, layer, task id, status with progress, and elapsed time', () => {
    const [embed] = renderStatusCard({ ...task, progress: 60 }).embeds;
    const fields = Object.fromEntries((embed?.fields ?? []).map((field) => [field.name, field.value]));
    expect(embed?.description).toContain('a cat surfing');
    expect(fields).toMatchObject({
      Model: '`svc-imagine-video-1.5`',
      Mode: 'Text to video',
      Layer: 'native',
      Task: '`task_1`',
      Status: `Generating ${progressBar(60)}`,
      Started: '<t:1700000001:R>',
    });
  });

  it('says in plain words why a task failed, that the quota was refunded, and the request id', () => {
    const failed = applyResult(
      task,
      result({ status: 'failed', error: { code: 'service_unavailable', message: 'busy' } }),
      task.submittedAt! + 65_000,
    );
    const [embed] = renderStatusCard(failed).embeds;
    const details = embed?.fields?.find((field) => field.name === 'Details')?.value;
    expect(details).toContain('overloaded');
    expect(details).toContain('refunded automatically');
    expect(details).toContain('req-9');
    expect(embed?.fields?.find((field) => field.name === 'Took')?.value).toBe('1m 05s');
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
    const details = renderStatusCard(gaveUp).embeds[0]?.fields?.find((field) => field.name === 'Details')?.value;
    expect(details).toContain(words);
    expect(details).toContain('gateway task `task_1`');
    expect(details).not.toContain('refunded');
  });

  describe('what a finished task cost', () => {
    const done: TaskRecord = {
      ...task,
      state: 'succeeded',
      finishedAt: task.submittedAt! + 30_000,
      outcome: { costTicks: 4_200_000_000 },
      delivery: { ...task.delivery, state: 'posted' },
    };
    const costOn = (shown: TaskRecord, context: Parameters<typeof renderStatusCard>[1]) =>
      renderStatusCard(shown, context).embeds[0]?.fields?.find((field) => field.name === 'Cost')?.value;
    const sameDay = task.createdAt + 60_000;

    it("is shown with the member's total that day", () => {
      expect(costOn(done, { now: sameDay, memberDay: { costTicks: 13_000_000_000, costUnreported: 0 } })).toBe(
        '$0.42 · your total today $1.30',
      );
      expect(costOn(done, { now: sameDay + 86_400_000, memberDay: { costTicks: 13_000_000_000, costUnreported: 0 } })).toBe(
        '$0.42 · your total on 2023-11-14 $1.30',
      );
      expect(costOn(done, { now: sameDay, memberDay: { costTicks: 4_200_000_000, costUnreported: 2 } })).toBe(
        '$0.42 · your total today $0.42 (+ 2 without a reported cost)',
      );
      expect(costOn(done, { now: sameDay })).toBe('$0.42');
    });

    it('is not shown while the task runs; a task without its estimate shows none when the gateway reported none: no $0.00', () => {
      expect(
        costOn({ ...done, state: 'running', finishedAt: undefined }, { now: sameDay, memberDay: { costTicks: 1, costUnreported: 0 } }),
      ).toBeUndefined();
      const unreported = renderStatusCard(
        { ...done, outcome: {} },
        { now: sameDay, memberDay: { costTicks: 13_000_000_000, costUnreported: 1 } },
      );
      expect(JSON.stringify(unreported)).not.toMatch(/Cost|\$/);
    });
  });

  describe('what a task is expected to cost (its estimate, reserved when it was submitted)', () => {
    const reserved: TaskRecord = { ...task, reservation: { estimateTicks: 4_000_000_000, month: false } };
    const field = (shown: TaskRecord, name: string) =>
      renderStatusCard(shown, { now: task.createdAt }).embeds[0]?.fields?.find((candidate) => candidate.name === name)?.value;

    it('is on the card from the first, while the task is sent and runs', () => {
      expect(field({ ...reserved, state: 'submitting' }, 'Estimate')).toBe('about $0.40');
      expect(field({ ...reserved, state: 'running', progress: 50 }, 'Estimate')).toBe('about $0.40');
    });

    it('gives way to the reported cost when the task is done, or stands in for it, marked, when the gateway reported none', () => {
      const done: TaskRecord = {
        ...reserved,
        state: 'succeeded',
        finishedAt: task.submittedAt! + 30_000,
        delivery: { ...task.delivery, state: 'posted' },
      };
      expect(field({ ...done, outcome: { costTicks: 4_200_000_000 } }, 'Estimate')).toBeUndefined();
      expect(field({ ...done, outcome: { costTicks: 4_200_000_000 } }, 'Cost')).toBe('$0.42');
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

describe('sizes in the "link instead" message', () => {
  const MB = 1024 * 1024;

  it.each([
    [10.4 * MB, 10 * MB, "The video is 10.4 MB, over this server's upload limit of 10.0 MB."],
    [10 * MB + 100, 10 * MB, "The video is 10.0001 MB, over this server's upload limit of 10.0000 MB."],
    [612_345, 5000, "The video is 598 KB, over this server's upload limit of 4.88 KB."],
    [52 * MB, 50 * MB, "The video is 52.0 MB, over this server's upload limit of 50.0 MB."],
    [undefined, 8 * MB, "The video is over this server's upload limit of 8.00 MB."],
  ])('%s bytes against a limit of %s read apart', (size, limit, text) => {
    expect(describeOverUploadLimit(size, limit)).toBe(text);
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
    const refused = refusalMessage(new GatewayApiError({ code, status: 429, serverMessage: 'raw', requestId: 'r1' }), {
      model: 'svc-imagine-video',
      operation: 'generate',
    });
    expect(refused).toMatch(pattern);
    expect(refused).toContain('`r1`');
  });

  it('every asynchronous failure code is told in its own words', () => {
    const texts = ['invalid_argument', 'permission_denied', 'failed_precondition', 'service_unavailable', 'internal_error'].map((code) =>
      describeFailure({ error: { code, message: 'detail.' } }),
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
    const card = JSON.stringify(renderStatusCard(next));
    expect(card).toContain(
      "The gateway's storage gave a lasting link that is not an http(s) address (`javascript:`), so the bot does not share it.",
    );
    expect(card).not.toContain('alert');
  });
});
