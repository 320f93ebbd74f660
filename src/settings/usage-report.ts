import { MESSAGE_LIMITS } from '../discord/message-limits.ts';
import { USD_TICKS } from '../gateway/spec.ts';
import { formatDate, formatDuration, formatNumber, t, type Locale, type Translate, translator } from '../i18n/index.ts';
import { shorten } from '../lib/text.ts';
import { formatCostIn } from '../wording/cost.ts';
import { budgetName } from './budgets.ts';
import { word } from '../wording/notice.ts';
import { SpendChartDrawer } from './spend-chart-drawer.ts';
import { discordRelativeTime } from './limits.ts';
import type { UsageView } from './spending.ts';
import { noUsage, spentUsdTicks, totalUsage, type UsageCount } from './usage.ts';
import type { UserInstallRoom } from './user-installs.ts';

// `/usage` (and `/video usage`) in words, in the member's language: a member's own day and month, what is
// left of each budget, and for server managers every member's and a chart of the last 30 days. What the
// gateway reported and what the bot estimated are told apart wherever they are shown. A manager's message
// lists the biggest spenders as far as Discord's 2,000 characters allow (20 at most for each period) and
// says how many more there are; the whole table, every member today and this month, comes as a CSV file.

const REPORT_ROWS = 20;
export const CHART_FILENAME = 'spend-last-30-days.png';
const MS_PER_SECOND = 1000;

/** The UTC day of `at` as the locale writes a date: `Nov 17, 2026`, `17.11.2026`. */
function dayWords(locale: Locale, at: number): string {
  return formatDate(locale, at, { dateStyle: 'medium' });
}

/** The UTC month of `at`: `November 2026`, `novembre 2026`. */
function monthWords(locale: Locale, at: number): string {
  return formatDate(locale, at, { year: 'numeric', month: 'long' });
}

/** "3 videos, $1.20 + about $0.40 estimated (1 without a reported cost); voice 12 min, about $0.60 (estimated)". */
export function describeUsage(locale: Locale, count: UsageCount): string {
  const say: Translate = translator(locale);
  let video = say('usage.videos', { count: count.tasks });
  if (count.costUnreported === 0 || count.costUsdTicks > 0)
    video = say('usage.and', { first: video, second: formatCostIn(locale, count.costUsdTicks) });
  if (count.costUnreported > 0) {
    const estimated = say('usage.estimated', { amount: formatCostIn(locale, count.estimatedUsdTicks), count: count.costUnreported });
    video =
      count.costUsdTicks > 0
        ? say('usage.plus', { first: video, second: estimated })
        : say('usage.and', { first: video, second: estimated });
  }
  if (count.reservedUsdTicks > 0)
    video = say('usage.and', { first: video, second: say('usage.reserved', { amount: formatCostIn(locale, count.reservedUsdTicks) }) });
  const voice =
    count.voiceMs > 0
      ? say('usage.voice', {
          time: formatDuration(locale, count.voiceMs / MS_PER_SECOND, 'short'),
          amount: formatCostIn(locale, count.voiceUsdTicks),
        })
      : say('usage.no-voice');
  return say('usage.line', { video, voice });
}

function bySpend(counts: Record<string, UsageCount>): [string, UsageCount][] {
  return Object.entries(counts).sort(([, a], [, b]) => spentUsdTicks(b) - spentUsdTicks(a) || b.tasks - a.tasks);
}

/**
 * A period's total and its biggest spenders, as many as fit in `room` characters (REPORT_ROWS at most),
 * then how many more there are and where they all are.
 */
function serverSection(locale: Locale, title: string, counts: Record<string, UsageCount>, file: string, room: number): string {
  const entries = bySpend(counts);
  const lines = [`**${title}**: ${describeUsage(locale, totalUsage(counts))}`];
  if (entries.length === 0) return [...lines, t(locale, 'usage.nothing-yet')].join('\n');
  const more = (shown: number) =>
    shown < entries.length ? [t(locale, 'usage.more-members-in-file', { count: entries.length - shown, file })] : [];
  const length = (texts: string[]) => texts.join('\n').length;
  for (const [userId, count] of entries.slice(0, REPORT_ROWS)) {
    const row = `<@${userId}>: ${describeUsage(locale, count)}`;
    if (length([...lines, row, ...more(lines.length)]) > room) break;
    lines.push(row);
  }
  return [...lines, ...more(lines.length - 1)].join('\n');
}

/** The report's text in the member's language: their own usage and budgets, then the server's when the view has it. */
export function formatUsage(locale: Locale, view: UsageView): string {
  const say = translator(locale);
  const today = dayWords(locale, view.now);
  const month = monthWords(locale, view.now);
  const own = [
    say('usage.own-today', { date: today, usage: describeUsage(locale, view.member.today) }),
    say('usage.own-month', { month, usage: describeUsage(locale, view.member.month) }),
  ];
  if (view.userInstall) return [say('user-install.usage.title'), ...own, ...userInstallLimitLines(locale, view.userInstall)].join('\n');
  const lines = [
    ...own,
    view.budgets.length === 0
      ? say('usage.budgets-none')
      : say('usage.budgets', {
          budgets: view.budgets
            .map((budget) =>
              say('usage.budget-left', {
                budgetName: word(locale, budgetName(budget)),
                left: formatCostIn(locale, budget.leftUsdTicks),
                resets: discordRelativeTime(budget.resetsAt),
              }),
            )
            .join('; '),
        }),
  ];
  if (!view.server) return lines.join('\n');
  // Today's members may take half of what is left, this month's the rest: both periods show their top.
  const file = usageTableFilename(view.now);
  const left = MESSAGE_LIMITS.content - lines.join('\n').length - '\n\n'.length * 2;
  const todayPart = serverSection(locale, say('usage.server-today', { date: today }), view.server.today, file, Math.floor(left / 2));
  const monthPart = serverSection(locale, say('usage.server-month', { month }), view.server.month, file, left - todayPart.length);
  // Only the member's own lines and budgets are left unbounded; they are few and short, but never more than Discord takes.
  return shorten([...lines, '', todayPart, '', monthPart].join('\n'), MESSAGE_LIMITS.content);
}

/** The name of a manager's CSV of every member's usage: `usage-2026-11-29.csv` (the UTC day of the report). */
export function usageTableFilename(now: number): string {
  return `usage-${new Date(now).toISOString().slice(0, 'YYYY-MM-DD'.length)}.csv`;
}

const MS_PER_MINUTE = 60_000;
/** A member's display name in the table is at most this long (Discord's own are 32). */
const TABLE_NAME_LENGTH = 100;
/** Excel reads a CSV as UTF-8 (accented headers, names in any script) only when it starts with a byte order mark. */
const BYTE_ORDER_MARK = '\uFEFF';

/**
 * How a spreadsheet in the reader's language reads a CSV: where numbers are written with a decimal comma
 * (de, fr, es, pt-BR…), Excel and LibreOffice split fields at semicolons and read `1,25` as a number, so
 * such a reader's file uses both; elsewhere, commas and `1.25`.
 */
interface CsvDialect {
  separator: ',' | ';';
  decimal: '.' | ',';
}

function csvDialect(locale: Locale): CsvDialect {
  const decimal = formatNumber(locale, 1.5).includes(',') ? ',' : '.';
  return decimal === ',' ? { separator: ';', decimal } : { separator: ',', decimal };
}

/** A plain number (no grouping, so a spreadsheet reads it as one) with `digits` decimals, in the dialect's decimal mark. */
function plainNumber(value: number, digits: number, dialect: CsvDialect): string {
  return value.toFixed(digits).replace('.', dialect.decimal);
}

/**
 * One CSV field (RFC 4180: quoted when it holds the separator, a quote or a line break); text that a
 * spreadsheet would run as a formula (`=`, `+`, `-`, `@` first: a display name is anyone's) is led by an
 * apostrophe.
 */
function csvField(value: string, dialect: CsvDialect): string {
  const inert = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /["\r\n]/.test(inert) || inert.includes(dialect.separator) ? `"${inert.replaceAll('"', '""')}"` : inert;
}

/**
 * The manager's whole table as a CSV file in the reader's language, one row per member who used anything
 * this month (today included), biggest spenders of the month first: member id, display name when the bot
 * knows it (`nameOf`; no mention), then for today and for this month the videos, their
 * reported cost, the estimate of those whose cost was not reported, what is reserved for videos in
 * progress, voice minutes and voice's estimated cost. Amounts are US dollars as plain numbers (`1.2500`, or
 * `1,2500` separated by semicolons for a reader whose language writes a decimal comma).
 * Undefined for a view without the server's usage, or when no member used anything this month.
 */
export function usageTable(
  locale: Locale,
  view: UsageView,
  nameOf: (userId: string) => string | undefined,
): { name: string; data: Buffer } | undefined {
  if (!view.server) return undefined;
  const { today, month } = view.server;
  const periods = ['day', 'month'] as const;
  const header = [
    t(locale, 'usage.csv.member-id'),
    t(locale, 'usage.csv.member-name'),
    ...periods.flatMap((period) =>
      (
        [
          'usage.csv.videos',
          'usage.csv.cost',
          'usage.csv.estimated',
          'usage.csv.reserved',
          'usage.csv.voice-minutes',
          'usage.csv.voice-cost',
        ] as const
      ).map((key) => t(locale, key, { period })),
    ),
  ];
  const members = new Map(bySpend(month));
  for (const [userId, count] of bySpend(today)) if (!members.has(userId)) members.set(userId, count);
  if (members.size === 0) return undefined;
  const dialect = csvDialect(locale);
  const dollars = (usdTicks: number) => plainNumber(usdTicks / USD_TICKS, 4, dialect);
  const columns = (count: UsageCount) => [
    String(count.tasks),
    dollars(count.costUsdTicks),
    dollars(count.estimatedUsdTicks),
    dollars(count.reservedUsdTicks),
    plainNumber(count.voiceMs / MS_PER_MINUTE, 2, dialect),
    dollars(count.voiceUsdTicks),
  ];
  const rows = [...members.keys()].map((userId) => [
    userId,
    shorten(nameOf(userId) ?? '', TABLE_NAME_LENGTH),
    ...columns(today[userId] ?? noUsage()),
    ...columns(month[userId] ?? noUsage()),
  ]);
  const text = [header, ...rows].map((row) => row.map((field) => csvField(field, dialect)).join(dialect.separator)).join('\r\n');
  return { name: usageTableFilename(view.now), data: Buffer.from(`${BYTE_ORDER_MARK}${text}\r\n`, 'utf8') };
}

/** What is left of a member's own install's daily limits, the operator's (a server's budgets do not apply there). */
function userInstallLimitLines(locale: Locale, room: UserInstallRoom): string[] {
  const resets = discordRelativeTime(room.resetsAt);
  const lines = [
    ...(room.videos ? [t(locale, 'user-install.usage.videos-left', { ...room.videos, resets })] : []),
    ...(room.usd
      ? [
          t(locale, 'user-install.usage.usd-left', {
            left: formatCostIn(locale, room.usd.leftUsdTicks),
            amount: formatCostIn(locale, room.usd.limitUsdTicks),
            resets,
          }),
        ]
      : []),
  ];
  return lines.length > 0 ? lines : [t(locale, 'user-install.usage.no-limits')];
}

/** One drawing thread per process, started with the first chart a manager asks for. */
const charts = new SpendChartDrawer();

/**
 * The chart of the server's last 30 days, for a view that has the server's, in the reader's language;
 * drawn off the event loop, and rejected with why when it cannot be drawn in time.
 */
export async function usageChart(locale: Locale, view: UsageView): Promise<Buffer | undefined> {
  if (!view.server) return undefined;
  return charts.draw(view.server.days, { title: t(locale, 'usage.chart.title'), locale });
}
