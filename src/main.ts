import { enableCompileCache } from 'node:module';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { REST } from 'discord.js';
import type { App } from './app.ts';
import type { BotConfig } from './config.ts';
import type { ClientShards } from './discord/client.ts';
import { createLogger, registerSecret, type Logger } from './lib/log.ts';
import { describeShards, isSingleProcess, planShards, type ShardPlan } from './shards/plan.ts';
import { startOpsServer, type OpsServer } from './ops/server.ts';
import { EXIT_REFUSED_FOR_GOOD, Supervisor, WORKER_SHARDS_VARIABLE, WORKER_SHARD_COUNT_VARIABLE } from './shards/supervisor.ts';
import { createShutdown, EXIT_FAILURE, SHUTDOWN_DEADLINE_MS, type RepeatedStop } from './shutdown.ts';

// `npm start`: configuration from the environment (and .env), then until SIGINT or SIGTERM either the
// bot in this process (one shard in all, SHARD_IDS unset: as before sharding), or a supervisor of worker
// processes, each the bot on its shards (src/shards/).

// Loading the modules is most of the start's work on the event loop, and an import runs whole, without a
// turn of the loop between its modules: loaded at once, they held the loop 1-2 s on 2 busy cores. They
// are loaded a slice at a time, each in a turn of its own, so that nothing waits for them all at once
// (the ops port's answers, a signal); the longest slice is discord.js's, about a quarter of a second
// (`npm run bench -- --only start`). V8's compiled code is kept between starts (module.enableCompileCache(),
// in the system's temporary directory, or NODE_COMPILE_CACHE's), which halves the time to ready.
enableCompileCache();

/** The bot's modules in the order they are loaded, each pulling in what it needs that is not loaded yet. */
const LOADED_IN_TURNS = [
  // discord.js, the largest: its modules load in one piece (CommonJS).
  './discord/client.ts',
  // The catalogs, compiled.
  './i18n/index.ts',
  // zod and the prices.
  './config.ts',
  // keyv and SQLite (the Redis client only when the store is Redis).
  './store/index.ts',
  // prom-client.
  './ops/worker-metrics.ts',
  // The gateway's clients, ws.
  './gateway/pool.ts',
  // @discordjs/voice and libopus.
  './voice/voice-connection.ts',
  './voice/service.ts',
  './video/index.ts',
  './settings/service.ts',
  './app.ts',
  './interactions/registry.ts',
] as const;

for (const module of LOADED_IN_TURNS) {
  await import(module);
  await nextTurn();
}

const { registerBotCommands, startApp } = await import('./app.ts');
const { loadConfig, readEnvironment } = await import('./config.ts');
const { createDiscordRest, fetchApplicationId, fetchGatewayBot, membersIntentAllowed } = await import('./discord/client.ts');
const { inviteUrl } = await import('./discord/invite.ts');
const { explainStartFailure, isDiscordRefusal, isRefusedForGood, membersIntentRefused, retryUntilDone, untilAborted } =
  await import('./discord/retry.ts');
const { loadCommands } = await import('./interactions/registry.ts');
const { OPS_QUESTION, aggregateWorkerMetrics, aggregateWorkerReadiness } = await import('./ops/worker-metrics.ts');
const { STORE_DEADLINE_MS } = await import('./store/index.ts');

/** Configuration to fix (a variable, or the application's settings on Discord): starting again changes nothing. */
const EXIT_CONFIG = EXIT_REFUSED_FOR_GOOD;
/** The supervisor gives its workers their own shutdown time, and a little more, before it kills them. */
const WORKER_STOP_DEADLINE_MS = SHUTDOWN_DEADLINE_MS + 2_000;
/** A worker's readiness waits on its store for up to STORE_DEADLINE_MS; the supervisor waits a little longer for the answer. */
const OPS_ANSWER_DEADLINE_MS = STORE_DEADLINE_MS + 1_000;

function refuse(problems: string[]): never {
  process.stderr.write(
    `The bot cannot start; fix these variables (in the environment or .env):\n${problems.map((problem) => `  - ${problem}`).join('\n')}\n`,
  );
  process.exit(EXIT_CONFIG);
}

/** The shards the supervisor gave this process, when it is a worker. */
function workerShards(environment: NodeJS.ProcessEnv): ClientShards | undefined {
  const ids = environment[WORKER_SHARDS_VARIABLE];
  const count = Number(environment[WORKER_SHARD_COUNT_VARIABLE]);
  if (ids === undefined || !Number.isInteger(count)) return undefined;
  return { ids: ids.split(',').map(Number), count };
}

/** The shard count (asking Discord when it is "auto") and this machine's workers. */
async function resolvePlan(config: BotConfig, rest: REST, log: Logger, signal: AbortSignal): Promise<ShardPlan> {
  let count = config.sharding.count;
  if (count === 'auto') {
    try {
      count = (
        await retryUntilDone(() => fetchGatewayBot(rest), {
          operation: 'asking Discord for the shard count',
          log,
          signal,
          isFinal: isDiscordRefusal,
        })
      ).shards;
    } catch (error) {
      throw explainStartFailure(error);
    }
  }
  const planned = planShards(config.sharding, count);
  if (!planned.ok) refuse([planned.message]);
  return planned.plan;
}

/**
 * With FORGET_MEMBERS_WHO_LEAVE=on, throws the refusal Discord's 4014 would bring when the application's
 * flags say the portal does not allow Server Members: told before any gateway connection, no session start
 * is spent on it (of Discord's 1,000 a day), however often a service manager starts the bot again. Flags
 * that cannot be read refuse nothing: Discord decides at the identify, as before.
 */
async function checkMembersIntent(config: BotConfig, rest: REST, log: Logger, signal: AbortSignal): Promise<void> {
  if (!config.forgetMembersWhoLeave) return;
  let allowed: boolean | undefined;
  let error: unknown;
  try {
    allowed = await untilAborted(membersIntentAllowed(rest), signal);
  } catch (failure) {
    if (signal.aborted) throw failure;
    error = failure;
  }
  if (allowed === false) throw membersIntentRefused();
  if (allowed === undefined)
    log.warn("could not read the application's flags; the Server Members intent is left to Discord's answer at connecting", {
      ...(error === undefined ? {} : { error }),
    });
}

function runBot(config: BotConfig, log: Logger, shards: ClientShards | undefined): void {
  const startup = new AbortController();
  const starting: Promise<App> = startApp(config, log, startup.signal, shards ? { shards } : {});
  starting.catch((error: unknown) => {
    // A start cancelled by a signal is the shutdown's to finish.
    if (startup.signal.aborted) return;
    log.error('the bot could not start', { error });
    // A refusal for good (a token, an intent) is not retried, here or by a supervisor: every attempt would
    // cost Discord a refused login or session start.
    process.exit(isRefusedForGood(error) ? EXIT_CONFIG : EXIT_FAILURE);
  });
  const shutdown = createShutdown({
    log,
    async stop() {
      startup.abort(new Error('shutting down before the bot was up'));
      // A cancelled start closes what it opened before it rejects.
      const app = await starting.catch(() => undefined);
      await app?.stop();
    },
    exit: (code) => process.exit(code),
  });
  if (!shards) {
    onSignals(shutdown, 'exit now');
    return;
  }
  // A worker (src/shutdown.ts): a signal sent to the process group reaches it and the supervisor, which
  // passes it on, so every signal is the same stop here. The supervisor alone counts a second one, and
  // then exits at once: its IPC channel closes, which ends this stop at once too. A supervisor that died
  // (killed, crashed) closes it as well, and the worker stops rather than run on unsupervised.
  onSignals(shutdown, 'same stop');
  const supervisorGone = () => void shutdown('supervisor gone', 'exit now');
  process.once('disconnect', supervisorGone);
  // Gone before this handler was in place (the worker was still loading).
  if (process.connected === false) supervisorGone();
}

async function runSupervisor(config: BotConfig, rest: REST, log: Logger, plan: ShardPlan, signal: AbortSignal): Promise<void> {
  if (config.storeUrl.startsWith('sqlite:') && (plan.workers.length > 1 || plan.ids.length < plan.count)) {
    const where =
      plan.workers.length > 1
        ? `${plan.workers.length} worker processes on this machine`
        : `shards ${describeShards(plan.ids)} of ${plan.count} here and the rest elsewhere`;
    refuse([
      `STORE_URL is the embedded SQLite store, which serves one process only, but SHARD_COUNT=${plan.count}, SHARD_IDS and SHARDS_PER_PROCESS make ${where}. ` +
        'Set STORE_URL=redis://<host>:<port> to a Redis server every worker and machine shares (or run one shard in one process).',
    ]);
  }
  const machine = typeof config.sharding.ids === 'object' ? config.sharding.ids : undefined;
  log.info('starting worker processes', {
    shardCount: plan.count,
    shards: describeShards(plan.ids),
    workers: plan.workers.map(describeShards),
    // SHARD_IDS=auto-ordinal: which ordinal this machine took, and from where (a wrong one holds another machine's shards).
    ...(machine ? { ordinal: machine.ordinal, ordinalFrom: machine.source } : {}),
  });
  // Once per start, here rather than in every worker; a shutdown ends registration retries too.
  const stopping = new AbortController();
  const running = AbortSignal.any([signal, stopping.signal]);
  const commands = await loadCommands();
  const applicationId = await retryUntilDone(() => fetchApplicationId(rest), {
    operation: 'looking up the application',
    log,
    signal,
    isFinal: isDiscordRefusal,
  });
  log.info('invite link', { url: inviteUrl(applicationId) });
  const registering = registerBotCommands(rest, applicationId, [...commands.values()], config, log, running).then((count) => {
    if (count !== undefined)
      log.info('commands registered', { commands: count, scope: config.devGuildId ? `guild ${config.devGuildId}` : 'global' });
  });
  const entry = process.argv[1];
  if (entry === undefined) throw new Error('the supervisor cannot tell which module to start its workers from');
  const supervisor = new Supervisor({
    plan,
    entry,
    execArgv: process.execArgv,
    env: process.env,
    log,
    stopDeadlineMs: WORKER_STOP_DEADLINE_MS,
  });
  // One ops port for the machine: every worker's metrics summed, ready when every worker is. Opened before
  // the workers start, so a port that cannot be had stops the start with no worker left behind.
  let ops: OpsServer | undefined;
  if (config.ops) {
    const askWorkers = () => supervisor.ask({ question: OPS_QUESTION }, OPS_ANSWER_DEADLINE_MS);
    ops = await startOpsServer({
      ...config.ops,
      metrics: async () => aggregateWorkerMetrics(await askWorkers()),
      readiness: async () => aggregateWorkerReadiness(await askWorkers()),
      log,
    });
  }
  // A worker refused for good (src/shards/supervisor.ts) stops them all: the bot cannot run without its shards.
  let refusedForGood = false;
  const shutdown = createShutdown({
    log,
    deadlineMs: WORKER_STOP_DEADLINE_MS + 3_000,
    async stop() {
      stopping.abort(new Error('shutting down'));
      await Promise.all([supervisor.stop(), registering]);
      await ops?.close();
    },
    exit: (code) => process.exit(refusedForGood ? EXIT_CONFIG : code),
  });
  supervisor.onRefusedForGood(() => {
    refusedForGood = true;
    void shutdown('a worker was refused for good');
  });
  supervisor.start();
  // A second signal here ends the supervisor at once, and with it its workers (see runBot).
  onSignals(shutdown, 'exit now');
}

function onSignals(shutdown: (signal: string, repeated: RepeatedStop) => Promise<void>, repeated: RepeatedStop): void {
  process.on('SIGINT', () => void shutdown('SIGINT', repeated));
  process.on('SIGTERM', () => void shutdown('SIGTERM', repeated));
}

const result = loadConfig(readEnvironment());
if (!result.ok) refuse(result.problems);

const { config } = result;
registerSecret(config.discordToken, true);
registerSecret(config.gatewayApiKey, true);
registerSecret(config.keyEncryptionSecret, true);
registerSecret(config.keyEncryptionSecretPrevious, true);
const rootLog = createLogger({ level: config.logLevel });
process.on('unhandledRejection', (reason) => rootLog.error('unhandled rejection', { error: reason }));

const assigned = workerShards(process.env);
if (assigned) {
  runBot(config, rootLog.child({ shards: describeShards(assigned.ids) }), assigned);
} else {
  // Until the plan is known a signal just ends the process: nothing has been opened yet.
  const planning = new AbortController();
  const stopPlanning = () => planning.abort(new Error('stopped before the bot started'));
  process.once('SIGINT', stopPlanning);
  process.once('SIGTERM', stopPlanning);
  try {
    const rest = createDiscordRest(config.discordApiUrl, config.discordToken);
    const plan = await resolvePlan(config, rest, rootLog, planning.signal);
    await checkMembersIntent(config, rest, rootLog, planning.signal);
    process.off('SIGINT', stopPlanning);
    process.off('SIGTERM', stopPlanning);
    if (isSingleProcess(config.sharding, plan)) runBot(config, rootLog, undefined);
    else await runSupervisor(config, rest, rootLog.child({ supervisor: true }), plan, planning.signal);
  } catch (error) {
    if (planning.signal.aborted) process.exit(0);
    rootLog.error('the bot could not start', { error });
    process.exit(isRefusedForGood(error) ? EXIT_CONFIG : EXIT_FAILURE);
  }
}
