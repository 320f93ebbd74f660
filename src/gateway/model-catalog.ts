import type { GatewayClientPool } from './pool.ts';
import { videoModelCapabilities } from './spec.ts';
import type { GatewayCredentials } from './types.ts';

// The models a key may use (`/v1/models`), for autocomplete and for checking a server's default model:
// asked once a minute per key, not on every keystroke.

/** How long a key's model list serves before the gateway is asked again. */
const MODEL_LIST_TTL_MS = 60_000;
/** Discord drops an autocomplete answer after 3 s: a model list slower than this is left out of it. */
const SUGGESTION_WAIT_MS = 2_000;

export interface ModelCatalogOptions {
  clients: GatewayClientPool;
  vendor: string;
  /** The credentials a scope (a server) uses, or undefined when it has none: then it has no models. */
  credentialsFor(scope: string): Promise<GatewayCredentials | undefined>;
}

export class ModelCatalog {
  readonly #options: ModelCatalogOptions;
  /** Model lists per key fingerprint. */
  readonly #lists = new Map<string, { at: number; models: Promise<string[]> }>();

  constructor(options: ModelCatalogOptions) {
    this.#options = options;
  }

  /** Every model the scope's key may use; rejects when the gateway cannot say. */
  async models(scope: string): Promise<string[]> {
    const credentials = await this.#options.credentialsFor(scope);
    if (!credentials) return [];
    const now = Date.now();
    const cached = this.#lists.get(credentials.keyId);
    if (cached && now - cached.at < MODEL_LIST_TTL_MS) return cached.models;
    for (const [keyId, entry] of this.#lists) if (now - entry.at >= MODEL_LIST_TTL_MS) this.#lists.delete(keyId);
    const models = this.#options.clients
      .get(credentials.apiKey, credentials.layer)
      .listModels()
      .then((list) => list.map((model) => model.id));
    const entry = { at: now, models };
    this.#lists.set(credentials.keyId, entry);
    // A failed answer is not kept: the next call asks again.
    models.catch(() => {
      if (this.#lists.get(credentials.keyId) === entry) this.#lists.delete(credentials.keyId);
    });
    return models;
  }

  async videoModels(scope: string): Promise<string[]> {
    return (await this.models(scope)).filter((id) => videoModelCapabilities(id, this.#options.vendor) !== undefined);
  }

  /**
   * The models to suggest while a member types: what the gateway says within SUGGESTION_WAIT_MS, else
   * none this keystroke (the request goes on and fills the cache for the next one). Never throws.
   */
  async suggested(scope: string, kind: 'video' | 'any'): Promise<string[]> {
    const list = (kind === 'video' ? this.videoModels(scope) : this.models(scope)).catch((): string[] => []);
    let timer: NodeJS.Timeout | undefined;
    const tooSlow = new Promise<string[]>((resolve) => {
      timer = setTimeout(() => resolve([]), SUGGESTION_WAIT_MS);
    });
    try {
      return await Promise.race([list, tooSlow]);
    } finally {
      clearTimeout(timer);
    }
  }
}
