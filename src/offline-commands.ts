/** `svc-server validate` and `svc-server rbac can`: read a config dir once, open nothing else. */
import { existsSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { openDirStore } from './config/dir-store.js';
import { formatProblem } from './config/problems.js';
import { parseSettings } from './config/settings.js';
import { createLogger } from './log.js';
import { canOffline } from './rbac/offline.js';

async function loadProblemsAndSettings(dir: string) {
  // Store problems are reported by validate itself; the logger stays quiet to avoid saying them twice.
  const store = await openDirStore({ dir, log: createLogger({ level: 'silent' }), watch: false });
  try {
    const { settings, problems } = parseSettings(store.current());
    return { settings, problems: [...store.problems(), ...problems] };
  } finally {
    await store.close();
  }
}

export async function runValidate(dir: string, out: Writable, err: Writable): Promise<number> {
  if (!existsSync(dir)) {
    err.write(`${dir}: no such directory\n`);
    return 1;
  }
  const { problems } = await loadProblemsAndSettings(dir);
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
  if (!existsSync(dir)) {
    err.write(`${dir}: no such directory\n`);
    return 1;
  }
  const { settings, problems } = await loadProblemsAndSettings(dir);
  for (const problem of problems.filter((p) => p.source === 'svc-rbac-cm')) err.write(`warning: ${formatProblem(problem)}\n`);
  const allowed = await canOffline(settings.policy, q.subject, q.resource, q.action, q.object);
  out.write(allowed ? 'yes\n' : 'no\n');
  return allowed ? 0 : 2;
}
