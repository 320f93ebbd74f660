import { PermissionFlagsBits, type Guild, type GuildMember } from 'discord.js';
import type { Logger } from '../lib/log.ts';
import type { VoiceCaller, VoiceMember, VoiceVideoRequests } from '../ports/voice-video.ts';
import type { VoiceFunctionCall } from './session-options.ts';
import { runToolCall } from './tools.ts';

/**
 * A tool call runs as the member who spoke most of the turn, with their roles and permissions, and only
 * as far as every other member who spoke it may go (the video part checks them all); without the video
 * part, no tool is there.
 */
export async function runVoiceToolCall(
  requests: VoiceVideoRequests | undefined,
  guild: Guild,
  textChannelId: string,
  call: VoiceFunctionCall,
  log: Logger,
): Promise<string> {
  if (!requests) return JSON.stringify({ status: 'not_done', message: 'No tools are available here.' });
  return runToolCall(requests, await callerOf(guild, textChannelId, call.speakerIds, log), call.name, call.arguments);
}

/**
 * The turn's members as the video part sees a call's caller; undefined when nobody was heard, or when
 * one of them cannot be looked up: what they may do is unknown, so the call is not run for the others.
 */
async function callerOf(guild: Guild, textChannelId: string, speakerIds: readonly string[], log: Logger): Promise<VoiceCaller | undefined> {
  const members = await Promise.all(speakerIds.map((userId) => memberOf(guild, userId, log)));
  const [first, ...others] = members;
  if (!first || others.some((member) => member === undefined)) return undefined;
  return { guildId: guild.id, channelId: textChannelId, ...first, alsoHeard: others.filter((member) => member !== undefined) };
}

/** A member who spoke, as the video part checks them; undefined when they cannot be looked up. */
async function memberOf(guild: Guild, userId: string, log: Logger): Promise<VoiceMember | undefined> {
  let member: GuildMember | undefined;
  try {
    member = guild.members.cache.get(userId) ?? (await guild.members.fetch(userId));
  } catch (error) {
    log.warn('could not look up a member who spoke a turn with a tool call', { guild: guild.id, user: userId, error });
  }
  if (!member) return undefined;
  return {
    userId: member.id,
    displayName: member.displayName,
    roleIds: member.roles.cache.filter((role) => role.id !== guild.id).map((role) => role.id),
    isServerManager: member.permissions.has(PermissionFlagsBits.ManageGuild),
  };
}
