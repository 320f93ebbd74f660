import type { ChatInputCommandInteraction } from 'discord.js';
import { answerPrivately } from '../discord/answer.ts';
import { isServerManager } from '../discord/member.ts';
import type { Services } from '../services.ts';
import { CHART_FILENAME, formatUsage, usageChart, usageTable } from '../settings/usage-report.ts';
import { memberLocale } from './requirements.ts';
import { scopeOf, userInstallUse } from './installation.ts';

/**
 * The usage report, privately: the member's own; with Manage Server the server's too, its chart, and
 * every member's usage as a CSV file (`/usage` and `/video usage` answer the same).
 */
export async function answerUsage(interaction: ChatInputCommandInteraction, services: Services): Promise<void> {
  // Through a member's own install there is no server to report on: their own use of the operator's key.
  const manager = !userInstallUse(interaction) && isServerManager(interaction);
  const view = await services.settings.spending.usage(scopeOf(interaction), interaction.user.id, manager);
  const locale = memberLocale(interaction);
  // The report is what the member asked for; a chart that cannot be drawn leaves it without one, not unanswered.
  const chart = await usageChart(locale, view).catch((error: unknown) => {
    services.log.warn('usage chart not drawn', { error });
    return undefined;
  });
  // Names the bot has seen (members who used a command since it started); asking Discord for thousands would not be worth it.
  const table = usageTable(locale, view, (userId) => {
    const member = interaction.guild?.members.cache.get(userId);
    return member?.displayName ?? interaction.client.users.cache.get(userId)?.displayName;
  });
  const files = [...(chart ? [{ name: CHART_FILENAME, data: chart }] : []), ...(table ? [table] : [])];
  await answerPrivately(interaction, { content: formatUsage(locale, view), ...(files.length > 0 ? { files } : {}) });
}
