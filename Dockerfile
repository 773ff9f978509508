# syntax=docker/dockerfile:1
# Three images from one build, each a target:
#   product (the default, the last stage): the clinic API, the worker and the codec server; the command picks which:
#     node --v8-pool-size=1 dist/api/server.js | node dist/worker.js | node dist/codec/main.js
#   sandbox (--target sandbox): the exam-service stand-in for tests and demos, node dist/sandbox/main.js. The product
#     image holds none of it (no dist/sandbox): what runs beside the patients' data carries no stand-in service.
#   temporal-ui (--target temporal-ui): Temporal's Web UI image with its server built again with PKCE on its sign-in
#     (tools/temporal-ui/pkce.patch, the same build as scripts/install-temporal-ui.sh).
# Debian, not Alpine: the worker's native Temporal core (@temporalio/core-bridge) ships glibc builds only.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
ARG GO_IMAGE=golang:1.26-bookworm
ARG TEMPORAL_UI_IMAGE=temporalio/ui:2.42.1

# The UI server: its module's source from the Go module proxy, pkce.patch applied, built with CGO off.
FROM ${GO_IMAGE} AS temporal-ui-build
COPY tools/temporal-ui /build
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    sh /build/build.sh /out/ui-server

# Temporal's UI image (its configuration template and start script) with that server in place of its own.
FROM ${TEMPORAL_UI_IMAGE} AS temporal-ui
COPY --from=temporal-ui-build /out/ui-server /home/ui-server/ui-server

# Production dependencies only, for the final images.
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
# The sandbox's image gets the whole of dist/ (its code and the contract it serves); the product's, dist/ without it.
RUN mkdir /sandbox && cp -a dist /sandbox/dist && rm -rf dist/sandbox

# What both images run on: Node.js and the production dependencies.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./

FROM runtime AS sandbox
COPY --from=build /sandbox/dist ./dist
USER node
EXPOSE 4010
CMD ["node", "dist/sandbox/main.js"]

FROM runtime AS product
# The workers' version in their Worker Deployment (docs/deploy.md, "Deploying a workflow change"): give each build its
# own, e.g. --build-arg BUILD_ID=$(git rev-parse --short=12 HEAD); empty, the workers run unversioned.
ARG BUILD_ID=
ENV WORKER_BUILD_ID=${BUILD_ID} \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflows.bundle.js
# Root certificates: the slim image has none, and the worker's native Temporal connection needs them for TLS
# (Temporal Cloud). The mount points of the data volumes belong to the user the processes run as (a new named volume
# takes this ownership).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data /attachments \
    && chown node:node /data /attachments
COPY --from=build /app/dist ./dist
USER node
# API, codec server (the worker listens on nothing).
EXPOSE 3000 8888
CMD ["node", "--v8-pool-size=1", "dist/api/server.js"]
