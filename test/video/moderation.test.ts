import { describe, expect, it } from 'vitest';
import { GatewayApiError } from '../../src/gateway/errors.ts';
import { parseTaskResult } from '../../src/gateway/task-result.ts';
import { ENGLISH, SUPPORTED_LOCALES, t } from '../../src/i18n/index.ts';
import { applyResult } from '../../src/video/apply-result.ts';
import { moderationOf, type TaskRecord } from '../../src/video/record.ts';
import { logModeration } from '../../src/video/moderation-report.ts';
import { isLoggedRefusal } from '../../src/settings/moderation-log.ts';
import type { LoggedModeration } from '../../src/ports/moderation-log.ts';
import { renderStatusCard } from '../../src/video/status-card.ts';
import { refusalNotice } from '../../src/video/submission-refusal.ts';
import { word } from '../../src/wording/notice.ts';
import { cardButtons, cardText, galleryItems } from '../support/cards.ts';
import { taskRecord } from '../support/task-result.ts';

// What a member reads when the provider's content moderation ends a task (docs/gateway.md, "Task result"):
// a refusal (a moderation code such as `imagine:content-moderated`) says so plainly and that nothing was
// charged; a video withheld (`respect_moderation: false`) is not posted, and its card says the provider
// withheld it. The code decides; only invalid_argument, which also means "blocked by content moderation",
// is read for the word "moderation" (docs/gateway.md, "Task result").

const running = taskRecord({ prompt: 'a dragon over the sea', reservation: { estimateUsdTicks: 4_000_000_000, month: false } });

/** The task after the gateway answered its poll with `body` on the native layer. */
function answered(body: Record<string, unknown>, task: TaskRecord = running): TaskRecord {
  const result = parseTaskResult({ id: 'req_1', layer: 'native', httpStatus: 200, body, requestId: 'req-9' });
  return applyResult(task, result, 1_700_000_060_000);
}

const refusedBody = { status: 'failed', error: { code: 'imagine:content-moderated', message: 'Blocked by our safety system.' } };
const withheldBody = { status: 'done', video: { url: '', duration: 8, respect_moderation: false }, progress: 100 };

describe("the provider's content moderation", () => {
  it('a task failed on a moderation code is a refusal: its card says so, and that nothing was charged', () => {
    const task = answered({ ...refusedBody, usage: { cost_in_usd_ticks: 0 } });
    expect(moderationOf(task)).toBe('refused');
    const text = cardText(renderStatusCard(task));
    expect(text).toContain("**Refused by the provider's moderation**");
    expect(text).toContain("The provider's content moderation refused this prompt. Nothing was charged.");
    expect(text).not.toContain('**Failed**');
    expect(text).not.toContain('Blocked by our safety system');
    expect(text).toContain('`req-9`');
    // Nothing to extend or edit: only the card's own Delete.
    expect(cardButtons(renderStatusCard(task)).map((button) => button.label)).toEqual(['Delete']);
  });

  it('the native form of the error (a string, the code at the top level) is the same refusal', () => {
    const task = answered({ status: 'failed', code: 'imagine:content-moderated', error: 'Blocked.' });
    expect(moderationOf(task)).toBe('refused');
    expect(cardText(renderStatusCard(task))).toContain('refused this prompt. Nothing was charged.');
  });

  it('does not say nothing was charged when the gateway reported a cost all the same', () => {
    const task = answered({ ...refusedBody, usage: { cost_in_usd_ticks: 500_000_000 } });
    const text = cardText(renderStatusCard(task));
    expect(text).toContain("The provider's content moderation refused this prompt.");
    expect(text).not.toContain('Nothing was charged');
    expect(text).toContain('Cost: $0.05');
  });

  it('an invalid_argument whose message says moderation is the same refusal; any other invalid_argument is quoted', () => {
    // The compatibility layer's only code for a moderation refusal (docs/gateway.md, "Task result").
    for (const message of ['The prompt was rejected by content moderation.', 'Blocked: MODERATED content', 'moderation'])
      expect(moderationOf(answered({ status: 'failed', error: { code: 'invalid_argument', message } })), message).toBe('refused');
    const refused = cardText(
      renderStatusCard(answered({ status: 'failed', error: { code: 'invalid_argument', message: 'Content moderation blocked it.' } })),
    );
    expect(refused).toContain("**Refused by the provider's moderation**");
    expect(refused).toContain('Nothing was charged.');
    // Narrow on purpose: a bad input, or a word that only starts like it, is a failure quoted as it came.
    for (const message of ['Duration out of range.', 'The image is unmoderated-looking.', 'Moderate motion is not supported.']) {
      const task = answered({ status: 'failed', error: { code: 'invalid_argument', message } });
      expect(moderationOf(task), message).toBeUndefined();
      expect(cardText(renderStatusCard(task))).toContain('**Failed**');
    }
    // Another code is never read from its message.
    expect(
      moderationOf(answered({ status: 'failed', error: { code: 'internal_error', message: 'moderation service down' } })),
    ).toBeUndefined();
  });

  it("is told to the server's moderation log once the task ends: who, the prompt, its card, and whether it was charged", () => {
    const reported: LoggedModeration[] = [];
    const log = { moderated: (moderation: LoggedModeration) => reported.push(moderation) };
    const card = { ...running.card, messageId: '900' };
    logModeration(answered(refusedBody, { ...running, card }), log);
    logModeration(answered({ ...refusedBody, usage: { cost_in_usd_ticks: 500_000_000 } }, { ...running, card }), log);
    logModeration(answered(withheldBody, { ...running, card }), log);
    logModeration(answered({ status: 'failed', error: { code: 'internal_error', message: 'x' } }), log);
    logModeration(answered(refusedBody, { ...running, userInstall: {} }), log);
    const base = {
      guildId: running.guildId,
      channelId: running.channelId,
      messageId: '900',
      userId: running.userId,
      prompt: running.prompt,
    };
    expect(reported).toEqual([
      { ...base, outcome: 'refused', charged: false },
      { ...base, outcome: 'refused', charged: true },
      { ...base, outcome: 'withheld', charged: false },
    ]);
  });

  it('a video withheld by the provider is not posted, and its card says the provider withheld it', () => {
    const task = answered(withheldBody);
    expect(moderationOf(task)).toBe('withheld');
    expect(task.delivery.state).toBe('closed');
    const card = renderStatusCard(task);
    expect(cardText(card)).toContain('**Withheld by the provider**');
    expect(cardText(card)).toContain("The provider's content moderation withheld the finished video, so it is not posted.");
    expect(galleryItems(card)).toEqual([]);
    expect(cardButtons(card).map((button) => button.label)).toEqual(['Delete']);
  });

  it('a task the provider did not moderate is neither', () => {
    expect(moderationOf(answered({ status: 'failed', error: { code: 'internal_error', message: 'x' } }))).toBeUndefined();
    expect(moderationOf(answered({ status: 'done', video: { url: 'https://v/x.mp4', respect_moderation: true } }))).toBeUndefined();
    expect(moderationOf(running)).toBeUndefined();
  });

  it('a submission the provider refuses on a moderation code is told privately in the same words', () => {
    const error = new GatewayApiError({ code: 'imagine:content-moderated', status: 400, serverMessage: 'Blocked.', requestId: 'r1' });
    const told = refusalNotice(error, { model: 'svc-imagine-video', operation: 'generate' });
    // Said once: "Nothing was charged." is in its own words already.
    expect(told && word(ENGLISH, told)).toBe(
      "The provider's content moderation refused this prompt. Nothing was charged. Try a different prompt or images.",
    );
    expect(told && isLoggedRefusal(told)).toBe(true);
  });

  it('is worded in every language the bot speaks, each its own', () => {
    for (const key of ['video.card.status.refused', 'video.card.status.moderated', 'gateway-error.moderated'] as const) {
      const texts = SUPPORTED_LOCALES.map((locale) => t(locale, key));
      expect(new Set(texts).size).toBe(SUPPORTED_LOCALES.length);
    }
    const refusals = SUPPORTED_LOCALES.map((locale) => t(locale, 'video.card.refused', { charged: 'no' }));
    expect(new Set(refusals).size).toBe(SUPPORTED_LOCALES.length);
  });
});
