import type { GatewayError, ValidationError } from '../gateway/errors.ts';
import {
  formatDate,
  formatDuration,
  formatList,
  formatNumber,
  formatRelativeTime,
  languageName,
  tChosenKey,
  type Locale,
  type MessageKey,
  type MessageValues,
} from '../i18n/index.ts';
import type { MessagePlaceholders } from '../i18n/message-values.ts';
import { formatCostIn, formatEstimateIn } from './cost.ts';
import { describeGatewayError, withRequestId, type GatewayErrorContext } from './gateway-errors.ts';
import { describeValidationError } from './validation.ts';

// The parts decide, the edge words it: what a part tells a member (a refusal, a notice, a line of a card)
// is data, a catalog key and the values of its placeholders, and only the code that answers the member
// (the interaction layer, or a renderer whose job is words: the card, the chart, the usage report, what the
// bot says aloud) turns it into a sentence, in the reader's language, through word(). So no part takes a
// locale, and a value that needs the reader's language (an amount, a length of time, a list, another
// message) travels as a Phrase, formatted as the notice is worded.

/** A value worded in the reader's language as the notice that holds it is worded. */
export type Phrase =
  | Notice
  | { phrase: 'cost'; usdTicks: number }
  | { phrase: 'estimate'; usdTicks: number }
  | { phrase: 'duration'; seconds: number; unitDisplay?: 'long' | 'short' | 'narrow' }
  | { phrase: 'date'; when: Date | number; options?: Intl.DateTimeFormatOptions }
  | { phrase: 'number'; value: number; options?: Intl.NumberFormatOptions }
  | { phrase: 'relative-time'; value: number; unit: Intl.RelativeTimeFormatUnit }
  | { phrase: 'list'; items: readonly (string | Phrase)[]; type?: 'conjunction' | 'disjunction' }
  | { phrase: 'language'; tag: string }
  | { phrase: 'gateway-error'; error: GatewayError; context: GatewayErrorContext }
  | { phrase: 'with-request-id'; text: string | Phrase; requestId: string | undefined }
  | { phrase: 'validation-error'; error: ValidationError };

/** A placeholder's value in a notice: what t() takes, or, where t() takes text, a Phrase worded first. */
type NoticeValue<V> = string extends V ? V | Phrase : V;

/** What a notice of `K` carries: each of its placeholders' values (nothing when it has none). */
export type NoticeValues<K extends MessageKey> = MessagePlaceholders[K] extends undefined
  ? undefined
  : { readonly [P in keyof MessagePlaceholders[K]]: NoticeValue<MessagePlaceholders[K][P]> };

/**
 * Something to tell a member, as data: the message (a catalog key, so a code the tests and the logs can
 * name) and its values. One variant per key, so `notice.key === 'x'` narrows its values.
 */
export type Notice<K extends MessageKey = MessageKey> = K extends MessageKey
  ? { readonly key: K; readonly values: NoticeValues<K> }
  : never;

/** The notices whose keys start with `prefix`: a part's own union (`NoticeOf<'video.'>`). */
export type NoticeOf<Prefix extends string> = Notice<Extract<MessageKey, `${Prefix}${string}`>>;

/** The arguments after a key: its values, or nothing for a message without placeholders. */
export type NoticeArguments<K extends MessageKey> = MessagePlaceholders[K] extends undefined ? [] : [values: NoticeValues<K>];

/** The notice of `key` with its placeholders' values. */
export function notice<K extends MessageKey>(key: K, ...values: NoticeArguments<K>): Notice<K> {
  return { key, values: values[0] } as Notice<K>;
}

/** Whether a value is a notice (a nested message) rather than another phrase. */
function isNotice(value: Phrase): value is Notice {
  return 'key' in value;
}

/** A phrase as text in `locale`. */
function wordPhrase(locale: Locale, value: Phrase): string {
  if (isNotice(value)) return word(locale, value);
  switch (value.phrase) {
    case 'cost':
      return formatCostIn(locale, value.usdTicks);
    case 'estimate':
      return formatEstimateIn(locale, value.usdTicks);
    case 'duration':
      return formatDuration(locale, value.seconds, value.unitDisplay);
    case 'date':
      return formatDate(locale, value.when, value.options);
    case 'number':
      return formatNumber(locale, value.value, value.options);
    case 'relative-time':
      return formatRelativeTime(locale, value.value, value.unit);
    case 'list':
      return formatList(
        locale,
        value.items.map((item) => (typeof item === 'string' ? item : wordPhrase(locale, item))),
        value.type,
      );
    case 'language':
      return languageName(locale, value.tag);
    case 'gateway-error':
      return describeGatewayError(locale, value.error, value.context);
    case 'with-request-id':
      return withRequestId(locale, typeof value.text === 'string' ? value.text : wordPhrase(locale, value.text), value.requestId);
    case 'validation-error':
      return describeValidationError(locale, value.error);
  }
}

/** A notice as a sentence in `locale`: its phrases worded, then its message. */
export function word(locale: Locale, told: Notice): string {
  const values: Record<string, string | number | Date> = {};
  for (const [name, value] of Object.entries((told.values ?? {}) as Record<string, string | number | Date | Phrase>)) {
    values[name] = typeof value === 'object' && !(value instanceof Date) ? wordPhrase(locale, value) : value;
  }
  return tChosenKey(locale, told.key, values satisfies MessageValues);
}

/** A refusal as the parts return it: why, as a notice the edge words. */
export interface Refusal<N extends Notice = Notice> {
  ok: false;
  notice: N;
}

/** What an attempt came to: it worked (with what it gives), or why not as a notice; `Why` adds what a refusal tells besides. */
export type Outcome<T extends object = object, Why extends object = object, N extends Notice = Notice> =
  ({ ok: true } & T) | (Refusal<N> & Why);

/** A refusal for `key` with its values. */
export function refuse<K extends MessageKey>(key: K, ...values: NoticeArguments<K>): Refusal<Notice<K>> {
  return { ok: false, notice: notice(key, ...values) };
}
