import { PermissionFlagsBits, type Guild, type GuildMember } from 'discord.js';
import type { Logger } from '../lib/log.ts';
import type { VoiceCaller, VoiceVideoRequests } from '../ports/voice-video.ts';
import type { VoiceFunctionCall } from './session-options.ts';
import { runToolCall } from './tools.ts';

/** A tool call runs as the member who spoke the turn, with their roles and permissions; without the video part, no tool is there. */
export async function runVoiceToolCall(
  requests: VoiceVideoRequests | undefined,
  guild: Guild,
  textChannelId: string,
  call: VoiceFunctionCall,
  log: Logger,
): Promise<string> {
  if (!requests) return JSON.stringify({ status: 'not_done', message: 'No tools are available here.' });
  const speakerId = call.speakerIds[0];
  const caller = speakerId === undefined ? undefined : await callerOf(guild, textChannelId, speakerId, log);
  return runToolCall(requests, caller, call.name, call.arguments);
}

/** The member who spoke, as the video part sees a caller; undefined when they cannot be looked up. */
async function callerOf(guild: Guild, textChannelId: string, speakerId: string, log: Logger): Promise<VoiceCaller | undefined> {
  let member: GuildMember | undefined;
  try {
    member = guild.members.cache.get(speakerId) ?? (await guild.members.fetch(speakerId));
  } catch (error) {
    log.warn('could not look up the member who spoke a turn with a tool call', { guild: guild.id, user: speakerId, error });
  }
  if (!member) return undefined;
  return {
    guildId: guild.id,
    channelId: textChannelId,
    userId: member.id,
    roleIds: member.roles.cache.filter((role) => role.id !== guild.id).map((role) => role.id),
    isServerManager: member.permissions.has(PermissionFlagsBits.ManageGuild),
  };
}
