import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import { RealtimeClient } from '../../src/gateway/realtime/client.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { VoiceSession, type VoiceSessionOptions } from '../../src/voice/session.ts';
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
  /** Errors the voice connection emitted. */
  connectionErrors: Error[];
  close(): Promise<void>;
}

export async function startScriptedVoice(ids: ScriptedVoiceIds): Promise<ScriptedVoice> {
  const voice = await startVoiceServer();
  const untrust = trustCertificateInThisProcess(voice.certPem);
  const realtime = await ScriptedRealtime.start();
  const gateway = new InProcessVoiceGateway(voice, ids.botId);
  voice.userJoined(ids.guildId, ids.channelId, ids.userId);
  const connection = joinVoiceChannel({
    guildId: ids.guildId,
    channelId: ids.channelId,
    adapterCreator: gateway.adapterCreator(ids.guildId),
    selfDeaf: false,
  });
  const connectionErrors: Error[] = [];
  connection.on('error', (error) => connectionErrors.push(error));
  await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
  await voice.waitForBotConnection(ids.guildId);
  return {
    ids,
    voice,
    realtime,
    connection,
    connectionErrors,
    async close() {
      if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
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
