/**
 * `svc-server admin initial-password --config DIR`: the first start's admin password, read from
 * the Secret svc-initial-admin-secret, as `argocd admin initial-password` does. The password
 * alone on stdout (for a script); the advice to change it on stderr.
 */
import type { Writable } from 'node:stream';
import { INITIAL_PASSWORD_KEY } from '../config/bootstrap.js';
import { EMPTY_MEMORY, loadDirectory } from '../config/load-dir.js';
import { INITIAL_ADMIN_SECRET } from '../config/manifests.js';
import { notADirectory } from './load-config.js';
import { offlineEvent } from '../audit/offline.js';
import { NO_AUDIT, type AuditTrail } from '../audit/trail.js';

const COMMAND = 'admin initial-password';

/** Exit 0 with the password, 1 when the dir or the Secret (or its key) is not there. */
export async function runInitialPassword(dir: string, out: Writable, err: Writable, audit: AuditTrail = NO_AUDIT): Promise<number> {
  const read = (outcome: 'success' | 'failure', reason?: string) =>
    audit.record(offlineEvent(COMMAND, { category: 'iam', type: 'info', action: 'initial-password-read', outcome, ...(reason !== undefined ? { reason } : {}), user: { name: 'admin' }, svc: { configDir: dir } }));
  const notDir = notADirectory(dir);
  if (notDir !== undefined) {
    read('failure', notDir);
    err.write(`${notDir}\n`);
    return 1;
  }
  const { snapshot } = await loadDirectory(dir, EMPTY_MEMORY);
  const secret = snapshot.secrets.get(INITIAL_ADMIN_SECRET);
  const password = secret?.data[INITIAL_PASSWORD_KEY];
  if (secret === undefined || password === undefined || password === '') {
    const what = secret === undefined ? `Secret ${INITIAL_ADMIN_SECRET} not found in ${dir}` : `Secret ${INITIAL_ADMIN_SECRET} (${secret.file}) has no key '${INITIAL_PASSWORD_KEY}'`;
    read('failure', what);
    err.write(`${what}: it is written by the first start only, and may have been deleted once the password was changed\n`);
    return 1;
  }
  read('success');
  out.write(`${password}\n`);
  err.write(`\nThis password must be used only for the first login: change it with 'svc account update-password', then delete ${secret.file}.\n`);
  return 0;
}
