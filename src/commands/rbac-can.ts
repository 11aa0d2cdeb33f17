/** `svc-server rbac can --config DIR SUBJECT RESOURCE ACTION OBJECT`: the policy's answer, offline. */
import type { Writable } from 'node:stream';
import { RBAC_CM } from '../config/manifests.js';
import { formatProblem } from '../config/problems.js';
import { extensionActionProblem } from '../rbac/methods.js';
import { canOffline } from '../rbac/offline.js';
import { loadProblemsAndSettings, notADirectory } from './load-config.js';

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
  const method = q.resource === 'extensions' ? extensionActionProblem(q.action) : undefined;
  if (method !== undefined) {
    err.write(`rbac can: ${method}\n`);
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
