/**
 * The suite's global setup, run once before any test file (in parallel mode too): dist/ brought
 * up to date with the sources, as `npm start` does. The tests that start svc-server or the svc
 * command line as processes of their own run the compiled entry points (helpers/run.ts,
 * `entryArgs`), as an operator does, and would otherwise run stale code after an edit.
 */
import { execFileSync } from 'node:child_process';
import { ROOT } from './helpers/run.js';

export function mochaGlobalSetup(): void {
  execFileSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: ROOT, stdio: 'inherit' });
}
