import { describe, expect, it } from 'vitest';
import { ENGLISH, SUPPORTED_LOCALES, t } from '../../src/i18n/index.ts';
import { BUDGET_NAMES } from '../../src/settings/guild-settings.ts';
import type { UsageView } from '../../src/settings/spending.ts';
import type { UsageCount } from '../../src/settings/usage.ts';
import { formatUsage, usageTable } from '../../src/settings/usage-report.ts';

// A manager's /usage at its worst: 2,000 members who each used everything (reported and unreported
// videos, reservations, voice), every budget set, names of 2,000 characters that a spreadsheet would
// misread, in every language. The message must fit Discord's 2,000 characters; the file holds everyone.

const NOW = Date.UTC(2026, 10, 29, 18, 30);
const MEMBERS = 2_000;
const TICKS_PER_CENT = 100_000_000;
const COLUMNS = 14;

/** Member ids as Discord makes them (19 digits), the first the biggest spender. */
const memberId = (index: number) => String(1_234_567_890_123_456_789n + BigInt(index));

function busy(index: number): UsageCount {
  const cents = MEMBERS - index;
  return {
    tasks: 1_000 + index,
    costUsdTicks: cents * 1_000 * TICKS_PER_CENT,
    costUnreported: 999,
    estimatedUsdTicks: 999_999 * TICKS_PER_CENT,
    reservedUsdTicks: 123_456 * TICKS_PER_CENT,
    voiceMs: 99 * 3_600_000,
    voiceUsdTicks: 777_777 * TICKS_PER_CENT,
  };
}

function worstView(): UsageView {
  const everyone = Object.fromEntries(Array.from({ length: MEMBERS }, (_, index) => [memberId(index), busy(index)]));
  return {
    now: NOW,
    member: { today: busy(0), month: busy(0) },
    budgets: BUDGET_NAMES.map((budget) => ({ budget, limitUsdTicks: 10 ** 15, leftUsdTicks: 10 ** 14, resetsAt: NOW + 3_600_000 })),
    server: { today: everyone, month: everyone, days: [] },
  };
}

/** A name a member could choose, and worse: commas, quotes, a line break, a formula, emoji with skin tones. */
const hostileName = (index: number) => `=HYPERLINK("x"),\n"${index}" ${'👍🏽'.repeat(500)}`;

/** RFC 4180, as a spreadsheet reads it: quoted fields may hold the separator, doubled quotes and line breaks. */
function parseCsv(text: string, separator: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let at = 0; at < text.length; at++) {
    const char = text[at]!;
    if (quoted && char === '"' && text[at + 1] === '"') {
      field += '"';
      at++;
    } else if (char === '"') {
      quoted = !quoted;
    } else if (!quoted && char === separator) {
      row.push(field);
      field = '';
    } else if (!quoted && char === '\r' && text[at + 1] === '\n') {
      rows.push([...row, field]);
      row = [];
      field = '';
      at++;
    } else {
      field += char;
    }
  }
  return rows;
}

describe('a manager’s usage report at its worst', () => {
  it.each(SUPPORTED_LOCALES)('fits Discord in %s, and its file lists every member', (locale) => {
    const view = worstView();
    const content = formatUsage(locale, view);
    expect(content.length).toBeLessThanOrEqual(2000);
    // The summary stays: the member's own lines, every budget, both periods' totals.
    expect(content.split('\n').slice(0, 3).join('\n')).toBe(formatUsage(locale, { ...view, server: undefined }));
    const shown = content.match(/<@\d+>/g) ?? [];
    expect(shown.length).toBeGreaterThan(0);
    // Biggest spenders first, and the count of the rest is exact for each period.
    expect(shown[0]).toBe(`<@${memberId(0)}>`);
    const [todayPart, monthPart] = content.split('\n\n').slice(1);
    for (const part of [todayPart!, monthPart!]) {
      const rows = part.match(/<@\d+>/g)?.length ?? 0;
      expect(part.split('\n').at(-1)).toBe(
        t(locale, 'usage.more-members-in-file', { count: MEMBERS - rows, file: 'usage-2026-11-29.csv' }),
      );
    }

    const table = usageTable(locale, view, (userId) => hostileName(Number(BigInt(userId) - BigInt(memberId(0)))));
    expect(table?.name).toBe('usage-2026-11-29.csv');
    const text = table!.data.toString('utf8');
    expect(text.startsWith('\uFEFF')).toBe(true);
    // A spreadsheet in a language that writes a decimal comma splits at semicolons and reads `1,25` as a number.
    const decimalComma = ['de', 'fr', 'es-ES', 'pt-BR'].includes(locale);
    const [header, ...rows] = parseCsv(text.slice(1), decimalComma ? ';' : ',');
    // The reader's own column names: English as written, every other language its own translation of each
    // ("Name" may be the same word).
    const english = [
      'Member ID',
      'Name',
      ...['today', 'this month'].flatMap((period) => [
        `Videos ${period}`,
        `Reported cost ${period} (USD)`,
        `Estimated cost of unreported videos ${period} (USD)`,
        `Reserved for videos in progress ${period} (USD)`,
        `Voice minutes ${period}`,
        `Estimated voice cost ${period} (USD)`,
      ]),
    ];
    expect(header).toHaveLength(COLUMNS);
    expect(new Set(header).size).toBe(COLUMNS);
    if (locale === ENGLISH) expect(header).toEqual(english);
    else expect(header!.filter((name, index) => name === english[index] && index > 1)).toEqual([]);
    expect(rows).toHaveLength(MEMBERS);
    expect(new Set(rows.map((row) => row[0]))).toEqual(new Set(Array.from({ length: MEMBERS }, (_, index) => memberId(index))));
    for (const row of rows) expect(row).toHaveLength(COLUMNS);
    const first = rows[0]!;
    expect(first[0]).toBe(memberId(0));
    // The name is cut between whole emoji, and cannot run as a formula.
    expect(first[1]!.startsWith(`'=HYPERLINK("x"),\n"0" 👍🏽`)).toBe(true);
    expect(first[1]!.length).toBeLessThanOrEqual(100);
    expect(first[1]!.endsWith('👍🏽…')).toBe(true);
    // Amounts are plain dollars, no grouping: $20,000 reported, $9,999.99 estimated, $1,234.56 reserved, 99 h of voice.
    const amounts = ['1000', '20000.0000', '9999.9900', '1234.5600', '5940.00', '7777.7700'];
    expect(first.slice(2, 8)).toEqual(decimalComma ? amounts.map((amount) => amount.replace('.', ',')) : amounts);
    expect(first.slice(8)).toEqual(first.slice(2, 8));
  });

  it('attaches no file when no member used anything, and none for a member’s own report', () => {
    const view = worstView();
    expect(usageTable(ENGLISH, { ...view, server: { today: {}, month: {}, days: [] } }, () => undefined)).toBeUndefined();
    expect(usageTable(ENGLISH, { ...view, server: undefined }, () => undefined)).toBeUndefined();
  });
});
