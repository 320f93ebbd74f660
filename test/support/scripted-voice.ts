import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import { trustCertificateInThisProcess } from './discord/tls-trust.ts';
import { InProcessVoiceGateway } from './discord/voice-adapter.ts';
import { startVoiceServer, type VoiceServer } from './discord/voice-server.ts';
import { ScriptedRealtime } from './scripted-realtime.ts';

// What the voice session tests stand on: the Discord stand-in's voice server in this process with one
// user in a channel, the real @discordjs/voice joined to it, and a scripted realtime server.

export interface ScriptedVoiceIds {
  botId: string;
  userId: string;
  guildId: string;
  channelId: string;
}

export interface ScriptedVoice {
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
  const connection = joinVoiceChannel({ guildId: ids.guildId, channelId: ids.channelId, adapterCreator: gateway.adapterCreator(ids.guildId), selfDeaf: false });
  const connectionErrors: Error[] = [];
  connection.on('error', (error) => connectionErrors.push(error));
  await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
  await voice.waitForBotConnection(ids.guildId);
  return {
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
