# syntax=docker/dockerfile:1
# One image for the clinic API, the worker, the codec server and the exam-service sandbox; the command picks which:
#   node --v8-pool-size=1 dist/api/server.js | node dist/worker.js | node dist/codec/main.js | node dist/sandbox/main.js
# Debian, not Alpine: the worker's native Temporal core (@temporalio/core-bridge) ships glibc builds only.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# Production dependencies only, for the final image.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund

# Everything, to compile src/ into dist/.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json
# The journey workflows bundled ahead: the worker starts without running webpack (WORKFLOW_BUNDLE_PATH below). Two
# bundles: dist/workflows.bundle.js without tracing, and dist/workflows.bundle.traced.js for a worker with tracing on.
RUN node dist/workflow-bundle.js dist/workflows.bundle.js

FROM ${NODE_IMAGE}
# The workers' version in their Worker Deployment (docs/deploy.md, "Deploying a workflow change"): give each build its
# own, e.g. --build-arg BUILD_ID=$(git rev-parse --short=12 HEAD); empty, the workers run unversioned.
ARG BUILD_ID=
ENV WORKER_BUILD_ID=${BUILD_ID} \
    NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflows.bundle.js
WORKDIR /app
# Root certificates: the slim image has none, and the worker's native Temporal connection needs them for TLS
# (Temporal Cloud). The mount points of the data volumes belong to the user the processes run as (a new named volume
# takes this ownership).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data /attachments \
    && chown node:node /data /attachments
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER node
# API, codec server, sandbox (the worker listens on nothing).
EXPOSE 3000 8888 4010
CMD ["node", "--v8-pool-size=1", "dist/api/server.js"]
