import { ENGLISH } from '../i18n/index.ts';
import { dayKey } from '../lib/day-key.ts';
import { describeBudget } from './budgets.ts';
import { formatCost } from '../wording/cost.ts';
import { discordRelativeTime, videos } from './limits.ts';
import type { UsageView } from './spending.ts';
import { renderSpendChart } from './usage-chart.ts';
import { spentTicks, totalUsage, type UsageCount } from './usage.ts';

// `/usage` (and `/video usage`) in words: a member's own day and month, what is left of each budget,
// and for server managers every member's and a chart of the last 30 days. What the gateway reported
// and what the bot estimated are told apart wherever they are shown.

const REPORT_ROWS = 20;
export const CHART_FILENAME = 'spend-last-30-days.png';

/** "12 min 30 s", "45 s": voice session time. */
export function describeVoiceTime(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`;
}

/** "3 videos, $1.20 + about $0.40 estimated (1 without a reported cost); voice 12 min, about $0.60 (estimated)". */
export function describeUsage(count: UsageCount): string {
  let video = videos(count.tasks);
  if (count.costUnreported === 0 || count.costTicks > 0) video += `, ${formatCost(count.costTicks)}`;
  if (count.costUnreported > 0) {
    const estimated = `about ${formatCost(count.estimatedTicks)} estimated (${count.costUnreported} without a reported cost)`;
    video += count.costTicks > 0 ? ` + ${estimated}` : `, ${estimated}`;
  }
  if (count.reservedTicks > 0) video += `, ${formatCost(count.reservedTicks)} reserved for videos in progress`;
  const voice =
    count.voiceMs > 0 ? `voice ${describeVoiceTime(count.voiceMs)}, about ${formatCost(count.voiceTicks)} (estimated)` : 'no voice';
  return `${video}; ${voice}`;
}

function serverSection(title: string, counts: Record<string, UsageCount>): string {
  const entries = Object.entries(counts).sort(([, a], [, b]) => spentTicks(b) - spentTicks(a) || b.tasks - a.tasks);
  const rows = entries.slice(0, REPORT_ROWS).map(([userId, count]) => `<@${userId}>: ${describeUsage(count)}`);
  if (entries.length > REPORT_ROWS) rows.push(`…and ${entries.length - REPORT_ROWS} more members`);
  return [`**${title}**: ${describeUsage(totalUsage(counts))}`, ...(rows.length > 0 ? rows : ['nothing yet'])].join('\n');
}

/** The report's text: the member's own usage and budgets, then the server's when the view has it. */
export function formatUsage(view: UsageView): string {
  const today = dayKey(view.now);
  const month = today.slice(0, 7);
  const lines = [
    `**Your usage today** (${today} UTC): ${describeUsage(view.member.today)}`,
    `**Your usage this month** (${month}): ${describeUsage(view.member.month)}`,
    view.budgets.length === 0
      ? '**Budgets:** none set on this server.'
      : `**Budgets:** ${view.budgets
          .map(
            (budget) =>
              `${describeBudget(ENGLISH, budget)}: ${formatCost(budget.leftTicks)} left, starts over ${discordRelativeTime(budget.resetsAt)}`,
          )
          .join('; ')}`,
  ];
  if (view.server) {
    lines.push(
      '',
      serverSection(`Server today (${today} UTC)`, view.server.today),
      '',
      serverSection(`Server this month (${month})`, view.server.month),
    );
  }
  return lines.join('\n');
}

/** The chart of the server's last 30 days, for a view that has the server's. */
export function usageChart(view: UsageView): Buffer | undefined {
  if (!view.server) return undefined;
  return renderSpendChart(view.server.days, { title: 'Spend per day, last 30 days (UTC)' });
}
