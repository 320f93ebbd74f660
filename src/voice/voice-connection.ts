import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import type { Guild } from 'discord.js';
import type { Logger } from '../lib/log.ts';

// The bot's voice connection to a channel (@discordjs/voice's own state machine): joined until it is
// ready, then followed until it ends for good.

const JOIN_TIMEOUT_MS = 20_000;
/** A disconnected voice connection gets this long to start over (a move or a resume) before the bot gives up. */
const DISCONNECTED_GRACE_MS = 5_000;
/** A connection that is not Ready (rejoining, resuming) gets this long to be Ready again. */
const RECOVERY_TIMEOUT_MS = JOIN_TIMEOUT_MS;

/** Why a voice connection ended for good: destroyed from outside, not Ready again in time, or disconnected for good. */
export type ConnectionEnd = 'connection-ended' | 'connection-lost' | 'disconnected';

/** Joins a voice channel; resolves once the connection is ready, or undefined (logged, the connection destroyed) when it is not in time. */
export async function connectToChannel(guild: Guild, channelId: string, log: Logger): Promise<VoiceConnection | undefined> {
  const connection = joinVoiceChannel({
    guildId: guild.id,
    channelId,
    adapterCreator: guild.voiceAdapterCreator,
    selfDeaf: false,
    selfMute: false,
  });
  // Websocket, UDP and DAVE failures surface as 'error' events; unheard, one would end the process.
  // The connection's own state machine resumes or rejoins after them.
  connection.on('error', (error) => log.warn('voice connection error', { error }));
  try {
    await entersState(connection, VoiceConnectionStatus.Ready, JOIN_TIMEOUT_MS);
    return connection;
  } catch (error) {
    log.warn('the voice connection did not become ready', { channel: channelId, error });
    connection.destroy();
    return undefined;
  }
}

/**
 * Follows a voice connection once the conversation runs. Disconnected: a move or a resume starts over
 * within a few seconds; otherwise (kicked, channel deleted, voice server gone) the connection is
 * destroyed. Not Ready for long: destroyed too. Destroyed: `onEnded` hears why.
 */
export function watchConnection(connection: VoiceConnection, onEnded: (why: ConnectionEnd) => void): void {
  let reason: ConnectionEnd = 'connection-ended';
  let recovery: NodeJS.Timeout | undefined;
  let disconnected: NodeJS.Timeout | undefined;
  const giveUp = (why: ConnectionEnd) => {
    reason = why;
    if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
  };
  connection.on('stateChange', (_previous, next) => {
    clearTimeout(disconnected);
    if (next.status === VoiceConnectionStatus.Ready) {
      clearTimeout(recovery);
      recovery = undefined;
      return;
    }
    if (next.status === VoiceConnectionStatus.Destroyed) {
      clearTimeout(recovery);
      onEnded(reason);
      return;
    }
    recovery ??= setTimeout(() => giveUp('connection-lost'), RECOVERY_TIMEOUT_MS);
    if (next.status === VoiceConnectionStatus.Disconnected) disconnected = setTimeout(() => giveUp('disconnected'), DISCONNECTED_GRACE_MS);
  });
}

/** Destroys a connection that is not destroyed yet. */
export function disconnect(connection: VoiceConnection): void {
  if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
}
