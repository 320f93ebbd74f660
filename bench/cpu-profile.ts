import { isRecord, readArray, readNumber, readRecord, readString } from '../src/lib/json.ts';

// Sums a V8 CPU profile (what --cpu-prof writes, or the inspector's Profiler.stop returns) by module: the
// bot's own code, each package under node_modules, node's internals, garbage collection and native time.
// WebAssembly is opusscript's libopus. A native frame with no script of its own (a method such as davey's)
// counts for the nearest caller that has one, so davey's time would land on the
// package whose code called it: the native methods @discordjs/voice calls on its DAVE session, and the
// buffer finalising napi-rs does for them (custom_gc), are davey's by name; what the bot's codec module
// calls natively is @discordjs/opus's libopus.

export interface ProfileSummary {
  /** Time sampled, and of it time not idle. */
  wallMs: number;
  busyMs: number;
  /** Self time by module, as shares of the busy time, largest first. */
  modules: { name: string; share: number }[];
  /** The functions with the most self time, as shares of the busy time. */
  functions: { name: string; module: string; where: string; share: number }[];
}

interface ProfileNode {
  id: number;
  functionName: string;
  url: string;
  line: number;
  children: number[];
}

/** davey's native session methods as @discordjs/voice calls them, and napi-rs's finalising of the buffers they return. */
const DAVEY_NATIVES = new Set([
  'custom_gc',
  'encryptOpus',
  'encrypt',
  'decrypt',
  'processProposals',
  'processCommit',
  'processWelcome',
  'setExternalSender',
  'getSerializedKeyPackage',
  'reinit',
  'reset',
  'getVerificationCode',
  'getUserIds',
  'canPassthrough',
  'setPassthroughMode',
]);

/** V8's own entries, by the name it gives them. */
const SPECIAL = new Map([
  ['(garbage collector)', 'garbage collection'],
  ['(program)', 'native, outside JavaScript (libuv, system calls, the runtime)'],
  ['(idle)', 'idle'],
  ['(root)', 'idle'],
]);

/** The bot's codec module: a native frame it calls is @discordjs/opus's libopus (the native build). */
const OPUS_CODEC_MODULE = '/src/voice/audio/opus-codec.ts';
const NATIVE_OPUS = '@discordjs/opus (native libopus)';

/** The only WebAssembly in the bot: opusscript's build of libopus, whoever calls it. */
const WEBASSEMBLY = 'opusscript (libopus in WebAssembly)';

/** The module a script belongs to, or undefined for a frame without one (native code). */
export function moduleOfUrl(url: string): string | undefined {
  if (url === '') return undefined;
  if (url.startsWith('wasm://')) return WEBASSEMBLY;
  if (url.startsWith('node:') || !url.includes('/')) return 'node internals';
  const packagePath = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (packagePath) return packagePath[1]!;
  const own = /\/(src\/[^/]+|bench|test)\//.exec(url);
  if (own) return own[1] === 'src/voice' ? "src/voice (the bot's voice code)" : own[1]!;
  return 'other scripts';
}

function readNodes(profile: unknown): Map<number, ProfileNode> {
  const nodes = new Map<number, ProfileNode>();
  for (const raw of readArray(profile, 'nodes') ?? []) {
    const frame = readRecord(raw, 'callFrame');
    const id = readNumber(raw, 'id');
    if (id === undefined) continue;
    nodes.set(id, {
      id,
      functionName: readString(frame, 'functionName') ?? '',
      url: readString(frame, 'url') ?? '',
      line: readNumber(frame, 'lineNumber') ?? 0,
      children: (readArray(raw, 'children') ?? []).filter((child): child is number => typeof child === 'number'),
    });
  }
  return nodes;
}

/** Where a frame's script is, from the repository's or node_modules' root. */
function scriptPlace(node: ProfileNode): string {
  return `${node.url.replace(/^.*\/(node_modules|src|bench|test)\//, '$1/')}:${node.line + 1}`;
}

export function summariseProfile(profile: unknown, topFunctions = 15): ProfileSummary {
  if (!isRecord(profile)) throw new Error('not a CPU profile');
  const nodes = readNodes(profile);
  const parents = new Map<number, number>();
  for (const node of nodes.values()) for (const child of node.children) parents.set(child, node.id);
  const moduleOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = moduleOf.get(id);
    if (known !== undefined) return known;
    const node = nodes.get(id)!;
    const parent = parents.get(id);
    let module = SPECIAL.get(node.functionName) ?? moduleOfUrl(node.url);
    if (module === undefined) {
      const caller = parent === undefined ? undefined : resolve(parent);
      const callerUrl = parent === undefined ? '' : nodes.get(parent)!.url;
      module =
        caller === '@discordjs/voice' && DAVEY_NATIVES.has(node.functionName)
          ? '@snazzah/davey'
          : callerUrl.endsWith(OPUS_CODEC_MODULE)
            ? NATIVE_OPUS
            : (caller ?? 'native');
      if (module === 'idle') module = 'native';
    }
    moduleOf.set(id, module);
    return module;
  };
  const samples = (readArray(profile, 'samples') ?? []).filter((id): id is number => typeof id === 'number');
  const deltas = (readArray(profile, 'timeDeltas') ?? []).filter((delta): delta is number => typeof delta === 'number');
  const selfMicros = new Map<number, number>();
  // A sample's time is the time until the next one.
  samples.forEach((id, index) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (deltas[index + 1] ?? 0)));
  const byModule = new Map<string, number>();
  const byFunction = new Map<string, { name: string; module: string; where: string; micros: number }>();
  let wall = 0;
  let busy = 0;
  for (const [id, micros] of selfMicros) {
    wall += micros;
    const module = resolve(id);
    if (module === 'idle') continue;
    busy += micros;
    byModule.set(module, (byModule.get(module) ?? 0) + micros);
    const node = nodes.get(id)!;
    const name = node.functionName || '(anonymous)';
    // V8 may give native functions of different addons one name (the profile named crypto calls of
    // @discordjs/voice after @discordjs/opus's OpusEncoder class): a native frame is told by its caller.
    const caller = parents.get(id) === undefined ? undefined : nodes.get(parents.get(id)!);
    const where =
      node.url !== ''
        ? scriptPlace(node)
        : caller === undefined || caller.url === ''
          ? 'native'
          : `native, called by ${caller.functionName || '(anonymous)'} at ${scriptPlace(caller)}`;
    const key = `${name} ${where}`;
    const entry = byFunction.get(key) ?? { name, module, where, micros: 0 };
    entry.micros += micros;
    byFunction.set(key, entry);
  }
  const share = (micros: number) => (busy === 0 ? 0 : micros / busy);
  return {
    wallMs: wall / 1000,
    busyMs: busy / 1000,
    modules: [...byModule].sort((a, b) => b[1] - a[1]).map(([name, micros]) => ({ name, share: share(micros) })),
    functions: [...byFunction.values()]
      .sort((a, b) => b.micros - a.micros)
      .slice(0, topFunctions)
      .map(({ micros, ...fn }) => ({ ...fn, share: share(micros) })),
  };
}
