import { formatDate, formatDuration, t, type Locale, type Translate, translator } from '../i18n/index.ts';
import { formatCostIn } from '../wording/cost.ts';
import { describeBudget } from './budgets.ts';
import { SpendChartDrawer } from './spend-chart-drawer.ts';
import { discordRelativeTime } from './limits.ts';
import type { UsageView } from './spending.ts';
import { spentTicks, totalUsage, type UsageCount } from './usage.ts';
import type { UserInstallRoom } from './user-installs.ts';

// `/usage` (and `/video usage`) in words, in the member's language: a member's own day and month, what is
// left of each budget, and for server managers every member's and a chart of the last 30 days. What the
// gateway reported and what the bot estimated are told apart wherever they are shown.

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
  if (count.costUnreported === 0 || count.costTicks > 0)
    video = say('usage.and', { first: video, second: formatCostIn(locale, count.costTicks) });
  if (count.costUnreported > 0) {
    const estimated = say('usage.estimated', { amount: formatCostIn(locale, count.estimatedTicks), count: count.costUnreported });
    video =
      count.costTicks > 0 ? say('usage.plus', { first: video, second: estimated }) : say('usage.and', { first: video, second: estimated });
  }
  if (count.reservedTicks > 0)
    video = say('usage.and', { first: video, second: say('usage.reserved', { amount: formatCostIn(locale, count.reservedTicks) }) });
  const voice =
    count.voiceMs > 0
      ? say('usage.voice', {
          time: formatDuration(locale, count.voiceMs / MS_PER_SECOND, 'short'),
          amount: formatCostIn(locale, count.voiceTicks),
        })
      : say('usage.no-voice');
  return say('usage.line', { video, voice });
}

function serverSection(locale: Locale, title: string, counts: Record<string, UsageCount>): string {
  const entries = Object.entries(counts).sort(([, a], [, b]) => spentTicks(b) - spentTicks(a) || b.tasks - a.tasks);
  const rows = entries.slice(0, REPORT_ROWS).map(([userId, count]) => `<@${userId}>: ${describeUsage(locale, count)}`);
  if (entries.length > REPORT_ROWS) rows.push(t(locale, 'usage.more-members', { count: entries.length - REPORT_ROWS }));
  return [
    `**${title}**: ${describeUsage(locale, totalUsage(counts))}`,
    ...(rows.length > 0 ? rows : [t(locale, 'usage.nothing-yet')]),
  ].join('\n');
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
                budgetName: describeBudget(locale, budget),
                left: formatCostIn(locale, budget.leftTicks),
                resets: discordRelativeTime(budget.resetsAt),
              }),
            )
            .join('; '),
        }),
  ];
  if (view.server) {
    lines.push(
      '',
      serverSection(locale, say('usage.server-today', { date: today }), view.server.today),
      '',
      serverSection(locale, say('usage.server-month', { month }), view.server.month),
    );
  }
  return lines.join('\n');
}

/** What is left of a member's own install's daily limits, the operator's (a server's budgets do not apply there). */
function userInstallLimitLines(locale: Locale, room: UserInstallRoom): string[] {
  const resets = discordRelativeTime(room.resetsAt);
  const lines = [
    ...(room.videos ? [t(locale, 'user-install.usage.videos-left', { ...room.videos, resets })] : []),
    ...(room.usd
      ? [
          t(locale, 'user-install.usage.usd-left', {
            left: formatCostIn(locale, room.usd.leftTicks),
            amount: formatCostIn(locale, room.usd.limitTicks),
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
