# svc-server in a container, reading its stores from the Kubernetes API (deploy/).
# Built and started by the suite (test/e2e/image.test.ts) on a Debian base made from Debian's
# packages (no image registry there), passed as NODE_IMAGE; releases build it on the official
# image, the default. test/deploy/deploy.test.ts checks the facts a build does not (the base's
# Node major = the pinned runtime's, non-root user, command). Releases: docs/operations.md.
#
# NODE_IMAGE must provide what the official node image does: node and npm on PATH, a shell, and
# the unprivileged user `node` (uid 1000, the Deployment's runAsUser).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# Build: all dependencies, TypeScript compiled to dist/, then the dev dependencies removed.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The pinned Node binaries (optional dependencies) are not needed: the base image is that runtime.
# --prefer-offline: the lock file pins every tarball by its integrity, so a cached copy (a build
# that mounts npm's cache on /root/.npm, as the suite does) is the same bytes, and npm skips
# asking the registry again about each of the ~600 packages.
RUN npm ci --omit=optional --ignore-scripts --prefer-offline
COPY tsconfig.json ./
COPY src ./src
COPY connectors ./connectors
COPY web ./web
# `npm prune` leaves the tree `npm ci --omit=dev` installs from the same lock file, without a
# second install (and its downloads) in the runtime stage.
RUN npm run build && npm prune --omit=dev --omit=optional --ignore-scripts

# Runtime: production dependencies only, compiled code, no compiler, no shell tools added.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY web/*.html web/*.css web/*.svg ./web/
RUN chmod 0755 dist/src/commands/svc-server.js && ln -s /app/dist/src/commands/svc-server.js /usr/local/bin/svc-server
# The node image's unprivileged user (uid 1000), as the Deployment's runAsUser.
USER node
EXPOSE 8080
CMD ["svc-server", "--kube"]
