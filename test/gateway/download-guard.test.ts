import { describe, expect, it } from 'vitest';
import { ENGLISH } from '../../src/i18n/index.ts';
import { DownloadHosts, isPublicAddress } from '../../src/gateway/download-guard.ts';
import { DownloadRefusedError, NotAVideoError, VideoUnavailableError } from '../../src/gateway/errors.ts';
import { videoContainerOf } from '../../src/gateway/video-format.ts';
import { hostKey, urlScheme } from '../../src/lib/url.ts';
import { describeGatewayError } from '../../src/wording/gateway-errors.ts';

// Which addresses a video download may connect to, what counts as a video, and how refusals are worded.

describe('public addresses', () => {
  it.each([
    '127.0.0.1',
    '127.0.0.2',
    '127.255.255.254', // loopback
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1', // private
    '169.254.169.254',
    '169.254.0.1', // link-local, cloud metadata
    '0.0.0.0',
    '0.1.2.3', // unspecified, "this network"
    '100.64.0.1',
    '100.127.255.254', // carrier-grade NAT
    '224.0.0.1',
    '239.255.255.250', // multicast
    '240.0.0.1',
    '255.255.255.255', // reserved, broadcast
    '192.0.2.1',
    '198.51.100.1',
    '203.0.113.1',
    '198.18.0.1',
    '192.0.0.8', // documentation, benchmarking, IETF
    '::',
    '::1', // unspecified, loopback
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '::ffff:0.0.0.0', // IPv4-mapped
    '::127.0.0.1', // IPv4-compatible (deprecated)
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1', // NAT64 of a private address, local-use NAT64
    'fc00::1',
    'fd12:3456::1', // unique local
    'fe80::1',
    'febf::1',
    'fec0::1', // link-local, site-local
    'ff02::1', // multicast
    '2001:db8::1',
    '2001::1',
    '2002:7f00:1::1',
    '100::1', // documentation, Teredo, 6to4, discard
    'not an address',
    'localhost',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '169.253.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('hosts a download may reach whatever their address', () => {
  const hosts = new DownloadHosts([
    '127.0.0.1',
    'Storage.Internal',
    '[::1]',
    '10.0.0.5',
    'not a host/',
    'gateway.internal:8787',
    '[fd00::1]:9000',
  ]);

  it('are compared as URLs write them', () => {
    expect(hosts.isAllowed('127.0.0.1')).toBe(true);
    expect(hosts.isAllowed('storage.internal')).toBe(true);
    expect(hosts.isAllowed('STORAGE.INTERNAL')).toBe(true);
    expect(hosts.isAllowed('::1')).toBe(true);
    expect(hosts.isAllowed('0:0:0:0:0:0:0:1')).toBe(true);
    expect(hosts.isAllowed('127.1')).toBe(true);
    expect(hosts.isAllowed('127.0.0.2')).toBe(false);
    expect(hosts.isAllowed('localhost')).toBe(false);
    expect(hosts.isAllowed('internal')).toBe(false);
  });

  it('refuse a host that is not listed at an address that is not public, naming both', () => {
    expect(hosts.refusal('storage.internal', '10.9.9.9', 443)).toBeUndefined();
    expect(hosts.refusal('cdn.example.com', '93.184.215.14', 443)).toBeUndefined();
    expect(hosts.refusal('evil.example.com', '169.254.169.254', 80)).toMatchObject({
      host: 'evil.example.com',
      address: '169.254.169.254',
    });
    expect(hosts.refusal('169.254.169.254', '169.254.169.254', 80)).toBeInstanceOf(DownloadRefusedError);
  });

  it('listed with a port, are allowed on that port only', () => {
    expect(hosts.refusal('gateway.internal', '10.0.0.9', 8787)).toBeUndefined();
    expect(hosts.refusal('gateway.internal', '10.0.0.9', 6379)).toBeInstanceOf(DownloadRefusedError);
    expect(hosts.refusal('fd00::1', 'fd00::1', 9000)).toBeUndefined();
    expect(hosts.refusal('fd00::1', 'fd00::1', 22)).toBeInstanceOf(DownloadRefusedError);
    // Listed without a port: any port.
    expect(hosts.refusal('storage.internal', '10.9.9.9', 9000)).toBeUndefined();
  });
});

describe('host names and schemes from input', () => {
  it.each([
    ['LocalHost', 'localhost'],
    [' storage.internal ', 'storage.internal'],
    ['127.1', '127.0.0.1'],
    ['[::1]', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['bücher.example', 'xn--bcher-kva.example'],
  ])('%s is the host %s', (text, key) => {
    expect(hostKey(text)).toBe(key);
  });

  it.each([
    '',
    'http://storage.internal',
    'storage.internal:9000',
    'storage.internal/path',
    'user@storage.internal',
    '*.example.com',
    'a b',
  ])('"%s" is not a host', (text) => {
    expect(hostKey(text)).toBeUndefined();
  });

  it('shows only the scheme of an address', () => {
    expect(urlScheme('javascript:alert(1)')).toBe('javascript:');
    expect(urlScheme('  JavaScript:alert(1)')).toBe('javascript:');
    expect(urlScheme('data:text/html,<b>x</b>')).toBe('data:');
    expect(urlScheme('not a link')).toBeUndefined();
    expect(urlScheme('`evil`:x')).toBeUndefined();
  });
});

describe('what counts as a video', () => {
  it('an mp4 (ISO BMFF) starts with an ftyp box, a WebM with the EBML magic number', () => {
    expect(videoContainerOf(Buffer.from('00000020667479706973366d', 'hex'))).toBe('mp4');
    expect(videoContainerOf(Buffer.from('1a45dfa39f4286810142f781', 'hex'))).toBe('webm');
  });

  it.each([
    ['an HTML page', Buffer.from('<!doctype html><html>')],
    ['JSON', Buffer.from('{"error":"denied"}')],
    ['a PNG', Buffer.from('89504e470d0a1a0a0000000d', 'hex')],
    ['nothing', Buffer.alloc(0)],
    ['a few bytes', Buffer.from('ftyp')],
  ])('%s is not', (_what, head) => {
    expect(videoContainerOf(head)).toBeUndefined();
  });
});

describe('a refused video, in words for members', () => {
  const context = { key: 'in-use', purpose: 'fetch-video' } as const;

  it('says an address is not on the public internet, and how an operator can allow a host', () => {
    const text = describeGatewayError(ENGLISH, new DownloadRefusedError('metadata.internal', '169.254.169.254'), context);
    expect(text).toContain('(`metadata.internal`, `169.254.169.254`) that is not on the public internet, so the bot did not fetch it');
    expect(text).toContain('DOWNLOAD_ALLOWED_HOSTS');
    expect(describeGatewayError(ENGLISH, new DownloadRefusedError('`**x**`', '10.0.0.1'), context)).not.toContain('**x**');
  });

  it('says what came was not a video, with its content type when plain', () => {
    expect(describeGatewayError(ENGLISH, new NotAVideoError('text/html; charset=utf-8'), context)).toBe(
      "The gateway's video address answered with something that is not a video (`text/html`), so the bot did not post it.",
    );
    expect(describeGatewayError(ENGLISH, new NotAVideoError(undefined, { requestId: 'req_7' }), context)).toContain('(request id `req_7`)');
  });

  it('says an address that is not an http(s) link was not fetched', () => {
    expect(describeGatewayError(ENGLISH, new VideoUnavailableError('x', 'not-http'), context)).toBe(
      'The gateway gave an address for the video that is not an http(s) link, so the bot did not fetch it.',
    );
  });
});
