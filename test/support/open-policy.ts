import type { GatewayCredentials } from '../../src/gateway/types.ts';
import type { GuildVideoPolicy } from '../../src/ports/guild-policy.ts';
import type { VideoDefaults } from '../../src/ports/video-defaults.ts';

// A server's settings as the video part asks for them, when what a test or benchmark measures is not the
// settings: every limit passes, nothing is counted or billed, and the server has a key and no defaults.
// Each caller states only what it needs otherwise.

/** The policy's methods to replace, and the two plain values most callers differ in. */
export interface OpenPolicyOptions extends Omit<Partial<GuildVideoPolicy>, 'defaults'> {
  /** The server's key and layer; unset parts: 'key' on the compatibility layer, 'fake-key'. */
  access?: Partial<GatewayCredentials>;
  /** What the server chose; unset: no defaults, and storage keeps nothing beyond the temporary link. */
  defaults?: Partial<VideoDefaults>;
}

/** The open policy, with `overrides` for the methods a caller watches or refuses with. */
export function openVideoPolicy({ access, defaults, ...overrides }: OpenPolicyOptions = {}): GuildVideoPolicy {
  const credentials: GatewayCredentials = { apiKey: 'key', layer: 'compat', keyId: 'fake-key', ...access };
  return {
    resolveGatewayAccess: () => Promise.resolve({ ok: true, ...credentials }),
    defaults: () =>
      Promise.resolve({
        model: undefined,
        resolution: undefined,
        duration: undefined,
        aspectRatio: undefined,
        storage: { keepDays: 0, publicLink: false },
        ...defaults,
      }),
    checkLimits: () => Promise.resolve({ ok: true }),
    recordSubmission: (_task, estimateUsdTicks) => Promise.resolve({ estimateUsdTicks, month: false }),
    releaseSubmission: () => Promise.resolve(),
    estimate: () => 0,
    recordCost: () => Promise.resolve(),
    ...overrides,
  };
}
