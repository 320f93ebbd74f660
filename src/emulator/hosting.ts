import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { hostKey, httpUrl } from '../lib/url.ts';
import { EmulatorConfigError } from './config.ts';

// Where the emulator listens, the address it gives out, and its certificate when it serves TLS. Clients
// that speak only `wss:` (the realtime SDKs) need TLS; a client on another machine, or one that refuses
// loopback addresses, needs video urls under an address it can reach (`publicUrl`).

/** A certificate (PEM, the chain when there is one) and its private key (PEM). */
export interface TlsIdentity {
  cert: string;
  key: string;
}

/** `true`: a self-signed certificate made at start; or one's own. */
export type EmulatorTls = true | TlsIdentity;

/** The certificate the emulator made, written where clients can read it to trust it (NODE_EXTRA_CA_CERTS). */
export interface GeneratedCertificate extends TlsIdentity {
  /** The certificate's file: `<tmpdir>/gateway-emulator-XXXXXX/ca.pem`. */
  path: string;
  /** Removes the file and its folder. */
  remove(): Promise<void>;
}

export const DEFAULT_BIND_HOST = '127.0.0.1';
/** Names every certificate the emulator makes covers, besides the bind address and the public host. */
const LOCAL_NAMES = ['localhost', '127.0.0.1', '::1'];
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::']);
/** Long enough for an emulator that runs for weeks; a new one is made at each start. */
const CERTIFICATE_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000;
/** Valid from a little before now, so a client whose clock is behind still accepts it. */
const CLOCK_SKEW_MS = 60 * 60 * 1000;

/** The host the listening address is reached at: the bind address, or 127.0.0.1 for a wildcard. */
export function reachableHost(bindHost: string): string {
  return WILDCARD_HOSTS.has(bindHost) ? DEFAULT_BIND_HOST : bindHost;
}

/** A host as a URL writes it (an IPv6 address in brackets). */
export function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/**
 * The base of every URL the emulator gives out, from `--public-url`: an absolute http(s) URL without
 * credentials, query or fragment; a path is kept (a proxy may serve the emulator under one), without
 * its trailing slash. `host` is its host name or IP, for the certificate.
 */
export function parsePublicUrl(text: string): { base: string; host: string } {
  const url = httpUrl(text);
  if (!url) throw new EmulatorConfigError(`the public URL must be an absolute http(s) URL (got "${text}")`);
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new EmulatorConfigError('the public URL may not have credentials, a query or a fragment');
  }
  return { base: `${url.origin}${url.pathname}`.replace(/\/+$/, ''), host: url.hostname };
}

/** The certificate's names: the local ones, and each given host (name or IP) once. */
export function certificateHosts(hosts: readonly string[]): string[] {
  const names = new Map<string, string>();
  for (const host of [...LOCAL_NAMES, ...hosts]) {
    const key = hostKey(host);
    if (key !== undefined && !WILDCARD_HOSTS.has(key) && !names.has(key)) names.set(key, key);
  }
  return [...names.values()];
}

/**
 * A self-signed certificate for `hosts` (see certificateHosts), written to a file of its own. Made with
 * `selfsigned` (on @peculiar/x509): Node can make keys but not X.509 certificates, and a slim container
 * may have no `openssl` to shell out to. An ECDSA P-256 key takes milliseconds where RSA takes a second.
 */
export async function generateCertificate(hosts: readonly string[]): Promise<GeneratedCertificate> {
  const names = certificateHosts(hosts);
  const now = Date.now();
  const pems = await generate([{ name: 'commonName', value: 'gateway emulator' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - CLOCK_SKEW_MS),
    notAfterDate: new Date(now + CERTIFICATE_LIFETIME_MS),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: names.map((name) => (isIP(name) === 0 ? { type: 2, value: name } : { type: 7, ip: name })) },
    ],
  });
  const folder = await mkdtemp(join(tmpdir(), 'gateway-emulator-'));
  const path = join(folder, 'ca.pem');
  try {
    await writeFile(path, pems.cert, { mode: 0o644 });
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
  return { cert: pems.cert, key: pems.private, path, remove: () => rm(folder, { recursive: true, force: true }) };
}
