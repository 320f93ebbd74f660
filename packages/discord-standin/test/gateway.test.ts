import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSIONS, startDiscordStandIn, type DiscordStandIn, type TestGuild } from '../src/index.ts';
import { RawGateway, field, type Frame } from '../src/gateway/raw-gateway.ts';

// The gateway frame by frame, as a raw websocket client sees it: the handshake, what READY and
// GUILD_CREATE carry, intents, heartbeats, resume and the bot's voice state handshake.

const GUILDS = 1 << 0;
const GUILD_MEMBERS = 1 << 1;
const GUILD_VOICE_STATES = 1 << 7;
const GUILD_MESSAGES = 1 << 9;

let discord: DiscordStandIn;
let guild: TestGuild;
let gatewayUrl: string;
const open: RawGateway[] = [];

async function connect(url = gatewayUrl): Promise<RawGateway> {
  const gateway = new RawGateway(url);
  open.push(gateway);
  await gateway.next((frame) => frame.op === 10);
  return gateway;
}

/** IDENTIFY, then READY and one GUILD_CREATE per guild; `last` is the final GUILD_CREATE. */
async function identify(intents: number): Promise<{ gateway: RawGateway; ready: Frame; last: Frame }> {
  const gateway = await connect();
  gateway.send(2, { token: discord.botToken, intents, properties: { os: 'linux', browser: 'test', device: 'test' } });
  const ready = await gateway.dispatch('READY');
  let last = ready;
  for (let count = 0; count < discord.state.guilds.size; count++) last = await gateway.dispatch('GUILD_CREATE');
  return { gateway, ready, last };
}

beforeAll(async () => {
  discord = await startDiscordStandIn({ heartbeatIntervalMs: 45_000 });
  guild = discord.createGuild({ name: 'frames', attachmentSizeLimit: 4096 });
  const response = await fetch(`${discord.apiUrl}/v10/gateway/bot`, { headers: { authorization: `Bot ${discord.botToken}` } });
  gatewayUrl = String(field(await response.json(), 'url'));
}, 30_000);

afterEach(() => {
  for (const gateway of open.splice(0)) gateway.close();
});

afterAll(async () => {
  await discord?.close();
});

describe('the handshake', () => {
  it('closes with 4004 on a wrong token', async () => {
    const gateway = await connect();
    expect(field(gateway.frames[0]?.d, 'heartbeat_interval')).toBe(45_000);
    const closed = once(gateway.socket, 'close');
    gateway.send(2, { token: 'not-the-token', intents: GUILDS });
    const [code] = await closed;
    expect(code).toBe(4004);
  });

  it('closes with 4014 on a privileged intent the portal does not allow, and says which are on in the app flags', async () => {
    discord.setPrivilegedIntents({ serverMembers: false });
    try {
      const gateway = await connect();
      const closed = once(gateway.socket, 'close');
      gateway.send(2, { token: discord.botToken, intents: GUILDS | GUILD_MEMBERS });
      const [code] = await closed;
      expect(code).toBe(4014);
      expect(discord.identifies.at(-1)?.outcome).toBe('disallowed-intents');
      // Presence and Message Content stay on: GATEWAY_PRESENCE_LIMITED and GATEWAY_MESSAGE_CONTENT_LIMITED.
      const application = await fetch(`${discord.apiUrl}/v10/applications/@me`, { headers: { authorization: `Bot ${discord.botToken}` } });
      expect(field(await application.json(), 'flags')).toBe((1 << 13) | (1 << 19));
      // The same bot without the intent connects.
      const { ready } = await identify(GUILDS);
      expect(field(field(ready.d, 'application'), 'flags')).toBe((1 << 13) | (1 << 19));
    } finally {
      discord.setPrivilegedIntents({ serverMembers: true });
    }
  });

  it('sends READY with the guilds unavailable, then a complete GUILD_CREATE', async () => {
    const { gateway, ready } = await identify(GUILDS | GUILD_VOICE_STATES);
    expect(ready.s).toBe(1);
    expect(gateway.frames.filter((frame) => frame.t === 'GUILD_CREATE')).toHaveLength(1);
    expect(ready.d).toMatchObject({
      v: 10,
      user: { id: discord.botUserId, bot: true },
      guilds: [{ id: guild.id, unavailable: true }],
      application: { id: discord.applicationId },
      shard: [0, 1],
    });
    expect(String(field(ready.d, 'resume_gateway_url'))).toBe(gatewayUrl);
    const created = gateway.frames.find((frame) => frame.t === 'GUILD_CREATE');
    expect(created?.d).toMatchObject({ id: guild.id, name: 'frames', unavailable: false, voice_states: [], threads: [] });
    const roles = field(created?.d, 'roles');
    expect(roles).toContainEqual(expect.objectContaining({ id: guild.id, name: '@everyone' }));
    const members = field(created?.d, 'members');
    const memberIds = Array.isArray(members) ? members.map((member) => field(member, 'user', 'id')) : [];
    expect(memberIds).toEqual(expect.arrayContaining([discord.botUserId, guild.admin.id, guild.member.id]));
    const channels = field(created?.d, 'channels');
    expect(Array.isArray(channels) && channels.map((channel) => field(channel, 'type'))).toEqual([0, 2]);
    await discord.waitForBot();
  });

  it('sends an INTERACTION_CREATE discord.js can build: entitlements, upload limit, member permissions', async () => {
    const { gateway } = await identify(GUILDS);
    await fetch(`${discord.apiUrl}/v10/applications/${discord.applicationId}/commands`, {
      method: 'PUT',
      headers: { authorization: `Bot ${discord.botToken}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ name: 'ping', description: 'ping' }]),
    });
    discord.runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'ping' });
    const byAdmin = await gateway.dispatch('INTERACTION_CREATE');
    expect(byAdmin.d).toMatchObject({
      type: 2,
      application_id: discord.applicationId,
      guild_id: guild.id,
      entitlements: [],
      attachment_size_limit: 4096,
      data: { name: 'ping', type: 1 },
    });
    const adminPermissions = BigInt(String(field(byAdmin.d, 'member', 'permissions')));
    expect(adminPermissions & PERMISSIONS.manageGuild).toBe(PERMISSIONS.manageGuild);
    expect(adminPermissions & PERMISSIONS.administrator).toBe(0n);

    discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'ping' });
    const byMember = await gateway.dispatch('INTERACTION_CREATE');
    expect(BigInt(String(field(byMember.d, 'member', 'permissions'))) & PERMISSIONS.manageGuild).toBe(0n);
    expect(field(byMember.d, 'token')).not.toBe(field(byAdmin.d, 'token'));
  });
});

describe('roles', () => {
  it("sends a new role as GUILD_ROLE_CREATE, and its bits in its members' interactions", async () => {
    const { gateway } = await identify(GUILDS);
    const roleId = discord.createRole(guild.id, { name: 'Moderators', permissions: PERMISSIONS.manageMessages });
    const created = await gateway.dispatch('GUILD_ROLE_CREATE');
    expect(created.d).toMatchObject({ guild_id: guild.id, role: { id: roleId, name: 'Moderators', permissions: String(1n << 13n) } });
    const moderator = discord.createUser({ guildId: guild.id, name: 'moderator', roles: [roleId] });
    discord.runCommand({ user: moderator, guildId: guild.id, channelId: guild.textChannelId, command: 'ping' });
    const pressed = await gateway.dispatch('INTERACTION_CREATE');
    const permissions = BigInt(String(field(pressed.d, 'member', 'permissions')));
    expect(permissions & PERMISSIONS.manageMessages).toBe(PERMISSIONS.manageMessages);
    expect(permissions & PERMISSIONS.manageGuild).toBe(0n);
  });
});

describe('intents', () => {
  it('withholds voice states and member joins from a bot without those intents', async () => {
    const { gateway } = await identify(GUILDS);
    const from = gateway.frames.length;
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    discord.leaveVoice(guild.member, guild.id);
    discord.createUser({ guildId: guild.id, name: 'newcomer' });
    const later = discord.createGuild({ name: 'marker' });
    await gateway.next((frame) => frame.t === 'GUILD_CREATE' && field(frame.d, 'id') === later.id);
    expect(gateway.since(from).map((frame) => frame.t)).toEqual(['GUILD_CREATE']);
  });

  it('sends a member leaving as their voice state, then GUILD_MEMBER_REMOVE, to a bot with GuildMembers only', async () => {
    const leaver = discord.createUser({ guildId: guild.id, name: 'leaver' });
    discord.joinVoice(leaver, guild.id, guild.voiceChannelId);
    const { gateway } = await identify(GUILDS | GUILD_MEMBERS | GUILD_VOICE_STATES);
    const from = gateway.frames.length;
    discord.removeMember(guild.id, leaver);
    const removed = await gateway.dispatch('GUILD_MEMBER_REMOVE');
    expect(removed.d).toEqual({ guild_id: guild.id, user: expect.objectContaining({ id: leaver.id, username: 'leaver' }) });
    expect(gateway.since(from).map((frame) => frame.t)).toEqual(['VOICE_STATE_UPDATE', 'GUILD_MEMBER_REMOVE']);
    const member = await fetch(`${discord.apiUrl}/v10/guilds/${guild.id}/members/${leaver.id}`, {
      headers: { authorization: `Bot ${discord.botToken}` },
    });
    expect(member.status).toBe(404);
  });
});

describe('messages on the gateway', () => {
  it('sends the bot its own messages with GUILD_MESSAGES, but never an ephemeral reply', async () => {
    const { gateway } = await identify(GUILDS | GUILD_MESSAGES);
    const headers = { authorization: `Bot ${discord.botToken}`, 'content-type': 'application/json' };
    await fetch(`${discord.apiUrl}/v10/applications/${discord.applicationId}/commands`, {
      method: 'PUT',
      headers,
      body: JSON.stringify([{ name: 'ping', description: 'ping' }]),
    });
    const answer = async (flags: number) => {
      discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'ping' });
      const interaction = await gateway.dispatch('INTERACTION_CREATE');
      await fetch(
        `${discord.apiUrl}/v10/interactions/${String(field(interaction.d, 'id'))}/${String(field(interaction.d, 'token'))}/callback`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 4, data: { content: `flags ${flags}`, flags } }),
        },
      );
    };
    await answer(64);
    await answer(0);
    const created = await gateway.dispatch('MESSAGE_CREATE');
    expect(created.d).toMatchObject({ content: 'flags 0', channel_id: guild.textChannelId, author: { id: discord.botUserId } });
    expect(gateway.frames.filter((frame) => frame.t === 'MESSAGE_CREATE')).toHaveLength(1);

    await fetch(`${discord.apiUrl}/v10/channels/${guild.textChannelId}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ content: 'posted' }),
    });
    expect(await gateway.dispatch('MESSAGE_CREATE')).toMatchObject({
      d: { content: 'posted', member: { user: { id: discord.botUserId } } },
    });
  });
});

describe('heartbeats and resume', () => {
  it('acknowledges heartbeats, except the ones it is told to withhold', async () => {
    const { gateway } = await identify(GUILDS);
    discord.withholdHeartbeatAck();
    gateway.send(1, 1);
    gateway.send(1, 1);
    await gateway.next((frame) => frame.op === 11);
    gateway.send(1, 1);
    await gateway.next((frame) => frame.op === 11);
    expect(gateway.frames.filter((frame) => frame.op === 11)).toHaveLength(2);
  });

  it('replays what a dropped connection missed, then RESUMED; a stale session gets op 9', async () => {
    const { gateway, ready, last: lastCreate } = await identify(GUILDS | GUILD_VOICE_STATES);
    const sessionId = field(ready.d, 'session_id');
    const dropped = once(gateway.socket, 'close');
    discord.dropGatewayConnection();
    await dropped;

    discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
    const resumed = await connect(String(field(ready.d, 'resume_gateway_url')));
    resumed.send(6, { token: discord.botToken, session_id: sessionId, seq: lastCreate.s });
    const missed = await resumed.dispatch('VOICE_STATE_UPDATE');
    expect(missed.s).toBe((lastCreate.s ?? 0) + 1);
    expect(missed.d).toMatchObject({ user_id: guild.admin.id, channel_id: guild.voiceChannelId });
    expect((await resumed.dispatch('RESUMED')).s).toBe((missed.s ?? 0) + 1);
    discord.leaveVoice(guild.admin, guild.id);
    expect(await resumed.dispatch('VOICE_STATE_UPDATE')).toMatchObject({ d: { user_id: guild.admin.id, channel_id: null } });

    const stale = await connect();
    stale.send(6, { token: discord.botToken, session_id: 'an-old-session', seq: 1 });
    expect(await stale.next((frame) => frame.op === 9)).toMatchObject({ d: false });
  });
});

describe('voice state handshake', () => {
  it("answers the bot's op 4 with its voice state first, then the voice server; leaving echoes a null channel", async () => {
    const { gateway } = await identify(GUILDS | GUILD_VOICE_STATES);
    const from = gateway.frames.length;
    gateway.send(4, { guild_id: guild.id, channel_id: guild.voiceChannelId, self_deaf: false, self_mute: false });
    const server = await gateway.dispatch('VOICE_SERVER_UPDATE');
    const events = gateway.since(from).map((frame) => frame.t);
    expect(events).toEqual(['VOICE_STATE_UPDATE', 'VOICE_SERVER_UPDATE']);
    const state = gateway.since(from)[0]?.d;
    expect(state).toMatchObject({
      guild_id: guild.id,
      channel_id: guild.voiceChannelId,
      user_id: discord.botUserId,
      member: { user: { id: discord.botUserId } },
    });
    expect(typeof field(state, 'session_id')).toBe('string');
    expect(server.d).toMatchObject({ guild_id: guild.id, endpoint: discord.voice.endpoint });
    expect(typeof field(server.d, 'token')).toBe('string');
    expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);

    gateway.send(4, { guild_id: guild.id, channel_id: null, self_deaf: false, self_mute: false });
    expect(await gateway.dispatch('VOICE_STATE_UPDATE')).toMatchObject({ d: { user_id: discord.botUserId, channel_id: null } });
    expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
  });
});
