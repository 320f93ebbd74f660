import { describe, expect, it } from 'vitest';
import { ENGLISH } from '../../src/i18n/index.ts';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { formatEstimate } from '../../src/wording/cost.ts';
import {
  MAX_FORM_TITLE_LENGTH,
  confirmVerb,
  describeConfirmation,
  describeConfirmationClosed,
  formTitle,
} from '../../src/video/wording.ts';

// What a member reads of a video's estimate before anything is sent: on forms, and in the private question
// of a video over the server's confirmation threshold.

const usd = (amount: number) => Math.round(amount * USD_TICKS);

describe('an estimate', () => {
  it('reads as "about" an amount, never as a bare charge, and never as $0.00', () => {
    expect(formatEstimate(usd(0.4))).toBe('about $0.40');
    expect(formatEstimate(usd(1234.5))).toBe('about $1,234.50');
    expect(formatEstimate(usd(0.001))).toBe('under $0.01');
  });
});

describe("a form's title", () => {
  it('carries the estimate per second when the member types the length, or for the video', () => {
    expect(formTitle(ENGLISH, 'Extend this video', { usdTicks: usd(0.08), per: 'second' })).toBe(
      'Extend this video (about $0.08 a second)',
    );
    expect(formTitle(ENGLISH, 'Edit this video', { usdTicks: usd(0.64), per: 'video' })).toBe('Edit this video (about $0.64)');
  });

  it('is the title alone when there is no estimate, or when the two would pass the 45 characters Discord allows', () => {
    expect(formTitle(ENGLISH, 'Animate this image', undefined)).toBe('Animate this image');
    const title = formTitle(ENGLISH, 'Animate this image', { usdTicks: usd(12_345.67), per: 'second' });
    expect(title).toBe('Animate this image');
    for (const [base, per] of [
      ['Animate this image', 'second'],
      ['Extend this video', 'second'],
      ['Edit this video', 'video'],
    ] as const)
      expect(formTitle(ENGLISH, base, { usdTicks: usd(99.99), per }).length).toBeLessThanOrEqual(MAX_FORM_TITLE_LENGTH);
  });
});

describe('the question of a video over the confirmation threshold', () => {
  const plan = { operation: 'generate' as const, estimateUsdTicks: usd(2.1), confirmOverUsdTicks: usd(2) };
  const expiresAt = Date.UTC(2025, 0, 1, 12, 15);

  it('asks for the operation at its estimate, names the threshold, and says when it expires', () => {
    expect(describeConfirmation(ENGLISH, plan, expiresAt)).toBe(
      `**Generate for about $2.10?**\nThis server asks before a video estimated over $2.00 is made. Nothing is sent until you press **Generate**; this question expires <t:${expiresAt / 1000}:R>.`,
    );
  });

  it('names what each way of making a video does', () => {
    expect(confirmVerb(ENGLISH, { operation: 'generate' })).toBe('Generate');
    expect(confirmVerb(ENGLISH, { operation: 'edit' })).toBe('Edit');
    expect(confirmVerb(ENGLISH, { operation: 'extend' })).toBe('Extend');
    expect(confirmVerb(ENGLISH, { operation: 'extend', regenerated: true })).toBe('Regenerate');
    expect(describeConfirmation(ENGLISH, { ...plan, operation: 'edit' }, expiresAt)).toMatch(/^\*\*Edit for about \$2\.10\?\*\*/);
  });

  it('says how it ended: sent, cancelled or expired, the last two with nothing sent', () => {
    expect(describeConfirmationClosed(ENGLISH, plan, 'confirmed')).toBe(
      '**Generate** pressed: sent for about $2.10. Its card is in the channel.',
    );
    expect(describeConfirmationClosed(ENGLISH, plan, 'cancelled')).toContain('nothing was sent');
    expect(describeConfirmationClosed(ENGLISH, plan, 'expired')).toContain('expired unanswered: nothing was sent');
  });
});
