# svc-server in a container, reading its stores from the Kubernetes API (deploy/).
# Not built by CI: no container engine runs there; test/deploy/deploy.test.ts checks what can be
# checked without building (base image's Node major = the pinned runtime's, non-root user, command).

# Build: all dependencies, TypeScript compiled to dist/.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The pinned Node binaries (optional dependencies) are not needed: the base image is that runtime.
RUN npm ci --omit=optional --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY connectors ./connectors
COPY web ./web
RUN npm run build

# Runtime: production dependencies only, compiled code, no compiler, no shell tools added.
FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY web/*.html web/*.css web/*.svg ./web/
RUN chmod 0755 dist/src/commands/svc-server.js && ln -s /app/dist/src/commands/svc-server.js /usr/local/bin/svc-server
# The node image's unprivileged user (uid 1000), as the Deployment's runAsUser.
USER node
EXPOSE 8080
CMD ["svc-server", "--kube"]
