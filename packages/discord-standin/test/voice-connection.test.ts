// The real @discordjs/voice connects to the stand-in's voice server: TLS websocket, UDP IP discovery,
// aead_aes256_gcm_rtpsize, DAVE (or, with the stand-in's `dave: false`, DAVE declined); heartbeats,
// RESUME, refusal of a wrong token, clean leave.
// The library runs in this test's process; it trusts the stand-in's certificate through
// tls.setDefaultCACertificates (NODE_EXTRA_CA_CERTS is only read at process start), and a child
// process checks the NODE_EXTRA_CA_CERTS route the bot's own process uses.

import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { VoiceConnectionStatus, entersState, getVoiceConnections, joinVoiceChannel } from '@discordjs/voice';
import type { VoiceConnection } from '@discordjs/voice';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { trustCertificateInThisProcess } from '../src/voice/tls-trust.ts';
import { InProcessVoiceGateway } from '../src/voice/adapter.ts';
import { isDaveOp, VoiceOp } from '../src/voice/protocol.ts';
import { startVoiceServer } from '../src/voice/server.ts';
import type { VoiceServer } from '../src/voice/server.ts';

const run = promisify(execFile);

const BOT_ID = '100000000000000001';
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';

let server: VoiceServer;
let gateway: InProcessVoiceGateway;
let untrust: () => void;
let errors: Error[];

beforeAll(async () => {
  // A short heartbeat interval so heartbeats happen within a test.
  server = await startVoiceServer({ heartbeatIntervalMs: 100 });
  untrust = trustCertificateInThisProcess(server.certPem);
  gateway = new InProcessVoiceGateway(server, BOT_ID);
});

afterEach(() => {
  for (const connection of getVoiceConnections().values()) {
    if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
  }
});

afterAll(async () => {
  await server.close();
  untrust();
});

function join(options: { debug?: boolean } = {}): VoiceConnection {
  errors = [];
  const connection = joinVoiceChannel({
    guildId: GUILD_ID,
    channelId: CHANNEL_ID,
    adapterCreator: gateway.adapterCreator(GUILD_ID),
    selfDeaf: false,
    debug: options.debug,
  });
  connection.on('error', (error) => errors.push(error));
  return connection;
}

describe('voice connection to the stand-in', () => {
  it('reaches Ready with transport encryption and DAVE: the bot offers DAVE 1, the stand-in takes it, the bot sends its key package', async () => {
    const connection = join();
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    const info = await server.waitForBotConnection(GUILD_ID);

    expect(info).toMatchObject({ guildId: GUILD_ID, channelId: CHANNEL_ID, userId: BOT_ID });
    expect(info.maxDaveProtocolVersion).toBeGreaterThanOrEqual(1);
    expect(info.dave).toMatchObject({ protocolVersion: 1, epoch: undefined });
    await server.dave.waitForEvent(GUILD_ID, (event) => event.type === 'keyPackage' && event.userId === BOT_ID);
    // Alone in the channel the bot has nobody to share a group with: no privacy code yet.
    expect(connection.voicePrivacyCode).toBeUndefined();
    const ops = server.botMessages(GUILD_ID).map((message) => message.op);
    expect(ops).toContain(VoiceOp.Identify);
    expect(ops).toContain(VoiceOp.SelectProtocol);
    expect(ops.filter(isDaveOp)).toEqual([26]);
    // The library's UDP keepalives are tolerated (and counted).
    expect(server.keepalivesReceived).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  it('acknowledges heartbeats, so the bot measures its voice ping', async () => {
    const connection = join({ debug: true });
    // The library logs every message it receives: wait for a heartbeat ack to arrive.
    await new Promise<void>((resolve) => {
      const onDebug = (message: string) => {
        if (!message.includes(`"op":${VoiceOp.HeartbeatAck}`)) return;
        connection.off('debug', onDebug);
        resolve();
      };
      connection.on('debug', onDebug);
    });
    expect(connection.ping.ws).toEqual(expect.any(Number));
    expect(server.botMessages(GUILD_ID).some((message) => message.op === VoiceOp.Heartbeat)).toBe(true);
  });

  it('resumes the same session after the voice server drops the websocket with 4015', async () => {
    const connection = join();
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    const before = await server.waitForBotConnection(GUILD_ID);
    const closes = server.botSocketCloses(GUILD_ID).length;

    server.disconnectBot(GUILD_ID, 4015);
    await entersState(connection, VoiceConnectionStatus.Connecting, 5_000);
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);

    const after = await server.waitForBotConnection(GUILD_ID);
    expect(after.ssrc).toBe(before.ssrc);
    expect(
      server
        .botSocketCloses(GUILD_ID)
        .slice(closes)
        .map((close) => close.code),
    ).toEqual([4015]);
    expect(server.botMessages(GUILD_ID).some((message) => message.op === VoiceOp.Resume)).toBe(true);
  });

  it('leaving closes the voice websocket normally and tells the gateway channel_id null', async () => {
    const connection = join();
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    await server.waitForBotConnection(GUILD_ID);

    connection.destroy();
    await server.waitForBotDisconnect(GUILD_ID);

    expect(server.botSocketCloses(GUILD_ID).at(-1)?.code).toBe(1000);
    expect(gateway.requests.at(-1)).toMatchObject({ guildId: GUILD_ID, channelId: null });
    expect(server.botConnection(GUILD_ID)).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('refuses an IDENTIFY with the wrong token, without echoing it', async () => {
    const guildId = '200000000000000002';
    server.expectBot({ guildId, channelId: CHANNEL_ID, userId: BOT_ID, sessionId: 'session-1' });
    const socket = new WebSocket(`wss://${server.endpoint}?v=8`);
    const helloEvent: unknown[] = await once(socket, 'message');
    expect(JSON.parse(String(helloEvent[0]))).toMatchObject({ op: VoiceOp.Hello, d: { heartbeat_interval: 100 } });

    const wrongToken = 'not-the-token-the-gateway-handed-out';
    socket.send(
      JSON.stringify({
        op: VoiceOp.Identify,
        d: { server_id: guildId, user_id: BOT_ID, session_id: 'session-1', token: wrongToken, max_dave_protocol_version: 1 },
      }),
    );
    const closeEvent: unknown[] = await once(socket, 'close');
    expect(closeEvent[0]).toBe(4004);
    expect(String(closeEvent[1])).toContain('token');
    expect(String(closeEvent[1])).not.toContain(wrongToken);
  });
});

describe('a stand-in with DAVE off', () => {
  it('declines DAVE: SESSION_DESCRIPTION says 0, and the bot sends no DAVE op', async () => {
    const declining = await startVoiceServer({ dave: false });
    const trusted = trustCertificateInThisProcess(declining.certPem);
    const declined = new InProcessVoiceGateway(declining, BOT_ID);
    const guildId = '200000000000000003';
    const connection = joinVoiceChannel({
      guildId,
      channelId: CHANNEL_ID,
      adapterCreator: declined.adapterCreator(guildId),
      selfDeaf: false,
      debug: true,
    });
    const described = new Promise<string>((resolve) => connection.on('debug', (line) => line.includes('"op":4,') && resolve(line)));
    try {
      await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
      const info = await declining.waitForBotConnection(guildId);
      expect(await described).toContain('"dave_protocol_version":0');
      expect(info.dave).toBeUndefined();
      expect(connection.voicePrivacyCode).toBeUndefined();
      expect(
        declining
          .botMessages(guildId)
          .map((message) => message.op)
          .filter(isDaveOp),
      ).toEqual([]);
    } finally {
      connection.destroy();
      await declining.close();
      trusted();
    }
  });
});

describe('the bot process route: NODE_EXTRA_CA_CERTS', () => {
  it('a separate Node process started with NODE_EXTRA_CA_CERTS=caCertPath opens the voice websocket', async () => {
    const script = `
      import { WebSocket } from 'ws';
      const socket = new WebSocket(process.argv[1]);
      socket.on('message', (data) => { process.stdout.write(String(data)); socket.close(); });
      socket.on('error', (error) => { process.stderr.write(error.message); process.exit(1); });
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, `wss://${server.endpoint}?v=8`], {
      cwd: process.cwd(),
      env: { ...process.env, NODE_EXTRA_CA_CERTS: server.caCertPath },
      timeout: 15_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ op: VoiceOp.Hello });
  });
});

describe('server lifecycle', () => {
  it('close() removes the temporary certificate and refuses new connections', async () => {
    const other = await startVoiceServer();
    await access(other.caCertPath);
    await other.close();
    await expect(access(other.caCertPath)).rejects.toThrow(/ENOENT/);
    const socket = new WebSocket(`wss://${other.endpoint}?v=8`, { ca: other.certPem });
    const errorEvent: unknown[] = await once(socket, 'error');
    expect(String(errorEvent[0])).toMatch(/ECONNREFUSED/);
  });
});
