#!/usr/bin/env node
// `npm start` runs the compiled server (it answers /healthz in about half the time the sources
// through tsx take). This rebuilds dist/ only when a source file (src/ or connectors/) is newer
// than the last build, or the entry point is missing (a dist/ built before the sources moved under
// dist/src/), so a fresh `npm ci` (whose `prepare` already built) starts at once and an edited
// tree never runs stale code.
//
// TypeScript is a dev dependency: after `npm ci --omit=dev` a built dist/ starts as it is, and a
// missing or stale one is refused with what to run, rather than a "Cannot find module" from tsc.
// `--if-possible` (the `prepare` step, which `npm ci --omit=dev` also runs) only says so and lets
// the install finish: the install is not the moment to fail, `npm start` is.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const SOURCES = ['src', 'connectors', 'tsconfig.json', 'web/src', 'web/tsconfig.json'];
export const ENTRY = 'dist/src/commands/svc-server.js';
/** The package's `bin` entries, executable as `npm run build` leaves them. */
const BINS = [ENTRY, 'dist/src/cli/main.js'];
export const TSC = 'node_modules/typescript/bin/tsc';
/**
 * The server's build is incremental, as `npm run build` is (package.json): a second build with
 * nothing changed checks nothing (4.5 s of CPU against 16 s), and one after an edit only what it
 * touches. The build info lives in dist/, so removing dist/ removes it too: a build info left
 * behind without its outputs would tell tsc they are current.
 */
export const INCREMENTAL = ['--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo'];
const BUILT_MARK = 'dist/.built';

function newestMtime(path) {
  if (!existsSync(path)) return 0; // a production copy may hold dist/ without the sources
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

function builtAt() {
  try {
    return statSync(BUILT_MARK).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * What to do, from what is on disk: 'run' (dist/ is current), 'build' (stale, TypeScript is
 * here), or a sentence saying why it cannot start and what to run.
 */
export function decide({ entryExists, newestSource, builtAt: built, hasTypescript }) {
  const why = !entryExists ? `${ENTRY} is missing` : newestSource > built ? 'dist/ is older than the sources' : undefined;
  if (why === undefined) return { action: 'run' };
  if (hasTypescript) return { action: 'build', why };
  return {
    action: 'refuse',
    why: `${why}, and TypeScript (a dev dependency) is not installed to build it: run \`npm ci\` (with dev dependencies) and \`npm run build\`, or install with a dist/ built elsewhere (\`npm run build\` there, then copy dist/)`,
  };
}

function main() {
  const ifPossible = process.argv.includes('--if-possible');
  const decision = decide({
    entryExists: existsSync(ENTRY),
    newestSource: Math.max(...SOURCES.map(newestMtime)),
    builtAt: builtAt(),
    hasTypescript: existsSync(TSC),
  });
  if (decision.action === 'run') return 0;
  if (decision.action === 'refuse') {
    process.stderr.write(`svc: ${ifPossible ? 'not built' : 'cannot start'}: ${decision.why}\n`);
    return ifPossible ? 0 : 1;
  }
  // The server, then the login and account pages' scripts (web/src -> dist/web, docs/ui.md).
  for (const [project, flags] of [['tsconfig.json', INCREMENTAL], ['web/tsconfig.json', []]]) {
    const result = spawnSync(process.execPath, [TSC, '-p', project, ...flags], { stdio: 'inherit' });
    if (result.status !== 0) return result.status ?? 1;
  }
  for (const bin of BINS) chmodSync(bin, 0o755);
  writeFileSync(BUILT_MARK, new Date().toISOString());
  return 0;
}

// Run as a script (npm's prestart/prepare), not when a test imports decide().
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main();
