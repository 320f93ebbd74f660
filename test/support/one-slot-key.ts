import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REST } from 'discord.js';
import { startDiscordStandIn, type DiscordStandIn, type TestGuild } from 'discord-standin';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { createVideo, type Video } from '../../src/video/index.ts';
import { DEFAULT_POLL_POLICY } from '../../src/video/poll-policy.ts';
import type { TaskRecord } from '../../src/video/record.ts';
import { voiceRequestCard } from '../../src/video/status-card.ts';
import { openVideoPolicy } from './open-policy.ts';
import type { GuildVideoPolicy } from '../../src/ports/guild-policy.ts';
import { generationInput, memberContext } from './video-request.ts';

// The video part in this process on the gateway emulator, whose key takes one video at a time
// (`keys.<key>.limits.concurrent_tasks: 1`) and whose videos take minutes: the first video asked for runs,
// and every later one waits in the key's line (the 2nd is sent, refused with 429, and put back first).
// Cards are channel messages on the Discord stand-in, as for a video asked for by voice.

const ONE_SLOT_KEY = 'one-slot-key-0123456789';

export interface OneSlotKey {
  video: Video;
  discord: DiscordStandIn;
  guild: TestGuild;
  outbox: DiscordOutbox;
  /** A video of `prompt` asked for by `userId` in the server's text channel, as submit() answers it. */
  ask(userId: string, prompt: string): Promise<TaskRecord>;
  stop(): Promise<void>;
}

/** `policy`: methods of the server's open policy to replace (to watch what is reserved and given back, say). */
export async function startOneSlotKey(options: { policy?: Partial<Omit<GuildVideoPolicy, 'defaults'>> } = {}): Promise<OneSlotKey> {
  const emulator: Emulator = await startEmulator({
    config: {
      keys: { [ONE_SLOT_KEY]: { group: 'default', quota_usd: 50, limits: { concurrent_tasks: 1 } } },
      // Longer than any test: the key's one slot stays taken.
      timing: { generation_ms: 600_000 },
    },
    onlyGivenKeys: true,
  });
  const discord = await startDiscordStandIn();
  const guild = discord.createGuild();
  const directory = mkdtempSync(join(tmpdir(), 'one-slot-key-'));
  const store: Store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  const rest = new REST({ api: discord.apiUrl }).setToken(discord.botToken);
  const outbox = new DiscordOutbox(rest);
  const clients = new GatewayClientPool({ baseUrl: emulator.baseUrl, log: silentLogger });
  const policy = openVideoPolicy({
    access: { apiKey: ONE_SLOT_KEY, keyId: 'one-slot-key' },
    defaults: { duration: 2, storage: { keepDays: 7, publicLink: false } },
    ...options.policy,
  });
  const video = createVideo({
    store,
    clients,
    policy,
    outbox,
    vendor: 'svc',
    log: silentLogger,
    pollPolicy: { ...DEFAULT_POLL_POLICY, intervalMs: 50, maxIntervalMs: 50 },
    cardEditIntervalMs: 0,
  });

  async function ask(userId: string, prompt: string): Promise<TaskRecord> {
    const context = memberContext({ guildId: guild.id, channelId: guild.textChannelId, userId });
    const prepared = await video.prepare.generation(context, generationInput(prompt));
    if (!prepared.ok) throw new Error(`the video was refused: ${JSON.stringify(prepared.notice)}`);
    const { messageId } = await outbox.postCard(guild.textChannelId, voiceRequestCard(userId));
    return video.submit(prepared.plan, { ...context, cardMessageId: messageId });
  }

  return {
    video,
    discord,
    guild,
    outbox,
    ask,
    async stop() {
      await video.sender.stop();
      await video.tracker.stop();
      await clients.close();
      await store.close();
      rest.clearHashSweeper();
      rest.clearHandlerSweeper();
      await discord.close();
      await emulator.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
