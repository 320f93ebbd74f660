import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigMap, Secret, Service, type IService } from 'kubernetes-models/v1';
import { StatefulSet, type IStatefulSet } from 'kubernetes-models/apps/v1';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config.ts';
import { isRecord, readArray, readString, type JsonRecord } from '../../src/lib/json.ts';
import { planShards } from '../../src/shards/plan.ts';

// deploy/kubernetes/ checked offline against the Kubernetes schemas kubernetes-models carries (generated
// from Kubernetes' OpenAPI): each object by its JSON schema (types, required fields, enums, formats) and by
// its TypeScript declaration, for what the JSON schemas let through: a field Kubernetes does not know
// (a misspelt `livenesProbe`), which the API server refuses under kubectl's strict field validation. Then
// what no schema sees: the objects fit together, and the bot's environment in them is a configuration the
// bot accepts.

const FOLDER = new URL('../../deploy/kubernetes/', import.meta.url);
/** A file the TypeScript check pretends is there, so that `kubernetes-models` resolves from the repo. */
const VIRTUAL_FILE = fileURLToPath(new URL('manifest-under-check.ts', import.meta.url));

interface Manifest {
  /** `file.yaml Kind/name`, for messages. */
  label: string;
  object: JsonRecord;
}

function kustomizationResources(): string[] {
  const kustomization: unknown = parseAllDocuments(readFileSync(new URL('kustomization.yaml', FOLDER), 'utf8'))[0]?.toJS();
  return (readArray(kustomization, 'resources') ?? []).filter((entry) => typeof entry === 'string');
}

/** The objects of one YAML file's documents. */
function parseManifests(file: string, text: string): Manifest[] {
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map((error) => error.message).join('; ')}`);
    const object: unknown = document.toJS();
    if (!isRecord(object)) throw new Error(`${file}: a document that is not an object`);
    const name = readString(object.metadata, 'name') ?? '(no name)';
    return { label: `${file} ${String(object.kind)}/${name}`, object };
  });
}

const readManifestFile = (file: string): string => readFileSync(new URL(file, FOLDER), 'utf8');

function readManifests(): Manifest[] {
  return kustomizationResources().flatMap((file) => parseManifests(file, readManifestFile(file)));
}

/** The JSON schema's verdict on one object: kubernetes-models' model of its kind validates it. */
function schemaProblems(object: JsonRecord): string[] {
  const validate = (model: { validate(): void }): string[] => {
    try {
      model.validate();
      return [];
    } catch (error) {
      return [error instanceof Error ? error.message : String(error)];
    }
  };
  if (StatefulSet.is(object)) return validate(new StatefulSet(object));
  if (Service.is(object)) return validate(new Service(object));
  if (ConfigMap.is(object)) return validate(new ConfigMap(object));
  if (Secret.is(object)) return validate(new Secret(object));
  return [`no Kubernetes schema checked here for ${String(object.apiVersion)} ${String(object.kind)}`];
}

/**
 * Fields the declarations do not have: each object as a typed literal, type-checked (TypeScript refuses a
 * property its type does not declare). One program for all, one virtual file per object.
 */
function unknownFieldProblems(manifests: readonly Manifest[]): string[][] {
  const files = manifests.map(({ object }, index) => ({
    name: VIRTUAL_FILE.replace(/\.ts$/, `-${index}.ts`),
    text: `export const manifest: import('kubernetes-models/${String(object.apiVersion)}/${String(object.kind)}').I${String(object.kind)} = ${JSON.stringify(object)};\n`,
  }));
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2024.d.ts'],
    target: ts.ScriptTarget.ES2024,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const virtual = new Map(files.map((file) => [file.name, file.text]));
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => {
    const text = virtual.get(name);
    return text === undefined ? getSourceFile(name, language, ...rest) : ts.createSourceFile(name, text, language);
  };
  host.fileExists = (name) => virtual.has(name) || fileExists(name);
  host.readFile = (name) => virtual.get(name) ?? readFile(name);
  const program = ts.createProgram(
    files.map((file) => file.name),
    options,
    host,
  );
  const problems = files.map((): string[] => []);
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const index = files.findIndex((file) => file.name === diagnostic.file?.fileName);
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    if (index >= 0) problems[index]!.push(message);
    else throw new Error(`the type check itself failed: ${message}`);
  }
  return problems;
}

/** Every problem of every manifest, each named by its manifest. */
function manifestProblems(manifests: readonly Manifest[]): string[] {
  const unknownFields = unknownFieldProblems(manifests);
  return manifests.flatMap(({ label, object }, index) =>
    [...schemaProblems(object), ...unknownFields[index]!].map((problem) => `${label}: ${problem}`),
  );
}

function only<T>(manifests: readonly Manifest[], guard: (value: unknown) => value is T, name: string): T {
  const found = manifests
    .map((manifest) => manifest.object)
    .find((object) => guard(object) && readString(object.metadata, 'name') === name);
  if (found === undefined || !guard(found)) throw new Error(`no ${name} among the manifests`);
  return found;
}

const manifests = readManifests();

describe('the Kubernetes manifests (deploy/kubernetes)', () => {
  it('are every YAML file of the folder, each listed once in kustomization.yaml', () => {
    const files = readdirSync(FOLDER).filter((file) => /\.ya?ml$/.test(file) && file !== 'kustomization.yaml');
    expect(kustomizationResources().sort()).toEqual(files.sort());
    expect(manifests.map((manifest) => manifest.label).sort()).toEqual([
      'bot-service.yaml Service/bot',
      'bot-statefulset.yaml StatefulSet/bot',
      'configmap.yaml ConfigMap/bot-config',
      'redis-service.yaml Service/redis',
      'redis-statefulset.yaml StatefulSet/redis',
      'secret.yaml Secret/bot-secrets',
    ]);
  });

  it('match the Kubernetes schemas, with no field Kubernetes does not know', () => {
    expect(manifestProblems(manifests)).toEqual([]);
  });

  it('are refused when broken: a wrong type, a missing required field, a misspelt field, an unknown kind', () => {
    // The bot's StatefulSet as an operator might mistype it, one mistake at a time.
    const text = readManifestFile('bot-statefulset.yaml');
    const broken = (label: string, from: string | RegExp, to: string): Manifest[] => {
      const changed = text.replace(from, to);
      expect(changed, label).not.toBe(text);
      return parseManifests(label, changed);
    };
    const problems = manifestProblems([
      ...broken('port', 'containerPort: 9464', 'containerPort: nine-four-six-four'),
      ...broken('name', /- name: bot\n\s+image:/, '- image:'),
      ...broken('typo', 'livenessProbe:', 'livenesProbe:'),
      ...broken('kind', 'kind: StatefulSet', 'kind: StatefullSet'),
    ]);
    expect(problems).toEqual([
      'port StatefulSet/bot: data/spec/template/spec/containers/0/ports/0/containerPort must be integer',
      expect.stringMatching(/^port StatefulSet\/bot: Type 'string' is not assignable to type 'number'/),
      'name StatefulSet/bot: data/spec/template/spec/containers/0 must have required property name',
      expect.stringMatching(/^name StatefulSet\/bot: Property '"name"' is missing in type .* but required in type 'IContainer'/),
      expect.stringMatching(
        /^typo StatefulSet\/bot: Object literal may only specify known properties, and '"livenesProbe"' does not exist in type 'IContainer'/,
      ),
      'kind StatefullSet/bot: no Kubernetes schema checked here for apps/v1 StatefullSet',
      "kind StatefullSet/bot: Cannot find module 'kubernetes-models/apps/v1/StatefullSet' or its corresponding type declarations.",
    ]);
  });

  it("fit together: the services select the pods, the names referred to exist, the ports agree, Redis keeps the bot's records", () => {
    const bot = only(manifests, StatefulSet.is, 'bot');
    const botService = only(manifests, Service.is, 'bot');
    const redis = only(manifests, StatefulSet.is, 'redis');
    const redisService = only(manifests, Service.is, 'redis');
    const podLabels = (set: IStatefulSet) => set.spec?.template.metadata?.labels;
    for (const [set, service] of [
      [bot, botService],
      [redis, redisService],
    ] satisfies [IStatefulSet, IService][]) {
      expect(set.spec?.selector.matchLabels).toEqual(podLabels(set));
      expect(set.spec?.serviceName).toBe(service.metadata?.name);
      expect(service.spec?.clusterIP).toBe('None');
      expect(service.spec?.selector).toEqual(podLabels(set));
    }
    const pod = bot.spec!.template.spec!;
    const container = pod.containers[0]!;
    const env = new Map(container.env?.map((variable) => [variable.name, variable]));
    // The image's CMD runs as it is: the bot as the container's first process, which SIGTERM stops gracefully.
    expect([container.command, container.args]).toEqual([undefined, undefined]);
    expect(container.envFrom?.map((source) => source.configMapRef?.name ?? source.secretRef?.name)).toEqual(['bot-config', 'bot-secrets']);
    only(manifests, ConfigMap.is, 'bot-config');
    only(manifests, Secret.is, 'bot-secrets');
    // STORE_URL names Redis's Service and port.
    const store = new URL(env.get('STORE_URL')?.value ?? '');
    expect([store.protocol, store.hostname, Number(store.port)]).toEqual(['redis:', 'redis', redisService.spec?.ports?.[0]?.port]);
    // The ops port: the bot listens on it on every address, the probes ask it, Prometheus scrapes it.
    const opsPort = Number(env.get('OPS_PORT')?.value);
    expect(env.get('OPS_HOST')?.value).toBe('0.0.0.0');
    expect(container.ports).toEqual([{ name: 'ops', containerPort: opsPort }]);
    expect(botService.spec?.ports?.[0]).toMatchObject({ port: opsPort, targetPort: 'ops' });
    expect(bot.spec?.template.metadata?.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(opsPort),
      'prometheus.io/path': '/metrics',
    });
    expect([container.livenessProbe?.httpGet, container.startupProbe?.httpGet, container.readinessProbe?.httpGet]).toEqual([
      { path: '/healthz', port: 'ops' },
      { path: '/healthz', port: 'ops' },
      { path: '/readyz', port: 'ops' },
    ]);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(30);
    // Non-root on a read-only root: downloads go to the temporary directory, a volume of its own.
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
    expect(pod.volumes?.find((volume) => volume.name === tmp?.name)?.emptyDir).toBeDefined();
    // As compose.yaml: append-only, no eviction, on a volume.
    const redisContainer = redis.spec!.template.spec!.containers[0]!;
    expect(redisContainer.args?.join(' ')).toBe('redis-server --appendonly yes --maxmemory-policy noeviction');
    expect(redisContainer.volumeMounts).toEqual([{ name: 'data', mountPath: '/data' }]);
    expect(redis.spec?.volumeClaimTemplates?.map((claim) => claim.metadata?.name)).toEqual(['data']);
  });

  it("give each pod its own shards: replicas × SHARDS_PER_MACHINE = SHARD_COUNT, each pod's ordinal from its index label", () => {
    const bot = only(manifests, StatefulSet.is, 'bot');
    const container = bot.spec!.template.spec!.containers[0]!;
    const values = Object.fromEntries(
      container.env?.filter((variable) => variable.value !== undefined).map((variable) => [variable.name, variable.value]) ?? [],
    );
    expect(container.env?.find((variable) => variable.name === 'POD_INDEX')?.valueFrom?.fieldRef?.fieldPath).toBe(
      "metadata.labels['apps.kubernetes.io/pod-index']",
    );
    const config = only(manifests, ConfigMap.is, 'bot-config').data ?? {};
    const secrets = only(manifests, Secret.is, 'bot-secrets').stringData ?? {};
    const replicas = bot.spec?.replicas ?? 1;
    // The pod's environment as Kubernetes builds it: the ConfigMap, the Secret, then the container's own.
    const podEnvironment = (index: number) => ({ ...config, ...secrets, ...values, POD_INDEX: String(index) });
    // The Secret's placeholder cannot run by accident.
    const placeholder = loadConfig(podEnvironment(0), () => 'bot-0');
    expect(placeholder.ok ? [] : placeholder.problems).toEqual([
      expect.stringMatching(/^KEY_ENCRYPTION_SECRET must be at least 16 characters/),
    ]);
    const shardsOf = (index: number): number[] | string => {
      const loaded = loadConfig({ ...podEnvironment(index), KEY_ENCRYPTION_SECRET: 'a'.repeat(32) }, () => `bot-${index}`);
      if (!loaded.ok) return loaded.message;
      const planned = planShards(loaded.config.sharding, Number(values.SHARD_COUNT));
      return planned.ok ? planned.plan.ids : planned.message;
    };
    const held = Array.from({ length: replicas }, (_, index) => shardsOf(index));
    expect(held.flat()).toEqual(Array.from({ length: Number(values.SHARD_COUNT) }, (_, shard) => shard));
    expect(shardsOf(replicas)).toMatch(
      /^SHARD_IDS=auto-ordinal gives machine 2 \(POD_INDEX=2\) shards 4-5 with SHARDS_PER_MACHINE=2, but SHARD_COUNT is 4/,
    );
  });
});
