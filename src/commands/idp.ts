/**
 * `svc-server idp rotate-keys --config DIR` (or `--kube`): a new signing key for the bundled identity provider,
 * published at once and signing a few minutes later, once every replica has it; the previous key stays published until the ID tokens it signed have expired,
 * and keys past that are pruned. The extension identity assertion keys rotate in the same run, the same way (one command for
 * every key svc signs with: an operator rotating after a leak should not have to know there are two).
 * Running servers pick the change up from the store.
 */
import type { Writable } from 'node:stream';
import type { ClusterStoreOptions } from '../config/kube/open.js';
import { openOfflineStore } from './offline-store.js';
import type { ConfigStore } from '../config/store.js';
import { rotateAssertionKeys } from '../extensions/assertion-keys.js';
import { rotateSigningKeys } from '../idp/keys.js';
import { offlineEvent } from '../audit/offline.js';
import { NO_AUDIT, type AuditTrail } from '../audit/trail.js';

const COMMAND = 'idp rotate-keys';

/** `source`: a config dir, or the cluster's store (`--kube`); the rotation is the same write either way. */
export async function runRotateKeys(source: string | ClusterStoreOptions, out: Writable, err: Writable, now = new Date(), audit: AuditTrail = NO_AUDIT): Promise<number> {
  const where = typeof source === 'string' ? { configDir: source } : { store: 'kubernetes' };
  const failed = (e: unknown) => audit.record(offlineEvent(COMMAND, { category: 'configuration', type: 'change', action: 'signing-keys-rotated', outcome: 'failure', reason: e instanceof Error ? e.message : String(e), svc: { ...where, trigger: 'command' } }));
  let store: ConfigStore;
  try {
    store = await openOfflineStore(source);
  } catch (e: unknown) {
    failed(e);
    err.write(`svc-server idp rotate-keys: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  try {
    const report = await rotateSigningKeys(store, now);
    out.write(`added signing key ${report.added.kid}; published now, it signs from ${String(report.added.signsFrom)}\n`);
    for (const kid of report.retired) out.write(`retired signing key ${kid}; it signs until then, and stays published until the tokens it signed expire\n`);
    for (const kid of report.pruned) out.write(`removed signing key ${kid}; every token it signed has expired\n`);
    out.write(`published keys: ${[report.added.kid, ...report.kept].join(', ')}\n`);
    const assertion = await rotateAssertionKeys(store, now);
    out.write(`added identity assertion key ${assertion.added.kid}; published now at /.well-known/svc/jwks.json, it signs from ${String(assertion.added.signsFrom)}\n`);
    for (const kid of assertion.retired) out.write(`retired identity assertion key ${kid}; it signs until then, and stays published until the assertions it signed expire\n`);
    for (const kid of assertion.pruned) out.write(`removed identity assertion key ${kid}; every assertion it signed has expired\n`);
    out.write(`published identity assertion keys: ${[assertion.added.kid, ...assertion.kept].join(', ')}\n`);
    audit.record(offlineEvent(COMMAND, { category: 'configuration', type: 'change', action: 'signing-keys-rotated', outcome: 'success', svc: {
      ...where, trigger: 'command', addedKey: report.added.kid, retiredKeys: report.retired, prunedKeys: report.pruned,
      addedAssertionKey: assertion.added.kid, retiredAssertionKeys: assertion.retired, prunedAssertionKeys: assertion.pruned,
    } }));
    return 0;
  } catch (e: unknown) {
    failed(e);
    err.write(`svc-server idp rotate-keys: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  } finally {
    await store.close();
  }
}
