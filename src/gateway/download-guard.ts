// Where a video download may connect (docs/gateway.md, "Video download"). The gateway names the address
// of a native video, and a redirect can name any other: without a check, a hostile or broken gateway
// could make the bot fetch (and post) whatever answers at a loopback, private or cloud-metadata address.
// The check is made on the address the socket actually connects to, after DNS, so a name that resolves
// to such an address (or is rebound to one between two lookups) is refused too.

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { hostAndPort, hostKey } from '../lib/url.ts';
import { DownloadRefusedError } from './errors.ts';

/** Address ranges that are not the public internet (IANA's special-purpose registries). */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96], // unspecified, loopback, and the deprecated IPv4-compatible addresses
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo among them)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4, which embeds an IPv4 address
  ['3fff::', 20], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}
// IPv4-mapped addresses (::ffff:a.b.c.d) are checked against the IPv4 ranges by BlockList itself.

/** The well-known NAT64 prefix: the gateway in between connects to the IPv4 address in the last 32 bits. */
const NAT64 = new BlockList();
NAT64.addSubnet('64:ff9b::', 96, 'ipv6');

/** The IPv4 address in the last 32 bits of a NAT64 address. */
function embeddedIpv4(address: string): string {
  const groups = new URL(`http://[${address}]/`).hostname.slice(1, -1).split(':');
  const high = Number.parseInt(groups.at(-2) ?? '0', 16);
  const low = Number.parseInt(groups.at(-1) ?? '0', 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** Whether an IP address is on the public internet (not loopback, private, link-local, multicast…). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 4) return !NOT_PUBLIC.check(address, 'ipv4');
  if (NAT64.check(address, 'ipv6')) return isPublicAddress(embeddedIpv4(address));
  return !NOT_PUBLIC.check(address, 'ipv6');
}

/**
 * The hosts a download may reach whatever their address: the gateway's own (on the gateway's port only)
 * and those the operator allows (`host`: any port; `host:port`: that port).
 */
export class DownloadHosts {
  /** Host -> the ports it is allowed on; undefined: any port. */
  readonly #allowed = new Map<string, Set<number> | undefined>();

  /** Entries as `host` or `host:port`; one that is neither is left out. */
  constructor(entries: Iterable<string>) {
    for (const entry of entries) {
      const parsed = hostAndPort(entry);
      if (!parsed) continue;
      const ports = this.#allowed.get(parsed.host);
      if (this.#allowed.has(parsed.host) && ports === undefined) continue;
      if (parsed.port === undefined) this.#allowed.set(parsed.host, undefined);
      else this.#allowed.set(parsed.host, new Set([...(ports ?? []), parsed.port]));
    }
  }

  /** A stable name of this set, to share one pool between clients that allow the same hosts and ports. */
  get key(): string {
    return [...this.#allowed]
      .map(([host, ports]) => (ports ? `${host}:${[...ports].sort((a, b) => a - b).join('+')}` : host))
      .sort()
      .join(',');
  }

  /** Whether `host` may be reached on `port` at any address (`port` undefined: on some port). */
  isAllowed(host: string, port?: number): boolean {
    const key = hostKey(host);
    if (key === undefined || !this.#allowed.has(key)) return false;
    const ports = this.#allowed.get(key);
    return ports === undefined || port === undefined || ports.has(port);
  }

  /** Why connecting to `address` (for `host`, on `port`) is refused, or undefined when it may go ahead. */
  refusal(host: string, address: string, port: number): DownloadRefusedError | undefined {
    if (this.isAllowed(host, port) || isPublicAddress(address)) return undefined;
    return new DownloadRefusedError(host, address);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * dns.lookup, refusing a name (that is not allowed as such) when any address it resolves to is not
 * public. The socket connects to one of exactly these addresses, so nothing can rebind in between.
 */
function guardedLookup(hosts: DownloadHosts, port: number) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        callback(error, []);
        return;
      }
      for (const { address } of addresses) {
        const refusal = hosts.refusal(hostname, address, port);
        if (refusal) {
          callback(refusal, []);
          return;
        }
      }
      if (options.all === true) {
        callback(null, addresses);
        return;
      }
      const first = addresses[0];
      if (first === undefined) {
        callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}

/** Downloads at once from one host: as many as the bot delivers at once. */
const CONNECTIONS_PER_HOST = 8;
/** An idle download connection is kept this long for the next video from the same host. */
const KEEP_ALIVE_MS = 10_000;

/**
 * The pool downloads go through. An IP address written in the URL skips DNS, so it is checked before
 * connecting; a name is checked in the lookup; redirects go through the same pool, and so the same checks.
 */
export function createDownloadDispatcher(hosts: DownloadHosts, options: { connectMs: number; ca?: readonly string[] }): Agent {
  // The lookup's check depends on the port (a host may be allowed on one port only), and a connector's
  // lookup is fixed when it is built: one connector per port met, which is a handful.
  const connectors = new Map<number, buildConnector.connector>();
  const connectorFor = (port: number): buildConnector.connector => {
    let connector = connectors.get(port);
    if (!connector) {
      connector = buildConnector({
        timeout: options.connectMs,
        lookup: guardedLookup(hosts, port),
        ...(options.ca ? { ca: [...options.ca] } : {}),
      });
      connectors.set(port, connector);
    }
    return connector;
  };
  const connect: buildConnector.connector = (target, callback) => {
    const port = target.port === '' ? (target.protocol === 'https:' ? 443 : 80) : Number(target.port);
    const literal = isIP(target.hostname) !== 0;
    const refusal = literal ? hosts.refusal(target.hostname, target.hostname, port) : undefined;
    if (refusal) {
      callback(refusal, null);
      return;
    }
    connectorFor(port)(target, callback);
  };
  return new Agent({ connect, connections: CONNECTIONS_PER_HOST, keepAliveTimeout: KEEP_ALIVE_MS });
}

const sharedDispatchers = new Map<string, Agent>();

/** One download pool per set of allowed hosts, shared by every client in the process that allows them. */
export function sharedDownloadDispatcher(hosts: DownloadHosts, connectMs: number): Agent {
  const key = `${connectMs}|${hosts.key}`;
  let dispatcher = sharedDispatchers.get(key);
  if (!dispatcher) {
    dispatcher = createDownloadDispatcher(hosts, { connectMs });
    sharedDispatchers.set(key, dispatcher);
  }
  return dispatcher;
}
