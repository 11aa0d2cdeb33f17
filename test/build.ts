/**
 * The suite's global setup, run once before any test file (in parallel mode too, in mocha's own
 * process, before its workers start): dist/ brought up to date with the sources, as `npm start`
 * does, then copied to a directory of this run's own. The tests that start svc-server or the svc
 * command line as processes run that copy's compiled entry points (helpers/run.ts, `entryArgs`),
 * as an operator does: a second of CPU less per process than through tsx. A copy, because the
 * quick start's test runs `npm run build`, which rewrites dist/ in place while the other worker
 * starts processes (one once loaded a half-written module).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, SUITE_DIST_VARIABLE } from './helpers/run.js';

const PARENT = join(ROOT, '.tmp');
const PREFIX = 'suite-dist-';
/** This run's copy: the teardown removes what the setup made, never a directory the environment names. */
let copy: string | undefined;

export function mochaGlobalSetup(): void {
  execFileSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: ROOT, stdio: 'inherit' });
  mkdirSync(PARENT, { recursive: true });
  removeCopiesOfEndedRuns();
  copy = mkdtempSync(join(PARENT, `${PREFIX}${process.pid}-`));
  cpSync(join(ROOT, 'dist'), copy, { recursive: true });
  // Read by entryArgs in mocha's workers, which inherit this process's environment.
  process.env[SUITE_DIST_VARIABLE] = copy;
}

export function mochaGlobalTeardown(): void {
  if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
}

/** Copies left by runs that were killed before their teardown; a run still going keeps its own. */
function removeCopiesOfEndedRuns(): void {
  for (const name of readdirSync(PARENT)) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length).split('-')[0]) : NaN;
    if (Number.isInteger(pid) && pid > 0 && !isRunning(pid)) rmSync(join(PARENT, name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err: unknown) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
