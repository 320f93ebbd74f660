// @ts-check
// The layers of the code, checked by `npm run check` (CONTRIBUTING.md shows them as a picture). A change
// that breaks one fails with the rule's name and the import that broke it.

/** The parts of the bot: they meet through src/ports/, never by importing one another. */
const PARTS = '(video|settings|voice)';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'An import cycle (type-only imports count) ties its files into one knot that cannot be understood or changed alone.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lib-is-the-bottom',
      comment: 'src/lib holds small general pieces every layer may use; it uses nothing of the bot.',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'gateway-client-stands-alone',
      comment: 'The gateway client knows the gateway, not the bot: it imports only itself and src/lib.',
      severity: 'error',
      from: { path: '^src/gateway/' },
      to: { path: '^src/', pathNot: '^src/(gateway|lib)/' },
    },
    {
      name: 'emulator-stands-alone',
      comment: 'The emulator is an independent gateway: it shares only the spec constants and src/lib with the bot.',
      severity: 'error',
      from: { path: '^src/emulator/' },
      to: { path: '^src/', pathNot: ['^src/(emulator|lib)/', '^src/gateway/spec[.]ts$'] },
    },
    {
      name: 'discord-adapter-is-a-leaf',
      comment:
        'src/discord talks to Discord (REST, answers, members); it knows nothing of what the bot does, only the words of the catalogs (src/i18n).',
      severity: 'error',
      from: { path: '^src/discord/' },
      to: { path: '^src/', pathNot: '^src/(discord|i18n|lib)/' },
    },
    {
      name: 'i18n-knows-only-lib',
      comment: 'src/i18n holds the message catalogs and formats them in a language; every layer may use it, so it uses only src/lib.',
      severity: 'error',
      from: { path: '^src/i18n/' },
      to: { path: '^src/', pathNot: '^src/(i18n|lib)/' },
    },
    {
      name: 'shards-know-only-processes',
      comment: 'src/shards/ plans shards and supervises worker processes: it knows nothing of the bot it runs.',
      severity: 'error',
      from: { path: '^src/shards/' },
      to: { path: '^src/', pathNot: '^src/(shards|lib)/' },
    },
    {
      name: 'ops-knows-only-lib',
      comment: 'src/ops serves /healthz, /readyz and /metrics (prom-client); it is handed what it reports, and knows nothing of the bot.',
      severity: 'error',
      from: { path: '^src/ops/' },
      to: { path: '^src/', pathNot: '^src/(ops|lib)/' },
    },
    {
      name: 'metrics-through-the-interface',
      comment:
        'The parts count through BotMetrics (src/lib/metrics.ts), which they are handed; only the composition root knows the ops port and prom-client.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/ops/', '^src/(app|main)[.]ts$'] },
      to: { path: '^src/ops/|^node_modules/prom-client/' },
    },
    {
      name: 'store-is-a-leaf',
      comment: 'The store keeps records; it knows nothing of what is in them.',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: '^src/(store|lib)/' },
    },
    {
      name: 'store-through-its-index',
      comment: 'The rest of the bot uses the store through src/store/index.ts; its backends and record format are its own to change.',
      severity: 'error',
      from: { path: '^(src|commands)/', pathNot: '^src/store/' },
      to: { path: '^src/store/', pathNot: '^src/store/index[.]ts$' },
    },
    {
      name: 'wording-knows-only-the-gateway',
      comment:
        'src/wording words what the gateway said (errors, costs) for members, in their language (src/i18n); every part may use it, so it uses none of them.',
      severity: 'error',
      from: { path: '^src/wording/' },
      to: { path: '^src/', pathNot: '^src/(wording|gateway|i18n|lib)/' },
    },
    {
      name: 'ports-are-interfaces',
      comment:
        'A port is what one part offers another: types over the gateway types, src/lib and notices (what a refusal tells, src/wording/notice.ts), nothing more.',
      severity: 'error',
      from: { path: '^src/ports/' },
      to: { path: '^src/', pathNot: ['^src/(ports|lib)/', '^src/gateway/(types|spec)[.]ts$', '^src/wording/notice[.]ts$'] },
    },
    {
      name: 'parts-meet-through-ports',
      comment:
        'video, settings and voice do not import one another: what one needs of another is a port (src/ports/), wired in src/app.ts.',
      severity: 'error',
      from: { path: `^src/${PARTS}/` },
      to: { path: `^src/${PARTS}/`, pathNot: '^src/$1/' },
    },
    {
      name: 'no-reaching-up',
      comment:
        'Data flows one way (Discord event -> command -> service -> gateway client / store): the layers below never import the composition root, the configuration or the interaction routing.',
      severity: 'error',
      from: { path: `^src/(lib|gateway|emulator|discord|i18n|wording|ports|shards|ops|store|${PARTS.slice(1, -1)})/` },
      to: { path: '^src/(app|main|services|shutdown|config)[.]ts$|^src/interactions/' },
    },
    {
      name: 'src-does-not-import-commands',
      comment: 'commands/ sits on top of src/: the registry loads the commands by file name, nothing in src/ imports one.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^commands/' },
    },
    {
      name: 'commands-are-independent',
      comment: 'One file per application command (slash or message command): what two commands share belongs in src/.',
      severity: 'error',
      from: { path: '^commands/' },
      to: { path: '^commands/' },
    },
    {
      name: 'production-code-imports-no-tests',
      comment: 'The bot and the emulator run without test/ and bench/.',
      severity: 'error',
      from: { path: '^(src|commands)/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-dev-dependencies-at-run-time',
      comment: 'npm ci --omit=dev must leave everything the bot and the emulator import.',
      severity: 'error',
      from: { path: '^(src|commands)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'standin-through-its-entry-point',
      comment:
        'The Discord stand-in (packages/discord-standin) is a package: everyone else imports it as `discord-standin`, its src/index.ts, never a file inside it.',
      severity: 'error',
      from: { pathNot: '^packages/discord-standin/' },
      to: { path: '^packages/discord-standin/', pathNot: '^packages/discord-standin/src/index[.]ts$' },
    },
    {
      name: 'dave-does-not-know-rest',
      comment:
        "The stand-in's DAVE side (a channel's call, MLS, frames, simulated clients) is voice only: it knows nothing of the REST API.",
      severity: 'error',
      from: { path: '^packages/discord-standin/src/dave/' },
      to: { path: '^packages/discord-standin/src/rest/' },
    },
    {
      name: 'bot-does-not-import-the-standin',
      comment: 'The Discord stand-in is for tests and benchmarks: the bot runs against the real Discord and never imports it.',
      severity: 'error',
      from: { path: '^(src|commands)/' },
      to: { path: '^packages/discord-standin/' },
    },
    {
      name: 'standin-stands-alone',
      comment:
        'The stand-in is a product of its own, usable by any discord.js project: it imports nothing outside its package but node_modules and the opusscript-codec package.',
      severity: 'error',
      from: { path: '^packages/discord-standin/' },
      to: {
        pathNot: ['^packages/discord-standin/', '^node_modules/', '^packages/opusscript-codec/src/index[.]ts$'],
        dependencyTypesNot: ['core'],
      },
    },
    {
      name: 'opusscript-codec-through-its-entry-point',
      comment:
        'The opusscript codec (packages/opusscript-codec), which the bot and the stand-in share, is a package: both import it as `opusscript-codec`, its src/index.ts, never a file inside it.',
      severity: 'error',
      from: { pathNot: '^packages/opusscript-codec/' },
      to: { path: '^packages/opusscript-codec/', pathNot: '^packages/opusscript-codec/src/index[.]ts$' },
    },
    {
      name: 'opusscript-codec-stands-alone',
      comment:
        'The opusscript codec is a fix of opusscript, nothing more: it imports nothing of the bot or the stand-in, only node_modules.',
      severity: 'error',
      from: { path: '^packages/opusscript-codec/' },
      to: { pathNot: ['^packages/opusscript-codec/', '^node_modules/'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to nothing fails at run time.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are dependencies too: a cycle through `import type` is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
