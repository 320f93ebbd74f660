import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import { RealtimeClient } from '../../src/gateway/realtime/client.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { VoiceSession } from '../../src/voice/session.ts';
import type { VoiceSessionOptions } from '../../src/voice/session-options.ts';
import { InProcessVoiceGateway, startVoiceServer, trustCertificateInThisProcess, type VoiceServer } from 'discord-standin';
import { ScriptedRealtime, type ScriptedSocket } from './scripted-realtime.ts';

// What the voice session tests stand on: the Discord stand-in's voice server in this process with one
// user in a channel, the real @discordjs/voice joined to it, and a scripted realtime server.

export interface ScriptedVoiceIds {
  botId: string;
  userId: string;
  guildId: string;
  channelId: string;
}

export interface ScriptedVoice {
  ids: ScriptedVoiceIds;
  voice: VoiceServer;
  realtime: ScriptedRealtime;
  connection: VoiceConnection;
  /** Errors the voice connections emitted. */
  connectionErrors: Error[];
  /** The bot joins another guild's channel on the same voice server, a user with it: conversations side by side. */
  join(ids: Omit<ScriptedVoiceIds, 'botId'>): Promise<VoiceConnection>;
  close(): Promise<void>;
}

export async function startScriptedVoice(ids: ScriptedVoiceIds): Promise<ScriptedVoice> {
  const voice = await startVoiceServer();
  const untrust = trustCertificateInThisProcess(voice.certPem);
  const realtime = await ScriptedRealtime.start();
  const gateway = new InProcessVoiceGateway(voice, ids.botId);
  const connectionErrors: Error[] = [];
  const connections: VoiceConnection[] = [];
  async function join(guild: Omit<ScriptedVoiceIds, 'botId'>): Promise<VoiceConnection> {
    voice.userJoined(guild.guildId, guild.channelId, guild.userId);
    const joined = joinVoiceChannel({
      guildId: guild.guildId,
      channelId: guild.channelId,
      adapterCreator: gateway.adapterCreator(guild.guildId),
      selfDeaf: false,
    });
    connections.push(joined);
    joined.on('error', (error) => connectionErrors.push(error));
    await entersState(joined, VoiceConnectionStatus.Ready, 10_000);
    await voice.waitForBotConnection(guild.guildId);
    return joined;
  }
  const connection = await join(ids);
  return {
    ids,
    voice,
    realtime,
    connection,
    connectionErrors,
    join,
    async close() {
      for (const joined of connections) if (joined.state.status !== VoiceConnectionStatus.Destroyed) joined.destroy();
      await realtime.close();
      await voice.close();
      untrust();
    },
  };
}

/**
 * A VoiceSession on the rig's connection, talking to its scripted realtime server, with the settings the
 * session tests share (any of them overridden); resolves once its realtime socket is open.
 */
export async function startScriptedSession(
  rig: ScriptedVoice,
  overrides: Partial<VoiceSessionOptions> = {},
): Promise<{ session: VoiceSession; socket: ScriptedSocket }> {
  const { ids, connection, realtime } = rig;
  const session = new VoiceSession({
    guildId: ids.guildId,
    connection,
    settings: defaultVoiceSettings('svc'),
    connectRealtime: () =>
      RealtimeClient.connect({
        wsBaseUrl: realtime.url,
        apiKey: 'scripted-key-0001',
        model: 'svc-voice-latest',
        session: { turnDetection: { type: 'server_vad' } },
        timeoutMs: 2000,
      }),
    log: silentLogger,
    sessionLimitMs: 3_600_000,
    reconnect: { baseMs: 10, maxMs: 40, maxAttempts: 5 },
    botUserId: ids.botId,
    ...overrides,
  });
  const before = realtime.sockets.length;
  await session.start();
  try {
    return { session, socket: await realtime.waitFor(() => realtime.sockets[before], 'the realtime socket') };
  } catch (error) {
    session.stop();
    throw error;
  }
}
