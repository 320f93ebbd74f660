import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../lib/log.ts';

// The operator's port (OPS_PORT): GET /healthz (the process answers), GET /readyz (ready to serve, or 503
// with the reason) and GET /metrics (Prometheus text, from prom-client). Nothing else, and nothing that
// changes anything.

export type Readiness = { ready: true } | { ready: false; reason: string };

/** Prometheus text, and the content type it is served with. */
export interface MetricsText {
  contentType: string;
  body: string;
}

/** A registry's metrics as Prometheus text. */
export async function metricsOf(registry: Registry): Promise<MetricsText> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

export interface OpsServerOptions {
  host: string;
  port: number;
  /** What GET /metrics serves: this process's registry, or every worker's summed by the supervisor. */
  metrics: () => Promise<MetricsText>;
  readiness: () => Promise<Readiness>;
  log: Logger;
}

export interface OpsServer {
  /** The address it listens on (the port the system chose for port 0). */
  readonly port: number;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { metrics, readiness, log } = options;
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://ops').pathname;
    const send = (status: number, type: string, body: string): void => {
      response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(request.method === 'HEAD' ? undefined : body);
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(405, 'text/plain; charset=utf-8', 'only GET\n');
    const answer = async (): Promise<void> => {
      switch (path) {
        case '/healthz':
          return send(200, 'text/plain; charset=utf-8', 'ok\n');
        case '/readyz': {
          const state = await readiness();
          return state.ready
            ? send(200, 'text/plain; charset=utf-8', 'ready\n')
            : send(503, 'text/plain; charset=utf-8', `not ready: ${state.reason}\n`);
        }
        case '/metrics': {
          const { contentType, body } = await metrics();
          return send(200, contentType, body);
        }
        default:
          return send(404, 'text/plain; charset=utf-8', 'not found: GET /healthz, /readyz or /metrics\n');
      }
    };
    answer().catch((error: unknown) => {
      log.error('the ops port could not answer', { path, error });
      if (!response.headersSent) send(500, 'text/plain; charset=utf-8', 'internal error\n');
    });
  });
  server.listen(options.port, options.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  log.info('ops port listening', { host: options.host, port, paths: ['/healthz', '/readyz', '/metrics'] });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
