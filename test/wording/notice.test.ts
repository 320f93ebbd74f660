import { describe, expect, it } from 'vitest';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { ENGLISH, resolveLocale } from '../../src/i18n/index.ts';
import { notice, refuse, word } from '../../src/wording/notice.ts';

const [GERMAN, FRENCH, JAPANESE] = (['de', 'fr', 'ja'] as const).map((code) => resolveLocale(code, undefined, 'member'));

describe('word', () => {
  it('words a notice in the reader language, its amounts and nested messages included', () => {
    const told = notice('user-install.limit.videos', { count: 3, retry: { phrase: 'relative-time', value: 2, unit: 'hour' } });
    expect(word(ENGLISH, told)).toBe(
      "You made 3 videos today through your own install of the app, as many as the bot's operator allows a day. Try again in 2 hours.",
    );
    expect(word(GERMAN!, told)).toContain('in 2 Stunden');
  });

  it('formats a cost as the reader writes money, and a message inside another as its own sentence', () => {
    const about = notice('cost.about', { amount: { phrase: 'cost', usdTicks: 1.5 * USD_TICKS } });
    expect(word(ENGLISH, about)).toBe('about $1.50');
    expect(word(FRENCH!, about)).toMatch(/1,50\s\$/);
    const nested = notice('gateway-error.with-request-id', { text: about, requestId: 'req_1' });
    expect(word(ENGLISH, nested)).toBe('about $1.50 (request id `req_1`)');
  });

  it('keeps text values as they came, markdown and all', () => {
    expect(word(JAPANESE!, notice('gateway-error.with-request-id', { text: '**x**', requestId: 'r' }))).toBe('**x** (リクエスト ID `r`)');
  });
});

describe('refuse', () => {
  it('is a refusal whose notice names its message, so callers and logs can tell refusals apart', () => {
    const refusal = refuse('cost.under', { amount: '$0.01' });
    expect(refusal.ok).toBe(false);
    expect(refusal.notice.key).toBe('cost.under');
    expect(word(ENGLISH, refusal.notice)).toBe('under $0.01');
  });
});
