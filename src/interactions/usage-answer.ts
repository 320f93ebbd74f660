import type { ChatInputCommandInteraction } from 'discord.js';
import { answerPrivately } from '../discord/answer.ts';
import { isServerManager } from '../discord/member.ts';
import type { Services } from '../services.ts';
import { CHART_FILENAME, formatUsage, usageChart } from '../settings/usage-report.ts';
import { memberLocale } from './requirements.ts';
import { scopeOf, userInstallUse } from './installation.ts';

/**
 * The usage report, privately: the member's own; with Manage Server the server's too and its chart
 * (`/usage` and `/video usage` answer the same).
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
  await answerPrivately(interaction, {
    content: formatUsage(locale, view),
    ...(chart ? { files: [{ name: CHART_FILENAME, data: chart }] } : {}),
  });
}
