# syntax=docker/dockerfile:1
# The bot as a container: `docker build -t video-voice-bot .`, then run it with DISCORD_TOKEN and
# GATEWAY_BASE_URL in its environment (compose.yaml adds Redis and, with --profile emulator, the gateway
# emulator). test/app/container.test.ts checks that what this file copies and runs exists in the repo.

# Build stage: the full Node 22 image has python3, make and g++ for native modules (sqlite3) that have
# no prebuilt binary for the platform. Only production dependencies are installed. Of the workspace
# packages, the bot depends on packages/opusscript-codec: its package.json is enough for npm ci, which
# links node_modules/opusscript-codec to ../packages/opusscript-codec (its source comes in the runtime
# stage). packages/discord-standin (the Discord stand-in, for tests) is not copied: npm ci skips a
# workspace whose folder is absent, so the image installs the same modules as without it.
FROM node:22-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/opusscript-codec/package.json ./packages/opusscript-codec/
RUN npm ci --omit=dev && npm cache clean --force

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
CMD ["npm", "start"]
