import { once } from 'node:events';
import { Client, Events, GatewayIntentBits, SlashCommandBuilder } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { isRecord } from '../src/lib/json.ts';
import { createLogger } from '../src/lib/log.ts';
import { waitUntil } from '../src/lib/wait-until.ts';
import {
  shardOfGuild,
  startDiscordStandIn,
  type DiscordStandIn,
  type IdentifyRecord,
  type StandInOptions,
  type TestGuild,
} from '../src/index.ts';
import { RawGateway, field, type Frame } from '../src/gateway/raw-gateway.ts';

// The stand-in sharded as Discord shards, with the real discord.js (its own sharding: a Client with
// `shards` and `shardCount`) and frame by frame: each shard's session receives only its guilds' events,
// resumes on its own, an invalid shard is closed with 4010, and identifies keep to max_concurrency.

const GUILDS = 1 << 0;
const GUILD_VOICE_STATES = 1 << 7;
/** Discord's identify window per rate-limit bucket. */
const IDENTIFY_WINDOW_MS = 5000;

const ping = new SlashCommandBuilder().setName('ping').setDescription('which client answers');

const standIns: DiscordStandIn[] = [];
const clients: Client[] = [];
const raws: RawGateway[] = [];

afterEach(async () => {
  for (const raw of raws.splice(0)) raw.close();
  await Promise.all(clients.splice(0).map((client) => client.destroy()));
  await Promise.all(standIns.splice(0).map((discord) => discord.close()));
});

async function standIn(options: StandInOptions): Promise<DiscordStandIn> {
  const discord = await startDiscordStandIn({ heartbeatIntervalMs: 45_000, ...options });
  standIns.push(discord);
  return discord;
}

interface Packet {
  t: string;
  guildId: string | undefined;
  shardId: number;
}

/** A discord.js client holding `shards` of `shardCount`; it answers /ping with its name and keeps every dispatch it got. */
interface Bot {
  client: Client;
  packets: Packet[];
}

function bot(discord: DiscordStandIn, name: string, shards: number[], shardCount: number): Bot {
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates],
    shards,
    shardCount,
    rest: { api: discord.apiUrl },
  });
  clients.push(client);
  const packets: Packet[] = [];
  client.on(Events.Raw, (packet: unknown, shardId: unknown) => {
    if (!isRecord(packet) || typeof packet.t !== 'string' || typeof shardId !== 'number') return;
    const guildId = packet.t === 'GUILD_CREATE' ? field(packet.d, 'id') : field(packet.d, 'guild_id');
    packets.push({ t: packet.t, guildId: typeof guildId === 'string' ? guildId : undefined, shardId });
  });
  client.on(Events.InteractionCreate, (interaction) => {
    if (interaction.isChatInputCommand()) void interaction.reply({ content: name });
  });
  return { client, packets };
}

/** The first dispatch `bot` got that matches, once discord.js has handled it. */
function received({ client, packets }: Bot, what: string, predicate: (packet: Packet) => boolean, timeoutMs = 5000): Promise<Packet> {
  return waitUntil({
    check: () => packets.find(predicate),
    subscribe: (wake) => {
      // discord.js emits the raw packet before it handles it: look once it has.
      const later = () => setImmediate(wake);
      client.on(Events.Raw, later);
      return () => client.off(Events.Raw, later);
    },
    timeoutMs,
    timeoutError: () => new Error(`no ${what} reached the client in ${timeoutMs} ms`),
  });
}

async function login(discord: DiscordStandIn, { client }: Bot): Promise<void> {
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
}

function sortedIds(guilds: readonly TestGuild[]): string[] {
  return guilds.map((guild) => guild.id).sort();
}

/** The guilds a client has in its cache. */
function cached({ client }: Bot): string[] {
  return [...client.guilds.cache.keys()].sort();
}

/** Which client answered /ping in `guild`, as the member who ran it sees it. */
async function answerer(discord: DiscordStandIn, guild: TestGuild): Promise<unknown> {
  const run = discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'ping' });
  return (await run.response()).data.content;
}

function guildsOf(packets: Packet[], guilds: readonly TestGuild[]): Packet[] {
  const ids = new Set(guilds.map((guild) => guild.id));
  return packets.filter((packet) => packet.guildId !== undefined && ids.has(packet.guildId));
}

describe('GET /gateway/bot', () => {
  it('recommends the configured shard count and max_concurrency (1 and 1 by default)', async () => {
    const read = async (discord: DiscordStandIn) => {
      const response = await fetch(`${discord.apiUrl}/v10/gateway/bot`, { headers: { authorization: `Bot ${discord.botToken}` } });
      return response.json();
    };
    expect(await read(await standIn({}))).toMatchObject({ shards: 1, session_start_limit: { max_concurrency: 1 } });
    expect(await read(await standIn({ shards: 4, maxConcurrency: 2 }))).toMatchObject({
      shards: 4,
      session_start_limit: { max_concurrency: 2 },
    });
    await expect(standIn({ shards: 0 })).rejects.toThrow(/shards/);
  });

  it("is what discord.js follows with shards: 'auto'", async () => {
    const discord = await standIn({ shards: 2, maxConcurrency: 2 });
    const guilds = [discord.createGuild({ shard: [0, 2] }), discord.createGuild({ shard: [1, 2] })];
    const client = new Client({ intents: [GatewayIntentBits.Guilds], shards: 'auto', rest: { api: discord.apiUrl } });
    clients.push(client);
    const ready = once(client, Events.ClientReady);
    await client.login(discord.botToken);
    await ready;
    expect(client.options.shardCount).toBe(2);
    expect(
      discord
        .shardSessions()
        .map((session) => session.shard)
        .sort(),
    ).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect([...client.guilds.cache.keys()].sort()).toEqual(sortedIds(guilds));
  });

  it('makes guilds on the shard asked for', async () => {
    const discord = await standIn({});
    for (const [id, count] of [
      [0, 1],
      [0, 2],
      [1, 2],
      [2, 3],
      [15, 16],
    ] as const) {
      const guild = discord.createGuild({ shard: [id, count] });
      expect(shardOfGuild(guild.id, count)).toBe(id);
      expect(guild.id).toMatch(/^\d{17,19}$/);
    }
    expect(() => discord.createGuild({ shard: [2, 2] })).toThrow(/shard 2/);
  });
});

describe('discord.js on two shards', () => {
  it('gives each of two clients (shards 0 and 1 of 2) only its own guilds: READY, GUILD_CREATE, interactions, voice', async () => {
    const discord = await standIn({ shards: 2, maxConcurrency: 2 });
    const onZero = [discord.createGuild({ shard: [0, 2] }), discord.createGuild({ shard: [0, 2] })];
    const onOne = [discord.createGuild({ shard: [1, 2] }), discord.createGuild({ shard: [1, 2] })];
    const first = bot(discord, 'first', [0], 2);
    const second = bot(discord, 'second', [1], 2);
    await Promise.all([login(discord, first), login(discord, second)]);

    expect(cached(first)).toEqual(sortedIds(onZero));
    expect(cached(second)).toEqual(sortedIds(onOne));
    expect(
      discord
        .shardSessions()
        .map((session) => [session.shard, [...session.guildIds].sort()])
        .sort(),
    ).toEqual([
      [[0, 2], sortedIds(onZero)],
      [[1, 2], sortedIds(onOne)],
    ]);
    expect(discord.identifies.map((identify) => identify.outcome)).toEqual(['accepted', 'accepted']);

    await first.client.application!.commands.set([ping.toJSON()]);
    expect(await answerer(discord, onOne[0]!)).toBe('second');
    expect(await answerer(discord, onZero[0]!)).toBe('first');

    // Voice states and the bot's own voice handshake go to the guild's shard.
    discord.joinVoice(onOne[1]!.member, onOne[1]!.id, onOne[1]!.voiceChannelId);
    const voiceGuild = second.client.guilds.cache.get(onOne[0]!.id)!;
    voiceGuild.shard.send({
      op: 4,
      d: { guild_id: voiceGuild.id, channel_id: onOne[0]!.voiceChannelId, self_deaf: false, self_mute: false },
    });
    await received(second, 'voice server update', (packet) => packet.t === 'VOICE_SERVER_UPDATE');
    expect(discord.botVoiceChannel(onOne[0]!.id)).toBe(onOne[0]!.voiceChannelId);

    // A server that adds the bot now reaches its shard's client alone.
    const late = discord.createGuild({ shard: [0, 2] });
    await received(first, 'GUILD_CREATE of the new guild', (packet) => packet.t === 'GUILD_CREATE' && packet.guildId === late.id);
    expect(first.client.guilds.cache.has(late.id)).toBe(true);

    // One last interaction on each shard: once each client answered it, it has received all that was sent to it before.
    expect(await answerer(discord, onZero[1]!)).toBe('first');
    expect(await answerer(discord, onOne[1]!)).toBe('second');
    expect(guildsOf(first.packets, onOne)).toEqual([]);
    expect(guildsOf(second.packets, [...onZero, late])).toEqual([]);
    expect(guildsOf(second.packets, onOne).map((packet) => packet.t)).toEqual(
      expect.arrayContaining(['GUILD_CREATE', 'INTERACTION_CREATE', 'VOICE_STATE_UPDATE', 'VOICE_SERVER_UPDATE']),
    );
    expect(second.client.guilds.cache.has(late.id)).toBe(false);
  });

  it('gives one client holding both shards every guild, each on its shard, and resumes one shard alone', async () => {
    const discord = await standIn({ shards: 2, maxConcurrency: 2 });
    const guilds = [discord.createGuild({ shard: [0, 2] }), discord.createGuild({ shard: [1, 2] }), discord.createGuild({ shard: [1, 2] })];
    const both = bot(discord, 'both', [0, 1], 2);
    await login(discord, both);
    expect(cached(both)).toEqual(sortedIds(guilds));
    for (const guild of guilds) expect(both.client.guilds.cache.get(guild.id)!.shardId).toBe(shardOfGuild(guild.id, 2));
    await both.client.application!.commands.set([ping.toJSON()]);
    for (const guild of guilds) expect(await answerer(discord, guild)).toBe('both');
    expect(
      both.packets.filter((packet) => packet.guildId !== undefined).every((packet) => packet.shardId === shardOfGuild(packet.guildId!, 2)),
    ).toBe(true);

    // Shard 1's connection drops; a guild joins while it is away; shard 0 carries on untouched.
    const sessions = discord.shardSessions().map((session) => session.sessionId);
    const resumed = once(both.client, Events.ShardResume);
    discord.dropShardConnection(1);
    const late = discord.createGuild({ shard: [1, 2] });
    const [shardId, replayed] = await resumed;
    expect(shardId).toBe(1);
    expect(replayed).toBeGreaterThanOrEqual(1);
    await received(both, 'GUILD_CREATE shard 1 missed', (packet) => packet.t === 'GUILD_CREATE' && packet.guildId === late.id);
    expect(both.client.guilds.cache.has(late.id)).toBe(true);
    expect(await answerer(discord, late)).toBe('both');
    expect(discord.identifies).toHaveLength(2);
    expect(discord.shardSessions().map((session) => session.sessionId)).toEqual(sessions);

    // Closed with a code Discord uses to ask for a reconnect (4000), shard 0 resumes the same way.
    const resumedZero = once(both.client, Events.ShardResume);
    discord.dropShardConnection(0, { code: 4000 });
    expect((await resumedZero)[0]).toBe(0);
    expect(await answerer(discord, guilds[0]!)).toBe('both');
    expect(discord.identifies).toHaveLength(2);
    expect(discord.shardSessions().every((session) => session.connected)).toBe(true);
  });

  it('closes a shard id past the shard count with 4010, which discord.js does not retry', async () => {
    const discord = await standIn({ shards: 2 });
    const past = bot(discord, 'past', [2], 2);
    await expect(past.client.login(discord.botToken)).rejects.toThrow('Invalid shard');
    expect(discord.identifies).toMatchObject([{ shard: [2, 2], outcome: 'invalid-shard' }]);
    expect(discord.shardSessions()).toEqual([]);
  });
});

describe('identify rate (max_concurrency)', () => {
  it('sees discord.js start 4 shards with max_concurrency 2 one bucket at a time: 5 s apart within each bucket, none refused', async () => {
    const discord = await standIn({ shards: 4, maxConcurrency: 2 });
    const guilds = [0, 1, 2, 3].map((id) => discord.createGuild({ shard: [id, 4] }));
    await login(discord, bot(discord, 'four', [0, 1, 2, 3], 4));

    expect(discord.identifies.every((identify) => identify.outcome === 'accepted' && !identify.overLimit)).toBe(true);
    expect(discord.identifies.map((identify) => identify.shard?.[0]).sort()).toEqual([0, 1, 2, 3]);
    for (const bucket of [0, 1]) {
      const times = discord.identifies.filter((identify) => identify.bucket === bucket).map((identify) => identify.at);
      expect(times).toHaveLength(2);
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(IDENTIFY_WINDOW_MS);
    }
    for (const session of discord.shardSessions()) expect(session.guildIds).toEqual([guilds[session.shard[0]]!.id]);
  }, 20_000);

  it('refuses an identify over the limit with op 9, and discord.js identifies again once the window has passed', async () => {
    // Two processes, each a client with one shard, both in bucket 0: neither knows of the other's identify.
    const discord = await standIn({ shards: 2, maxConcurrency: 1 });
    const onZero = discord.createGuild({ shard: [0, 2] });
    const onOne = discord.createGuild({ shard: [1, 2] });
    const first = bot(discord, 'first', [0], 2);
    const second = bot(discord, 'second', [1], 2);
    await Promise.all([login(discord, first), login(discord, second)]);

    const accepted = discord.identifies.filter((identify) => identify.outcome === 'accepted');
    const refused = discord.identifies.filter((identify) => identify.outcome !== 'accepted');
    expect(accepted.map((identify) => identify.shard?.[0]).sort()).toEqual([0, 1]);
    expect(accepted[1]!.at - accepted[0]!.at).toBeGreaterThanOrEqual(IDENTIFY_WINDOW_MS);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.every((identify) => identify.outcome === 'rate-limited' && identify.overLimit && identify.bucket === 0)).toBe(true);
    expect(refused[0]!.shard).toEqual(accepted[1]!.shard);
    expect(cached(first)).toEqual([onZero.id]);
    expect(cached(second)).toEqual([onOne.id]);
  }, 20_000);
});

describe('frame by frame', () => {
  /** A raw connection that identified as `shard` (none: no `shard` field); resolves at READY, or with the refusal. */
  async function identify(discord: DiscordStandIn, shard?: unknown, gateway?: RawGateway): Promise<{ gateway: RawGateway; answer: Frame }> {
    const connection = gateway ?? (await connect(discord));
    connection.send(2, {
      token: discord.botToken,
      intents: GUILDS | GUILD_VOICE_STATES,
      properties: { os: 'linux', browser: 'test', device: 'test' },
      ...(shard === undefined ? {} : { shard }),
    });
    const answer = await connection.next((frame) => frame.op === 9 || (frame.op === 0 && frame.t === 'READY'));
    return { gateway: connection, answer };
  }

  async function connect(discord: DiscordStandIn): Promise<RawGateway> {
    const gateway = new RawGateway(`${discord.apiUrl.replace(/^http/, 'ws').replace(/\/api$/, '')}/gateway`);
    raws.push(gateway);
    await gateway.next((frame) => frame.op === 10);
    return gateway;
  }

  async function closeCode(gateway: RawGateway): Promise<number> {
    const [code] = (await once(gateway.socket, 'close')) as [number];
    return code;
  }

  /** Guild ids of the GUILD_CREATEs `gateway` received. */
  function created(gateway: RawGateway): string[] {
    return gateway.frames
      .filter((frame) => frame.t === 'GUILD_CREATE')
      .map((frame) => String(field(frame.d, 'id')))
      .sort();
  }

  it("sends each session READY with its shard and only its guilds, and its guilds' GUILD_CREATEs alone", async () => {
    const discord = await standIn({ shards: 2, identifyWindowMs: 0 });
    const onZero = discord.createGuild({ shard: [0, 2] });
    const onOne = [discord.createGuild({ shard: [1, 2] }), discord.createGuild({ shard: [1, 2] })];
    const { gateway, answer } = await identify(discord, [1, 2]);
    expect(answer.d).toMatchObject({ shard: [1, 2] });
    expect((field(answer.d, 'guilds') as unknown[]).map((guild) => field(guild, 'id')).sort()).toEqual(sortedIds(onOne));
    await gateway.next((frame) => frame.t === 'GUILD_CREATE' && frame.s === 3);
    expect(created(gateway)).toEqual(sortedIds(onOne));

    const unsharded = await identify(discord);
    expect(unsharded.answer.d).toMatchObject({ shard: [0, 1] });
    expect(field(unsharded.answer.d, 'guilds')).toHaveLength(3);
    const zero = await identify(discord, [0, 2]);
    await zero.gateway.dispatch('GUILD_CREATE');
    expect(created(zero.gateway)).toEqual([onZero.id]);
  });

  it('lets a second session identify for a shard that is connected: both receive its events (Discord allows it)', async () => {
    const discord = await standIn({ shards: 2, identifyWindowMs: 0 });
    const guild = discord.createGuild({ shard: [1, 2] });
    const one = await identify(discord, [1, 2]);
    const again = await identify(discord, [1, 2]);
    expect(field(again.answer.d, 'session_id')).not.toBe(field(one.answer.d, 'session_id'));
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    for (const { gateway } of [one, again])
      expect((await gateway.dispatch('VOICE_STATE_UPDATE')).d).toMatchObject({ guild_id: guild.id, user_id: guild.member.id });
    expect(
      discord
        .shardSessions()
        .filter((session) => session.connected)
        .map((session) => session.shard),
    ).toEqual([
      [1, 2],
      [1, 2],
    ]);
  });

  it('routes sessions with different shard counts each by its own count', async () => {
    const discord = await standIn({ identifyWindowMs: 0 });
    // Shard 1 of 2 and shard 1 of 3 at once: a guild reaches each session whose formula picks it.
    const guilds = [discord.createGuild({ shard: [1, 6] }), discord.createGuild({ shard: [4, 6] }), discord.createGuild({ shard: [5, 6] })];
    const ofTwo = await identify(discord, [1, 2]);
    const ofThree = await identify(discord, [1, 3]);
    const expectOn = (count: number) =>
      guilds
        .filter((guild) => shardOfGuild(guild.id, count) === 1)
        .map((guild) => guild.id)
        .sort();
    expect((field(ofTwo.answer.d, 'guilds') as unknown[]).map((guild) => field(guild, 'id')).sort()).toEqual(expectOn(2));
    expect((field(ofThree.answer.d, 'guilds') as unknown[]).map((guild) => field(guild, 'id')).sort()).toEqual(expectOn(3));
  });

  it('closes 4010 for a shard outside 0..count-1 or a malformed one, and 4005 for a second IDENTIFY on one socket', async () => {
    const discord = await standIn({ shards: 2, identifyWindowMs: 0 });
    for (const shard of [[2, 2], [0, 0], [-1, 2], [0.5, 2], 'all', [0]]) {
      const gateway = await connect(discord);
      const closed = closeCode(gateway);
      gateway.send(2, { token: discord.botToken, intents: GUILDS, properties: {}, shard });
      expect(await closed).toBe(4010);
    }
    const { gateway } = await identify(discord, [0, 2]);
    const closed = closeCode(gateway);
    gateway.send(2, { token: discord.botToken, intents: GUILDS, properties: {}, shard: [1, 2] });
    expect(await closed).toBe(4005);
    expect(discord.identifies.map((record: IdentifyRecord) => record.outcome)).toEqual([
      ...Array<string>(6).fill('invalid-shard'),
      'accepted',
      'already-authenticated',
    ]);
  });

  it("ignores the bot's voice state update sent over another shard than its guild's, and logs it", async () => {
    const logged: string[] = [];
    const discord = await standIn({
      shards: 2,
      identifyWindowMs: 0,
      log: createLogger({ level: 'warn', write: (line) => logged.push(line) }),
    });
    const onZero = discord.createGuild({ shard: [0, 2] });
    const onOne = discord.createGuild({ shard: [1, 2] });
    const { gateway } = await identify(discord, [0, 2]);
    gateway.send(4, { guild_id: onOne.id, channel_id: onOne.voiceChannelId, self_deaf: false, self_mute: false });
    gateway.send(4, { guild_id: onZero.id, channel_id: onZero.voiceChannelId, self_deaf: false, self_mute: false });
    await gateway.dispatch('VOICE_SERVER_UPDATE');
    expect(discord.botVoiceChannel(onZero.id)).toBe(onZero.voiceChannelId);
    expect(discord.botVoiceChannel(onOne.id)).toBeUndefined();
    expect(logged.join('\n')).toContain('sent on another shard');
  });

  it("refuses a sharded identify within its bucket's window with op 9 d:false and takes it after; an unsharded one is only marked", async () => {
    // Long enough that the second identify (a new socket, hello, identify) lands inside it on a busy
    // machine too; the test waits out the rest.
    const windowMs = 1_500;
    const discord = await standIn({ shards: 2, maxConcurrency: 1, identifyWindowMs: windowMs });
    const first = await identify(discord, [0, 2]);
    expect(first.answer.t).toBe('READY');
    const refused = await identify(discord, [1, 2]);
    expect(refused.answer).toMatchObject({ op: 9, d: false });
    expect(discord.shardSessions().map((session) => session.shard)).toEqual([[0, 2]]);

    // The window is a matter of time: wait it out, then the same socket identifies.
    await new Promise((resolve) => setTimeout(resolve, discord.identifies[0]!.at + windowMs - Date.now()));
    const taken = await identify(discord, [1, 2], refused.gateway);
    expect(taken.answer.t).toBe('READY');

    const unsharded = await identify(discord);
    expect(unsharded.answer.t).toBe('READY');
    expect(discord.identifies.map(({ shard, bucket, outcome, overLimit }) => ({ shard, bucket, outcome, overLimit }))).toEqual([
      { shard: [0, 2], bucket: 0, outcome: 'accepted', overLimit: false },
      { shard: [1, 2], bucket: 0, outcome: 'rate-limited', overLimit: true },
      { shard: [1, 2], bucket: 0, outcome: 'accepted', overLimit: false },
      { shard: [0, 1], bucket: 0, outcome: 'accepted', overLimit: true },
    ]);
  });
});
