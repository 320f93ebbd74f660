import { keyFingerprint } from '../gateway/pool.ts';
import type { Layer } from '../gateway/spec.ts';
import type { GatewayAccess, GuildVideoPolicy, VideoDefaults } from './service.ts';

/** Every server on the operator's key (GATEWAY_API_KEY) and layer, with no limits of its own. */
export function operatorPolicy(apiKey: string | undefined, layer: Layer): GuildVideoPolicy {
  const access: GatewayAccess = apiKey
    ? { ok: true, apiKey, layer, keyId: keyFingerprint(apiKey) }
    : { ok: false, message: 'This server has no gateway key yet: a server admin can add one with `/config key`.' };
  const defaults: VideoDefaults = {
    model: undefined,
    resolution: undefined,
    duration: undefined,
    aspectRatio: undefined,
    storage: { keepDays: 0, publicLink: false },
  };
  return {
    resolveGatewayAccess: () => Promise.resolve(access),
    defaults: () => Promise.resolve(defaults),
    checkLimits: () => Promise.resolve({ ok: true }),
    recordSubmission: () => Promise.resolve(),
    recordCost: () => Promise.resolve(),
  };
}
