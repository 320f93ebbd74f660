// URLs read from input (configuration, requests, answers): parsed without throwing, and only with the
// schemes the caller expects.

/** `text` as a URL with one of `protocols` (e.g. `['http:', 'https:']`), or undefined. */
export function urlWith(protocols: readonly string[], text: string): URL | undefined {
  const url = URL.parse(text);
  return url && protocols.includes(url.protocol) ? url : undefined;
}

/** An absolute http(s) URL: what the gateway may be sent as a link, and what the bot may fetch. */
export function httpUrl(text: string): URL | undefined {
  return urlWith(['http:', 'https:'], text);
}

export function isHttpUrl(text: string): boolean {
  return httpUrl(text) !== undefined;
}

/**
 * The scheme `text` starts with (`javascript:`, `file:`), safe to show in a message, or undefined
 * when it has none: what to say about an address that is refused, without repeating the address.
 */
export function urlScheme(text: string): string | undefined {
  return /^\s*([a-z][a-z0-9+.-]{0,31}:)/i.exec(text)?.[1]?.toLowerCase();
}

/**
 * A host name or IP address as URLs write it, to compare hosts: lower case, an IPv4 address in its
 * dotted form, an IPv6 address compressed and without brackets. Undefined for anything that is not a
 * bare host (a port, a path, credentials, spaces or a wildcard).
 */
export function hostKey(text: string): string | undefined {
  const bare = text.trim().replace(/^\[(.*)\]$/, '$1');
  if (bare === '' || /[\s/@?#*]/.test(bare)) return undefined;
  const ipv6 = bare.includes(':');
  const url = URL.parse(`http://${ipv6 ? `[${bare}]` : bare}/`);
  if (!url || url.port !== '' || url.hostname === '') return undefined;
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** A host, and the one port it is allowed on (undefined: any port). */
export interface HostAndPort {
  host: string;
  port: number | undefined;
}

/**
 * `host` or `host:port` (an IPv6 address in brackets when a port follows, `[::1]:8080`), the host as
 * hostKey() writes it; undefined for anything else (a scheme, a path, a port out of range).
 */
export function hostAndPort(text: string): HostAndPort | undefined {
  const trimmed = text.trim();
  const withPort = /^(\[[^\]]*\]|[^:[\]]*):(\d{1,5})$/.exec(trimmed);
  if (!withPort) {
    const host = hostKey(trimmed);
    return host === undefined ? undefined : { host, port: undefined };
  }
  const host = hostKey(withPort[1]!);
  const port = Number(withPort[2]);
  return host === undefined || port < 1 || port > 65_535 ? undefined : { host, port };
}

/** The port a URL connects to: its own, else its scheme's (80 for http, 443 for https). */
export function effectivePort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80;
}
