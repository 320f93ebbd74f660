import { describe, expect, it } from 'vitest';
import { brokenModalLimit } from '../../../src/discord/message-limits.ts';
import { USD_TICKS } from '../../../src/gateway/spec.ts';
import { SUPPORTED_LOCALES, type MessageKey } from '../../../src/i18n/index.ts';
import { MAX_VARIANTS } from '../../../src/ports/video-defaults.ts';
import { SECONDS_TO_ADD, videoForm } from '../../../src/interactions/video/video-form.ts';

// Every video form, in every language, at its fullest (a price in its title, seconds, variants and two
// uploads), within what Discord takes of a form: discord.js throws on a title over 45 characters before
// the form is even sent, and Discord refuses a label over 45, so a member would read "Something went wrong".

const TITLES: readonly MessageKey[] = [
  'video.form.animate-title',
  'video.form.extend-this-title',
  'video.form.edit-this-title',
  'video.form.extend-title',
  'video.form.edit-title',
  'video.form.change-title',
];

describe('a video form at its fullest', () => {
  it.each(SUPPORTED_LOCALES)('stays within Discord’s form limits in %s', (locale) => {
    for (const title of TITLES) {
      for (const estimate of [
        undefined,
        { usdTicks: 1_234.56 * USD_TICKS, per: 'second' as const },
        { usdTicks: 0.04 * USD_TICKS, per: 'video' as const },
      ]) {
        const form = videoForm(locale, {
          id: 'form',
          title,
          estimate,
          seconds: { ...SECONDS_TO_ADD, serverDefault: true },
          prefill: { prompt: 'p'.repeat(4000), seconds: 10 },
          variants: { chosen: MAX_VARIANTS },
          uploads: [
            { id: 'first', label: 'video.form.new-first-frame', description: 'video.form.new-first-frame.description', required: false },
            { id: 'last', label: 'video.form.last-frame', description: 'video.form.last-frame.description', required: false },
          ],
        });
        expect(brokenModalLimit(form.toJSON()), `${title} in ${locale}`).toBeUndefined();
      }
    }
  });
});
