/** `svc-server validate --config DIR`: every problem of every store, one line each; exit 0 or 1. */
import type { Writable } from 'node:stream';
import { formatProblem } from '../config/problems.js';
import { describeSsoInForce } from '../oidc/in-force.js';
import { loadProblemsAndSettings, notADirectory } from './load-config.js';

export async function runValidate(dir: string, out: Writable, err: Writable): Promise<number> {
  const notDir = notADirectory(dir);
  if (notDir !== undefined) {
    err.write(`${notDir}\n`);
    return 1;
  }
  const { settings, problems, warnings } = await loadProblemsAndSettings(dir);
  out.write(`${describeSsoInForce(settings)}\n`);
  // The server logs the same text after "configuration warning: "; warnings do not fail validation.
  for (const warning of warnings) err.write(`warning: ${formatProblem(warning)}\n`);
  if (problems.length === 0) {
    out.write(`${dir}: configuration is valid\n`);
    return 0;
  }
  for (const problem of problems) err.write(`${formatProblem(problem)}\n`);
  err.write(`${problems.length} problem${problems.length === 1 ? '' : 's'} found\n`);
  return 1;
}

