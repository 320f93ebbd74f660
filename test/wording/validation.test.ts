import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/gateway/errors.ts';
import { validateEdit, validateExtension, validateGeneration } from '../../src/gateway/validation.ts';
import type { ValidationIssue, ValidationRule } from '../../src/gateway/validation-issues.ts';
import { ENGLISH, resolveLocale, SUPPORTED_LOCALES, t } from '../../src/i18n/index.ts';
import { describeGatewayError } from '../../src/wording/gateway-errors.ts';
import { describeValidationError, describeValidationIssue } from '../../src/wording/validation.ts';

// A rule of the gateway's a request breaks, as a member reads it: in English exactly as the gateway client
// states it (its error message), in every other language from the catalogs, never English there.

/** One issue of every rule, with the field the validation names for it. */
const EVERY_RULE: readonly [field: string, issue: ValidationIssue][] = [
  ['model', { rule: 'video-model', latest: 'svc-imagine-video-1.5', classic: 'svc-imagine-video' }],
  ['user', { rule: 'text' }],
  ['prompt', { rule: 'prompt-required', purpose: 'text_to_video' }],
  ['prompt', { rule: 'prompt-required', purpose: 'edit' }],
  ['prompt', { rule: 'prompt-required', purpose: 'extend' }],
  ['image', { rule: 'image-object' }],
  ['video', { rule: 'url-or-file-id' }],
  ['last_frame.url', { rule: 'image-url' }],
  ['video.file_id', { rule: 'file-id' }],
  ['reference_images', { rule: 'list' }],
  ['reference_audios', { rule: 'list-empty' }],
  ['reference_audios[0]', { rule: 'audio-object' }],
  ['reference_audios[1]', { rule: 'voice-or-url' }],
  ['reference_audios[0].voice_id', { rule: 'voice-id' }],
  ['reference_audios[0].url', { rule: 'audio-url' }],
  ['duration', { rule: 'seconds-range', min: 1, max: 15, meaning: 'video_length' }],
  ['seconds', { rule: 'seconds-range', min: 2, max: 10, meaning: 'added_length' }],
  ['size', { rule: 'alias', canonical: 'resolution' }],
  ['storage_options', { rule: 'object' }],
  ['storage_options.filename', { rule: 'filename-required' }],
  ['storage_options.expires_after', { rule: 'storage-expiry', max: 2_592_000 }],
  ['storage_options.public_url', { rule: 'boolean' }],
  ['output.upload_url', { rule: 'upload-url' }],
  ['last_frame', { rule: 'last-frame-model', latest: 'svc-imagine-video-1.5', model: 'svc-imagine-video' }],
  ['image', { rule: 'image-with-references', latest: 'svc-imagine-video-1.5', model: 'svc-imagine-video' }],
  ['reference_audios', { rule: 'reference-audio-model', latest: 'svc-imagine-video-1.5', classic: 'svc-imagine-video' }],
  ['reference_audios', { rule: 'too-many-audios', max: 3, count: 4 }],
  ['aspect_ratio', { rule: 'one-of', allowed: ['16:9', '9:16', '1:1'] }],
  ['resolution', { rule: 'reference-image-resolution', max: '720p' }],
  ['resolution', { rule: 'full-hd', latest: 'svc-imagine-video-1.5' }],
  ['video', { rule: 'video-required' }],
  ['video.url', { rule: 'video-url' }],
  ['id', { rule: 'task-id' }],
  ['expires_after.seconds', { rule: 'secret-expiry', max: 3600 }],
  ['image', { rule: 'stored-invalid' }],
  ['reference_audios', { rule: 'stored-invalid' }],
  ['storage_options', { rule: 'stored-invalid' }],
  ['reference_images', { rule: 'stored-not-list' }],
];

const TRANSLATED = SUPPORTED_LOCALES.filter((locale) => locale !== ENGLISH);

/** What the validation throws for `request`. */
function refusalOf(validate: () => void): ValidationError {
  try {
    validate();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('the request was not refused');
}

describe('a broken rule of the gateway in words', () => {
  it('covers every rule', () => {
    const covered = new Set<ValidationRule>(EVERY_RULE.map(([, issue]) => issue.rule));
    expect(covered.size).toBe(33);
  });

  it.each(EVERY_RULE)('says %s in English exactly as the gateway client does', (field, issue) => {
    expect(describeValidationIssue(ENGLISH, field, issue)).toBe(new ValidationError(field, issue).message);
  });

  it.each(EVERY_RULE)('says %s in every other language, in its own words', (field, issue) => {
    const english = describeValidationIssue(ENGLISH, field, issue);
    for (const locale of TRANSLATED) {
      const translated = describeValidationIssue(locale, field, issue);
      expect(translated, locale).not.toBe(english);
      // The field and the values the member must act on are kept as written.
      // (A task id's field is not named: `id` is only a word of its English.)
      if (english.includes(field) && issue.rule !== 'task-id') expect(translated, locale).toContain(field);
      if ('max' in issue) expect(translated, locale).toContain(String(issue.max));
      if ('latest' in issue) expect(translated, locale).toContain(issue.latest);
    }
  });

  it('words what the validation finds, with the option to fix, in the reader language', () => {
    const french = resolveLocale('fr', undefined, 'member');
    const generation = refusalOf(() =>
      validateGeneration({ model: 'svc-imagine-video', prompt: 'a cat', duration: 40 }, { layer: 'compat' }),
    );
    expect(describeValidationError(french, generation)).toBe(
      'duration doit être un nombre entier de secondes de 1 à 15 (la durée de la vidéo).',
    );
    const edit = refusalOf(() => validateEdit({ model: 'svc-imagine-video', prompt: 'x', video: {} }, { layer: 'compat' }));
    expect(describeValidationError(resolveLocale('ja', undefined, 'member'), edit)).toBe(
      t(resolveLocale('ja', undefined, 'member'), 'validation.url-or-file-id', { field: 'video' }),
    );
    const extension = refusalOf(() =>
      validateExtension(
        { model: 'svc-imagine-video', prompt: ' ', video: { url: 'https://example.com/a.mp4' } },
        {
          layer: 'native',
        },
      ),
    );
    const german = resolveLocale('de', undefined, 'member');
    expect(describeGatewayError(german, extension, { key: 'in-use', purpose: 'use-model', option: 'prompt' })).toBe(
      t(german, 'gateway-error.invalid', {
        option: '`prompt`',
        named: 'yes',
        message: 'prompt ist nötig, um zu beschreiben, wie das Video weitergeht.',
      }),
    );
  });
});
