import { Events, RESTEvents, Status, type Client, type REST } from 'discord.js';
import type { BotConfig } from './config.ts';
import { createDiscordClient, type ClientShards } from './discord/client.ts';
import { createDispatcher } from './interactions/dispatcher.ts';
import type { Command } from './interactions/command.ts';
import { loadCommands, registerCommands } from './interactions/registry.ts';
import { explainStartFailure, isDiscordRefusal, isTokenRefusal, retryUntilDone } from './discord/retry.ts';
import { DiscordOutbox } from './discord/outbox.ts';
import { inviteUrl } from './discord/invite.ts';
import { memberLeft } from './discord/member.ts';
import { CommandMentions } from './discord/command-mentions.ts';
import { ModelCatalog } from './gateway/model-catalog.ts';
import { GatewayClientPool } from './gateway/pool.ts';
import type { Logger } from './lib/log.ts';
import { resolveLocale, SUPPORTED_LOCALES, type Locale } from './i18n/index.ts';
import { notice, word } from './wording/notice.ts';
import { NO_METRICS, type BotMetrics } from './lib/metrics.ts';
import { createOpsMetrics, type OpsMetrics } from './ops/metrics.ts';
import { metricsOf, startOpsServer, type Readiness } from './ops/server.ts';
import { answerOpsQuestions } from './ops/worker-metrics.ts';
import type { Services } from './services.ts';
import { SettingsService } from './settings/service.ts';
import { defaultVoiceSettings } from './settings/voice-settings.ts';
import { describeShards, shardOfGuild } from './shards/plan.ts';
import { openStore, parseMarker, type Store } from './store/index.ts';
import { createVideo } from './video/index.ts';
import { pollPolicyWithInterval } from './video/poll-policy.ts';
import { VoiceVideo } from './video/voice-requests.ts';
import { CONVERSATION_RECORDS, conversationRecordParser } from './voice/conversation-record.ts';
import { parseMemberLines, TRANSCRIPT_LINES } from './voice/transcript-lines.ts';
import { VoiceService } from './voice/service.ts';
import { CONSENT_RECORDS, ConsentBook, parseConsentRecord } from './voice/consent.ts';
import { chooseOpusCodec, OPUS_CODEC_NAMES } from './voice/audio/opus-codec.ts';

export interface App {
  client: Client;
  /** Stops taking commands, lets those in flight finish, then closes Discord and the store. */
  stop(): Promise<void>;
}

/** Discord may be briefly unreachable or answer 5xx/429 at start: keep trying, but not after a refusal. */
async function loginWithRetry(client: Client, token: string, log: Logger, signal: AbortSignal): Promise<void> {
  // discord.js gives up on a shard Discord closed with a code that means "never again" (4014 Disallowed
  // intents, 4004, 4010-4013) and its login rejects with a bare Error; the code comes only with this event.
  let refusedWith: number | undefined;
  const onGaveUp = (event: { code: number }) => {
    refusedWith = event.code;
  };
  client.on(Events.ShardDisconnect, onGaveUp);
  try {
    await retryUntilDone(() => client.login(token), {
      operation: 'login',
      log,
      signal,
      isFinal: (error) => isTokenRefusal(error) || isDiscordRefusal(error) || refusedWith !== undefined,
    });
  } catch (error) {
    throw explainStartFailure(error, refusedWith);
  } finally {
    client.off(Events.ShardDisconnect, onGaveUp);
  }
}

/** What to check when Discord refuses the commands (4xx): the usual cause, named by its variable. */
function registrationRefusalHint(devGuildId: string | undefined): string {
  return devGuildId
    ? `Discord refused to register the commands on DEV_GUILD_ID ${devGuildId}: is the bot a member of that server, invited with the applications.commands scope? Remove DEV_GUILD_ID to register them globally.`
    : 'Discord refused the command definitions: see the error for the field it names.';
}

/**
 * Registers the slash commands (on DEV_GUILD_ID, or globally), retrying while Discord is unreachable;
 * a refusal (4xx) is logged with what to check. Resolves with how many, or undefined when it failed or
 * `signal` ended it.
 */
export async function registerBotCommands(
  rest: REST,
  applicationId: string,
  commands: readonly Command[],
  config: BotConfig,
  log: Logger,
  signal: AbortSignal,
): Promise<number | undefined> {
  if (config.devGuildId && config.userInstalls.enabled)
    log.warn("USER_INSTALLS=on needs global commands: with DEV_GUILD_ID they are one server's, which no member's own install is offered");
  try {
    return await retryUntilDone(() => registerCommands(rest, applicationId, commands, config.devGuildId, config.userInstalls.enabled), {
      operation: 'command registration',
      log,
      signal,
      isFinal: isDiscordRefusal,
    });
  } catch (error) {
    // Only a refusal (4xx) ends the retries, or a shutdown.
    if (!signal.aborted) log.error('could not register commands', { hint: registrationRefusalHint(config.devGuildId), error });
    return undefined;
  }
}

/** Runs every step even when one fails (a stuck voice connection must not keep the store open). */
async function closeInOrder(steps: [what: string, close: () => Promise<unknown>][], log: Logger): Promise<string[]> {
  const failed: string[] = [];
  for (const [what, close] of steps) {
    try {
      await close();
    } catch (error) {
      failed.push(what);
      log.error(`could not close ${what}`, { error });
    }
  }
  return failed;
}

export interface StartOptions {
  /**
   * A worker of a sharded bot: the shards it holds. It answers, follows the tasks of and talks in only
   * the guilds of those shards; the supervisor registers the commands.
   */
  shards?: ClientShards;
}

/** Ready when every shard of this process is connected to Discord and the store answers; else why not. */
async function readiness(client: Client, store: Store, ping: { get(id: string): Promise<unknown> }): Promise<Readiness> {
  const shards = [...client.ws.shards.values()];
  if (shards.length === 0) return { ready: false, reason: 'not connected to Discord yet' };
  const down = shards.filter((shard) => shard.status !== Status.Ready).map((shard) => shard.id);
  if (down.length > 0) return { ready: false, reason: `not connected to Discord on shard ${down.join(', ')}` };
  try {
    await ping.get('ping');
  } catch (error) {
    return {
      ready: false,
      reason: `the ${store.kind} store does not answer (STORE_URL): ${error instanceof Error ? error.name : 'error'}`,
    };
  }
  return { ready: true };
}

/** The longest a shutdown waits for the moderation logs' last lines (its whole deadline is 10 s). */
const MODERATION_LOG_FLUSH_MS = 2_000;

const TOO_MANY_REQUESTS = 429;
const SERVER_ERRORS_FROM = 500;

/** Counts Discord's 429s, and the answers discord.js's REST client tries again after (a 429, a 5xx). */
function countDiscordRest(client: Client, metrics: BotMetrics): void {
  client.rest.on(RESTEvents.RateLimited, (info) => metrics.discordRateLimited(info.global));
  client.rest.on(RESTEvents.Response, (_request, response) => {
    if (response.status === TOO_MANY_REQUESTS || response.status >= SERVER_ERRORS_FROM) metrics.discordRetry();
  });
}

/**
 * Starts the bot. Aborting `signal` cancels a start still under way (login retries included): what was
 * opened is closed and the promise rejects with the signal's reason.
 */
export async function startApp(
  config: BotConfig,
  log: Logger,
  signal: AbortSignal = new AbortController().signal,
  options: StartOptions = {},
): Promise<App> {
  const { shards } = options;
  const commands = await loadCommands();
  const store = await openStore(config.storeUrl, log);
  // The ops port counts from the start, and answers /readyz 503 until Discord is connected. A worker of a
  // sharded start serves no port: it answers its supervisor, which serves one for the machine.
  let ops: { close(): Promise<void> } | undefined;
  const opsMetrics: OpsMetrics | undefined = config.ops ? createOpsMetrics({ followedVideoTasks: () => video.tracker.size }) : undefined;
  const metrics: BotMetrics = opsMetrics ?? NO_METRICS;
  const readinessPing = store.collection('ops_readiness', (raw): unknown => raw);
  // A worker's shards take turns identifying with every other worker's, through the shared store.
  const identifyBuckets = store.collection('identify_buckets', parseMarker);
  const client = createDiscordClient(config.discordApiUrl, {
    ...(shards
      ? { shards, claimIdentify: async (bucket, ttlMs) => (await identifyBuckets.setIfAbsent(String(bucket), true, ttlMs)).created }
      : {}),
    membersIntent: config.forgetMembersWhoLeave,
  });
  countDiscordRest(client, metrics);
  const outbox = new DiscordOutbox(client.rest, { log: log.child({ part: 'discord/outbox' }) });
  /** A server's language (its Community setting, which GUILD_CREATE carries): what everyone there reads and hears is in it. */
  const guildLocale = (guildId: string): Locale => resolveLocale(undefined, client.guilds.cache.get(guildId)?.preferredLocale, 'channel');
  const clients = new GatewayClientPool({
    baseUrl: config.gatewayBaseUrl,
    vendor: config.gatewayVendor,
    paths: { edits: config.gatewayEditPath, extensions: config.gatewayExtensionPath },
    ...(config.downloadAllowedHosts ? { downloadAllowedHosts: config.downloadAllowedHosts } : {}),
    log,
    metrics,
  });
  const settings = new SettingsService({
    store,
    clients,
    log,
    operatorKey: config.gatewayApiKey,
    defaultLayer: config.gatewayLayer,
    gatewayVendor: config.gatewayVendor,
    encryptionSecret: config.keyEncryptionSecret,
    previousEncryptionSecret: config.keyEncryptionSecretPrevious,
    prices: config.prices,
    postAlert: (guildId, channelId, alert) => outbox.say(channelId, word(guildLocale(guildId), alert)),
    // A log line quotes prompts, which may hold any link: no previews.
    postLog: (channelId, content) => outbox.say(channelId, content, { linkPreviews: false }),
    serverLocale: guildLocale,
    metrics,
    userInstallLimits: config.userInstalls,
  });
  const moderationLog = settings.moderationLog;
  const ownsGuild = shards && ((guildId: string) => shards.ids.includes(shardOfGuild(guildId, shards.count)));
  const video = createVideo({
    store,
    clients,
    ...(ownsGuild ? { ownsGuild } : {}),
    policy: settings,
    costs: settings,
    outbox,
    vendor: config.gatewayVendor,
    log,
    metrics,
    pollPolicy: pollPolicyWithInterval(config.taskPollIntervalMs),
    moderationLog,
  });
  const models = new ModelCatalog({
    clients,
    vendor: config.gatewayVendor,
    credentialsFor: async (guildId) => {
      const access = await settings.resolveGatewayAccess(guildId);
      return access.ok ? access : undefined;
    },
  });
  // The model's video tools run as the members who spoke: /video's role rules, the moderators' denied
  // members, limits, key and defaults. What they are told is spoken and posted where the whole channel
  // hears it: in the server's language.
  const videoRequests = new VoiceVideo({
    prepare: video.prepare,
    submit: (plan, context) => video.submit(plan, context),
    tasks: video.tasks,
    outbox,
    mayUseVideo: (guildId, member) => settings.mayUse(guildId, 'video', member.roleIds, member.isServerManager),
    deniedMembers: async (guildId) => (await settings.rules(guildId)).denied,
    serverContext: (guildId) => ({ guildLocale: guildLocale(guildId) }),
    currentPlace: (task) => video.sender.currentPlace(task),
    moderationLog,
    log,
  });
  const mentions = new CommandMentions({ rest: client.rest, applicationId: () => client.application?.id, log });
  // Settled before any conversation makes a codec: every encoder and decoder of the process runs this one.
  const opus = chooseOpusCodec(config.opusCodec);
  log.info('opus codec', {
    codec: OPUS_CODEC_NAMES[opus.codec],
    ...(opus.nativeMissing === undefined ? {} : { nativeMissing: opus.nativeMissing }),
  });
  const voice = new VoiceService({
    client,
    outbox,
    access: settings,
    settings,
    wsBaseUrl: config.gatewayWsUrl,
    metrics,
    spending: settings.spending,
    videoRequests,
    conversations: store.collection(
      CONVERSATION_RECORDS,
      conversationRecordParser(defaultVoiceSettings(config.gatewayVendor), SUPPORTED_LOCALES),
    ),
    transcriptLines: store.collection(TRANSCRIPT_LINES, parseMemberLines),
    moderationLog,
    consent: new ConsentBook(store.collection(CONSENT_RECORDS, parseConsentRecord)),
    mentions,
    log,
  });
  if (config.forgetMembersWhoLeave) {
    // A member who leaves (or is kicked) is forgotten as /voice forget-me forgets them.
    client.on('raw', (packet: unknown) => {
      const left = memberLeft(packet);
      if (!left) return;
      voice.forgetMember(left.guildId, left.userId).catch((error: unknown) => {
        log.warn('could not forget a member who left the server', { guild: left.guildId, error });
      });
    });
  }
  video.tracker.onFinished((task) => {
    // A member's own install has no conversation of a server to tell.
    if (task.state === 'succeeded' && !task.outcome.moderated && !task.userInstall) {
      voice.announce(task.guildId, notice('voice.spoken.video-ready', { what: task.prompt.slice(0, 80) || task.operation }));
    }
  });
  const services: Services = { config, log, store, settings, models, video, voice, mentions };
  const dispatcher = createDispatcher(commands, services, {
    userInstalls: config.userInstalls.enabled,
    featureAccess: (guildId, feature, roles, isManager) => settings.mayUse(guildId, feature, roles, isManager),
    serverRules: (guildId) => settings.rules(guildId),
    moderationLog,
  });

  client.on(Events.Error, (error) => log.error('discord client error', { error }));
  client.on(Events.Warn, (message) => log.warn('discord client warning', { detail: message }));
  client.on(Events.InteractionCreate, (interaction) => {
    void dispatcher.handle(interaction);
  });
  // Background work that must end with the bot: a shutdown, or a start cut short.
  const stopping = new AbortController();
  const running = AbortSignal.any([signal, stopping.signal]);
  client.once(Events.ClientReady, (ready) => {
    // One process at a time holds these shards of this application: the claims on the key lines of videos
    // an earlier run of it left (a crash between a claim and its report) are its own to release now.
    const worker = `${ready.application.id}:${shards ? `shards ${describeShards(shards.ids)} of ${shards.count}` : 'unsharded'}`;
    video.sender.releaseEarlierClaims(worker).then(
      (lines) => {
        if (lines > 0) log.info("released the video claims an earlier run left on keys' lines", { lines });
      },
      (error: unknown) => log.warn("could not release an earlier run's video claims; they are handed out when their lease ends", { error }),
    );
    video.tracker.resume(ownsGuild).then(
      (count) => log.info('following unfinished video tasks', { count }),
      (error: unknown) => log.error('could not resume unfinished video tasks', { error }),
    );
    // Voice conversations a restart (or a crash) interrupted, in this process's guilds.
    voice.resume(ownsGuild).then(
      (count) => log.info('voice conversations brought back', { count }),
      (error: unknown) => log.error('could not bring back voice conversations', { error }),
    );
    if (shards) {
      log.info('ready', { user: ready.user.id, guilds: ready.guilds.cache.size, shardCount: shards.count });
      return;
    }
    log.info('invite link', { url: inviteUrl(ready.application.id) });
    void registerBotCommands(client.rest, ready.application.id, [...commands.values()], config, log, running).then((count) => {
      // Registering may have given the commands new ids: mentions read them afresh.
      mentions.forget();
      if (count !== undefined)
        log.info('ready', {
          user: ready.user.id,
          guilds: ready.guilds.cache.size,
          commands: count,
          scope: config.devGuildId ? `guild ${config.devGuildId}` : 'global',
        });
    });
  });

  try {
    if (config.ops && opsMetrics) {
      const { registry } = opsMetrics;
      const ready = () => readiness(client, store, readinessPing);
      if (shards) {
        const stopAnswering = answerOpsQuestions(registry, ready, log);
        ops = {
          close: () => {
            stopAnswering();
            return Promise.resolve();
          },
        };
      } else {
        ops = await startOpsServer({ ...config.ops, metrics: () => metricsOf(registry), readiness: ready, log });
      }
    }
    await loginWithRetry(client, config.discordToken, log, signal);
  } catch (error) {
    stopping.abort();
    await closeInOrder(
      [
        ['the ops port', async () => ops?.close()],
        ['the Discord client', () => client.destroy()],
        ['the gateway clients', () => clients.close()],
        ['the store', () => store.close()],
      ],
      log,
    );
    throw error;
  }

  return {
    client,
    async stop() {
      stopping.abort();
      log.info('shutting down: finishing what is in flight');
      await dispatcher.drain();
      const failed = await closeInOrder(
        [
          ['voice connections', () => voice.stopAll()],
          ['the key lines of videos', () => video.sender.stop()],
          ['the task tracker', () => video.tracker.stop()],
          ['the confirmations waiting to expire', () => Promise.resolve(video.confirmations.stop())],
          // After the voice conversations and the jobs, whose last lines it posts.
          ['the moderation logs', () => moderationLog.flush(MODERATION_LOG_FLUSH_MS)],
          ['the Discord client', () => client.destroy()],
          ['the gateway clients', () => clients.close()],
          ['the store', () => store.close()],
          ['the ops port', async () => ops?.close()],
        ],
        log,
      );
      if (failed.length > 0) throw new Error(`shutdown could not close ${failed.join(', ')}`);
      log.info('stopped');
    },
  };
}
