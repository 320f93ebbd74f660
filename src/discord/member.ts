import { PermissionFlagsBits, type Interaction } from 'discord.js';
import { readRecord, readString } from '../lib/json.ts';

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

/**
 * A member who left a server (or was kicked), from a raw gateway packet: GUILD_MEMBER_REMOVE `{ guild_id,
 * user }`. Read raw because discord.js emits guildMemberRemove only for members it has cached, and without
 * the members' list (never fetched) most are not.
 */
export function memberLeft(packet: unknown): { guildId: string; userId: string } | undefined {
  if (readString(packet, 't') !== 'GUILD_MEMBER_REMOVE') return undefined;
  const data = readRecord(packet, 'd');
  const guildId = readString(data, 'guild_id');
  const userId = readString(readRecord(data, 'user'), 'id');
  return guildId === undefined || userId === undefined ? undefined : { guildId, userId };
}
