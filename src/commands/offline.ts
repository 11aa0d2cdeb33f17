/** `svc-server validate` and `svc-server rbac can`: read a config dir once, open nothing else. */
import { statSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { EMPTY_MEMORY, loadDirectory } from '../config/load-dir.js';
import { RBAC_CM } from '../config/manifests.js';
import { formatProblem } from '../config/problems.js';
import { parseSettings } from '../main/settings.js';
import { describeSsoInForce } from '../oidc/in-force.js';
import { canOffline } from '../rbac/offline.js';

async function loadProblemsAndSettings(dir: string) {
  const loaded = await loadDirectory(dir, EMPTY_MEMORY);
  const { settings, problems } = parseSettings(loaded.snapshot);
  // What could hold the policy but was not read: any file that does not parse, and a rejected svc-rbac-cm.
  const unread = [
    ...loaded.rejectedFiles.map((file) => ({ what: file, problems: loaded.problems.filter((p) => p.source === file) })),
    ...loaded.rejectedObjects.filter((r) => r.key === `ConfigMap/${RBAC_CM}`).map((r) => ({ what: r.key, problems: r.problems })),
  ];
  return { settings, problems: [...loaded.problems, ...problems], unread };
}

/** Why `dir` cannot be a config dir (missing, or a file), or undefined when it can. */
function notADirectory(dir: string): string | undefined {
  try {
    return statSync(dir).isDirectory() ? undefined : `${dir}: not a directory`;
  } catch {
    return `${dir}: no such directory`;
  }
}

export async function runValidate(dir: string, out: Writable, err: Writable): Promise<number> {
  const notDir = notADirectory(dir);
  if (notDir !== undefined) {
    err.write(`${notDir}\n`);
    return 1;
  }
  const { settings, problems } = await loadProblemsAndSettings(dir);
  out.write(`${describeSsoInForce(settings)}\n`);
  if (problems.length === 0) {
    out.write(`${dir}: configuration is valid\n`);
    return 0;
  }
  for (const problem of problems) err.write(`${formatProblem(problem)}\n`);
  err.write(`${problems.length} problem${problems.length === 1 ? '' : 's'} found\n`);
  return 1;
}

export interface RbacQuestion {
  readonly subject: string;
  readonly resource: string;
  readonly action: string;
  readonly object: string;
}

/** Exit 0 when allowed, 2 when denied, 1 when the config cannot be read. */
export async function runRbacCan(dir: string, q: RbacQuestion, out: Writable, err: Writable): Promise<number> {
  const notDir = notADirectory(dir);
  if (notDir !== undefined) {
    err.write(`${notDir}\n`);
    return 1;
  }
  const { settings, problems, unread } = await loadProblemsAndSettings(dir);
  if (unread.length > 0) {
    // A gate that reads "no" (or "yes") from half a policy is worse than no answer.
    for (const problem of unread.flatMap((u) => u.problems)) err.write(`${formatProblem(problem)}\n`);
    err.write(`no answer: ${RBAC_CM} may be in what could not be read (${unread.map((u) => u.what).join(', ')}); fix it first\n`);
    return 1;
  }
  for (const problem of problems.filter((p) => p.source === RBAC_CM)) err.write(`warning: ${formatProblem(problem)}\n`);
  const allowed = await canOffline(settings.policy, q.subject, q.resource, q.action, q.object);
  out.write(allowed ? 'yes\n' : 'no\n');
  return allowed ? 0 : 2;
}
