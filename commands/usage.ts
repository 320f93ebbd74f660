import { InteractionContextType, SlashCommandBuilder, type ChatInputCommandInteraction } from 'discord.js';
import { answerUsage } from '../src/interactions/usage-answer.ts';
import type { Command } from '../src/interactions/command.ts';
import { localized } from '../src/i18n/commands.ts';
import type { Requirement } from '../src/interactions/requirements.ts';
import type { Services } from '../src/services.ts';

// /usage: what the member spent of the server's key today and this month, video and voice, and what is
// left of each budget; with Manage Server, every member's and a chart of the server's last 30 days.

const data = localized(new SlashCommandBuilder().setName('usage'), 'command.usage').setContexts(InteractionContextType.Guild);

function requires(): Requirement {
  return { inServer: true };
}

async function execute(interaction: ChatInputCommandInteraction, services: Services) {
  await answerUsage(interaction, services);
}

/** A member's own install has its own report: what they made through it on the operator's key. */
function userInstall(): boolean {
  return true;
}

export default { data, requires, userInstall, execute } satisfies Command;
