#!/usr/bin/env node
// `npm start` runs the compiled server (it answers /healthz in about half the time the sources
// through tsx take). This rebuilds dist/ only when a source file (src/ or connectors/) is newer
// than the last build, or the entry point is missing (a dist/ built before the sources moved under
// dist/src/), so a fresh `npm ci` (whose `prepare` already built) starts at once and an edited
// tree never runs stale code.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function builtAt() {
  try {
    return statSync('dist/.built').mtimeMs;
  } catch {
    return 0;
  }
}

const SOURCES = ['src', 'connectors', 'tsconfig.json', 'web/src', 'web/tsconfig.json'];
const ENTRY = 'dist/src/commands/svc-server.js';

function stale() {
  const built = builtAt();
  return !existsSync(ENTRY) || SOURCES.some((path) => (statSync(path).isDirectory() ? newestMtime(path) : statSync(path).mtimeMs) > built);
}

if (stale()) {
  // The server, then the login and account pages' scripts (web/src -> dist/web, docs/ui.md).
  for (const project of ['tsconfig.json', 'web/tsconfig.json']) {
    const result = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
    if (result.status !== 0) process.exit(result.status ?? 1);
  }
  writeFileSync('dist/.built', new Date().toISOString());
}
