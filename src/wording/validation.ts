import type { ValidationError } from '../gateway/errors.ts';
import type { ValidationIssue, ValidationRule } from '../gateway/validation-issues.ts';
import { t, type Locale, type MessageKey } from '../i18n/index.ts';

// A rule of the gateway's that a request breaks (a ValidationError's issue), in the reader's language. The
// English catalog says each exactly as the gateway client's message does; a test holds the two together.

const RULE_MESSAGES = {
  'video-model': 'validation.video-model',
  text: 'validation.text',
  'prompt-required': 'validation.prompt-required',
  'image-object': 'validation.image-object',
  'url-or-file-id': 'validation.url-or-file-id',
  'image-url': 'validation.image-url',
  'file-id': 'validation.file-id',
  list: 'validation.list',
  'list-empty': 'validation.list-empty',
  'audio-object': 'validation.audio-object',
  'voice-or-url': 'validation.voice-or-url',
  'voice-id': 'validation.voice-id',
  'audio-url': 'validation.audio-url',
  'seconds-range': 'validation.seconds-range',
  alias: 'validation.alias',
  object: 'validation.object',
  'filename-required': 'validation.filename-required',
  'storage-expiry': 'validation.storage-expiry',
  boolean: 'validation.boolean',
  'upload-url': 'validation.upload-url',
  'last-frame-model': 'validation.last-frame-model',
  'image-with-references': 'validation.image-with-references',
  'reference-audio-model': 'validation.reference-audio-model',
  'too-many-audios': 'validation.too-many-audios',
  'one-of': 'validation.one-of',
  'reference-image-resolution': 'validation.reference-image-resolution',
  'full-hd': 'validation.full-hd',
  'video-required': 'validation.video-required',
  'video-url': 'validation.video-url',
  'task-id': 'validation.task-id',
  'secret-expiry': 'validation.secret-expiry',
  'stored-invalid': 'validation.stored-invalid',
  'stored-not-list': 'validation.stored-not-list',
} as const satisfies Record<ValidationRule, MessageKey>;

/** An issue's values as the catalogs take them: numbers as written (a limit of seconds is not `2,592,000`), lists joined. */
function valuesOf(issue: ValidationIssue): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(issue)) {
    if (name === 'rule') continue;
    values[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return values;
}

/** The rule the request's `field` breaks, in `locale`. */
export function describeValidationIssue(locale: Locale, field: string, issue: ValidationIssue): string {
  return t(locale, RULE_MESSAGES[issue.rule], { field, ...valuesOf(issue) });
}

/** A ValidationError as a record keeps it: its field, its rule's name and its values as the catalogs take them. */
export function storedIssue(error: ValidationError): { field: string; rule: string; values: Record<string, string> } {
  return { field: error.field, rule: error.issue.rule, values: valuesOf(error.issue) };
}

/** A rule as stored by storedIssue(), in `locale`; undefined for a rule this version does not know. */
export function describeStoredIssue(
  locale: Locale,
  stored: { field: string; rule: string; values: Record<string, string> },
): string | undefined {
  const key = Object.entries(RULE_MESSAGES).find(([rule]) => rule === stored.rule)?.[1];
  return key && t(locale, key, { field: stored.field, ...stored.values });
}

/** What a ValidationError says, in `locale`. */
export function describeValidationError(locale: Locale, error: ValidationError): string {
  return describeValidationIssue(locale, error.field, error.issue);
}
