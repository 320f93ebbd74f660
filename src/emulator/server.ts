import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { silentLogger, type Logger } from '../lib/log.ts';
import { resolveConfig, type EmulatorConfig, type EmulatorConfigInput } from './config.ts';
import { Connections } from './connections.ts';
import {
  HttpError,
  invalidTargetError,
  layerOfPath,
  MAX_HEADER_BYTES,
  missingHostError,
  newRequestId,
  parseRequestTarget,
} from './http.ts';
import { KeyRegistry, keyIdOf } from './keys.ts';
import { attachRealtime, type RealtimeHandle } from './realtime/index.ts';
import { RequestJournal, type JournalEntry } from './request-journal.ts';
import { answerFailure, createRoutes } from './routes.ts';
import { TaskEngine, type Upload } from './tasks.ts';
import {
  DEFAULT_BIND_HOST,
  generateCertificate,
  parsePublicUrl,
  reachableHost,
  urlHost,
  type EmulatorTls,
  type GeneratedCertificate,
} from './hosting.ts';

// A local gateway faithful to docs/gateway.md, for development, demos, tests and benchmarks: both layers,
// edits and extensions, quotas and limits, storage and uploads, realtime voice, and prompt triggers.
// startEmulator composes it: the routes (routes.ts), the request journal (request-journal.ts), the
// connections and their faults (connections.ts), and the realtime side (realtime/).

export type { JournalEntry } from './request-journal.ts';

export interface EmulatorOptions {
  config?: EmulatorConfigInput;
  port?: number;
  /** The address to listen on; default 127.0.0.1. */
  host?: string;
  /**
   * Serve HTTPS and WSS (on the same port): `true` with a self-signed certificate made at start for
   * localhost, 127.0.0.1, ::1, `host` and the public URL's host (see `caCert`), or one's own PEM pair.
   */
  tls?: EmulatorTls;
  /**
   * The base of every URL the emulator gives out (video urls, `baseUrl`, `wsUrl`) instead of its
   * listening address: how clients elsewhere (another machine, behind a proxy) reach it.
   */
  publicUrl?: string;
  log?: Logger;
  /** Use only the configured keys (a configuration file), not also the default `emulator-key`. */
  onlyGivenKeys?: boolean;
}

export interface Emulator {
  /** The base of the URLs the emulator gives out: the public URL when given, else `listenUrl`. */
  readonly baseUrl: string;
  /** `baseUrl` as a websocket URL (`ws:` or `wss:`). */
  readonly wsUrl: string;
  /** Where it listens: `http(s)://<host>:<port>`, 127.0.0.1 for a wildcard host. */
  readonly listenUrl: string;
  /** The certificate made at start (PEM), to trust as an authority (`ca`); undefined without TLS or with one's own. */
  readonly caCert: string | undefined;
  /** Its file, for NODE_EXTRA_CA_CERTS; removed by close(). */
  readonly caCertPath: string | undefined;
  readonly port: number;
  readonly config: EmulatorConfig;
  readonly requests: JournalEntry[];
  waitForRequest(predicate: (entry: JournalEntry) => boolean, timeoutMs?: number): Promise<JournalEntry>;
  quotaUsd(key: string): number;
  keyIdOf(key: string): string;
  readonly uploads: Upload[];
  readonly realtime: RealtimeHandle;
  close(): Promise<void>;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const config = resolveConfig(options.config, { onlyGivenKeys: options.onlyGivenKeys ?? false });
  const publicUrl = options.publicUrl === undefined ? undefined : parsePublicUrl(options.publicUrl);
  const bindHost = options.host ?? DEFAULT_BIND_HOST;
  const log = options.log ?? silentLogger;
  const keys = new KeyRegistry(config);
  const engine = new TaskEngine(config, keys, log);
  const journal = new RequestJournal();
  const generated: GeneratedCertificate | undefined =
    options.tls === true ? await generateCertificate([bindHost, ...(publicUrl ? [publicUrl.host] : [])]) : undefined;
  const identity = options.tls === true ? generated : options.tls;
  const connections = new Connections({ tls: identity !== undefined, log, record: (entry) => journal.record(entry) });
  // The realtime side is attached once the server listens, before any request is routed.
  const route = createRoutes({ config, keys, engine, journal, realtime: () => realtime });

  /** Every request Node parsed; `refusal` answers it without routing (an expectation the emulator cannot meet). */
  function handle(request: IncomingMessage, response: ServerResponse, refusal?: HttpError): void {
    const requestId = newRequestId();
    response.setHeader('x-request-id', requestId);
    const target = parseRequestTarget(request.url);
    const path = target?.pathname ?? request.url ?? '/';
    const entry: JournalEntry = { method: request.method ?? 'GET', path, status: 0, requestId, at: Date.now() };
    connections.answering(request, response, requestId, layerOfPath(path));
    const problem =
      refusal ??
      (target
        ? request.httpVersion === '1.1' && request.headers.host === undefined
          ? missingHostError()
          : undefined
        : invalidTargetError());
    (problem ? Promise.reject(problem) : route(request, response, path, entry))
      .catch((error: unknown) => answerFailure(log, request, response, path, error))
      .finally(() => {
        entry.status = response.statusCode;
        journal.record(entry);
      });
  }

  const serverOptions = { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false };
  const server: Server = identity
    ? createHttpsServer({ ...serverOptions, cert: identity.cert, key: identity.key }, handle)
    : createServer(serverOptions, handle);
  connections.attach(server);
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    handle(
      request,
      response,
      new HttpError(417, 'invalid_request_error', `Expect: ${request.headers.expect ?? ''} cannot be met; only 100-continue is supported.`),
    ),
  );

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, bindHost, () => resolve());
    });
  } catch (error) {
    await generated?.remove();
    throw error;
  }
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the emulator is not listening on a TCP port');
  const { port } = address;
  const listenUrl = `${identity ? 'https' : 'http'}://${urlHost(reachableHost(bindHost))}:${port}`;
  const baseUrl = publicUrl?.base ?? listenUrl;
  engine.baseUrl = baseUrl;

  const realtime = attachRealtime(server, {
    vendor: config.vendor,
    sessionMaxMs: () => config.timing.realtime_session_max_ms,
    authorizeApiKey: (apiKey, model) => keys.authorizeRealtimeKey(apiKey, model),
    authorizeClientSecret: (token, model) => keys.authorizeRealtimeSecret(token, model, Date.now()),
    log,
  });

  return {
    baseUrl,
    wsUrl: baseUrl.replace(/^http/, 'ws'),
    listenUrl,
    caCert: generated?.cert,
    caCertPath: generated?.path,
    port,
    config,
    requests: journal.entries,
    waitForRequest(predicate, timeoutMs = 10_000) {
      return journal.waitFor(predicate, timeoutMs);
    },
    quotaUsd(key) {
      const account = keys.account(key);
      if (!account) throw new Error('no such key in the emulator');
      engine.runningCount(account, Date.now());
      return account.remainingUsd;
    },
    keyIdOf,
    uploads: engine.uploads,
    realtime,
    async close() {
      await realtime.close();
      await engine.close();
      server.closeAllConnections();
      connections.destroyAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await generated?.remove();
    },
  };
}
