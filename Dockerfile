# syntax=docker/dockerfile:1
# The bot as a container: `docker build -t video-voice-bot .`, then run it with DISCORD_TOKEN and
# GATEWAY_BASE_URL in its environment (compose.yaml adds Redis and, with --profile emulator, the gateway
# emulator). test/app/container.test.ts checks that what this file copies and runs exists in the repo.

# Build stage: the full Node 22 image has python3, make and g++ for native modules (sqlite3, and
# @discordjs/opus: native libopus for voice) that have no prebuilt binary for the platform. Only
# production dependencies are installed. Of the workspace packages, the bot depends on
# packages/opusscript-codec: its package.json is enough for npm ci, which links
# node_modules/opusscript-codec to ../packages/opusscript-codec (its source comes in the runtime stage).
# packages/discord-standin (the Discord stand-in, for tests) is not copied: npm ci skips a workspace whose
# folder is absent, so the image installs the same modules as without it. Optional dependencies are
# installed: @ffmpeg/core (GPL-2.0-or-later), the decoder Vary runs as a program of its own for a
# variant's first frame, is kept in the image (README, "Third-party licences"); so is @discordjs/opus,
# which voice runs in place of opusscript (README, "Performance"). An optional dependency that fails to
# build is skipped without a word, so the next step checks that it loads: the image ships it or is not built.
FROM node:22-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/opusscript-codec/package.json ./packages/opusscript-codec/
RUN npm ci --omit=dev && npm cache clean --force
RUN node -e "require('@discordjs/opus')"
# The /usage chart in Japanese reads one weight of Noto Sans JP (src/settings/usage-chart.ts), of the nine
# the package installs (5.4 MB each): the other eight are removed, 43 MB less in the image. The package's
# licence files stay. test/app/container.test.ts runs this line on a copy of the package's folders.
RUN find node_modules/@expo-google-fonts/noto-sans-jp -mindepth 1 -maxdepth 1 -type d ! -name 400Regular -exec rm -rf {} +

# Runtime: Node 22 slim, the installed modules and the sources (Node strips the TypeScript types itself,
# but not under node_modules: the workspace link resolves to /app/packages/opusscript-codec, outside it).
FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    OPS_HOST=0.0.0.0 \
    OPS_PORT=9464
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json package-lock.json ./
COPY --chown=node:node scripts ./scripts
COPY --chown=node:node packages/opusscript-codec ./packages/opusscript-codec
COPY --chown=node:node src ./src
COPY --chown=node:node commands ./commands
# The embedded SQLite store (STORE_URL default sqlite://data/bot.sqlite) lives in a volume.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.OPS_PORT + '/healthz').then((answer) => process.exit(answer.ok ? 0 : 1), () => process.exit(1))"]
# The bot is the container's first process (PID 1): scripts/bot `exec`s scripts/node, which `exec`s Node,
# so `docker stop`'s SIGTERM reaches the bot and runs its graceful stop, as SIGTERM to `npm start` does
# outside a container (README, "Stopping"). Not CMD ["npm", "start"]: npm 11 exits at once on a signal
# without passing it on, and Docker then kills the bot with the rest of the container.
# As PID 1, Node gets no default action for a signal it has no handler for (the kernel drops it): the bot
# handles SIGINT and SIGTERM once its modules have loaded (src/main.ts), a second or so after the start.
# It reaps what it starts: libuv waits for each child process it spawned when SIGCHLD comes, so a worker of
# the supervisor that dies is reaped (test/shards/supervisor.test.ts checks none is left a zombie), and so
# is each first-frame decoder (src/video/first-frame.ts). What Node does not reap is an orphan re-parented
# to PID 1 (a process whose own parent died first): only a decoder whose worker died in the middle of a
# frame, which ends within its 15 s deadline and stays a zombie (an entry in the process table, no memory)
# until the container restarts. No init is needed; one does no harm: `docker run --init` (compose's
# `init: true`) makes tini PID 1, which passes the signal on to the bot and reaps such orphans.
CMD ["scripts/bot"]
