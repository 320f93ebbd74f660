import { ENGLISH, type Locale } from '../../src/i18n/index.ts';
import { word, type Notice } from '../../src/wording/notice.ts';

/**
 * An outcome as a member reads it: a refusal's notice worded (in English unless told) as `message`,
 * beside whatever else the refusal tells; a success as it is.
 */
export function worded(outcome: { ok: boolean; notice?: Notice }, locale: Locale = ENGLISH): Record<string, unknown> {
  if (!outcome.notice) return { ...outcome };
  const { notice, ...rest } = outcome;
  return { ...rest, message: word(locale, notice) };
}
