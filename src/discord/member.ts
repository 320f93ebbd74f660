import { PermissionFlagsBits, type Interaction } from 'discord.js';

/** The caller's role ids, whether discord.js has the member cached or only the raw payload. */
export function memberRoleIds(interaction: Interaction): string[] {
  const member = interaction.member;
  if (!member) return [];
  return Array.isArray(member.roles) ? member.roles : [...member.roles.cache.keys()];
}

/** Manage Server: what admin commands require (checked again here, whatever the server overrides). */
export function isServerManager(interaction: Interaction): boolean {
  return interaction.memberPermissions?.has(PermissionFlagsBits.ManageGuild) === true;
}
