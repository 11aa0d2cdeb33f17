/**
 * `svc-server idp rotate-keys --config DIR`: a new signing key for the bundled identity provider,
 * published at once and signing a few minutes later, once every replica has it; the previous key stays published until the ID tokens it signed have expired,
 * and keys past that are pruned. Running servers pick the change up from the store.
 */
import type { Writable } from 'node:stream';
import { pino } from 'pino';
import { openDirStore } from '../config/dir-store.js';
import { rotateSigningKeys } from '../idp/keys.js';

export async function runRotateKeys(dir: string, out: Writable, err: Writable, now = new Date()): Promise<number> {
  const store = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
  try {
    const report = await rotateSigningKeys(store, now);
    out.write(`added signing key ${report.added.kid}; published now, it signs from ${String(report.added.signsFrom)}\n`);
    for (const kid of report.retired) out.write(`retired signing key ${kid}; it signs until then, and stays published until the tokens it signed expire\n`);
    for (const kid of report.pruned) out.write(`removed signing key ${kid}; every token it signed has expired\n`);
    out.write(`published keys: ${[report.added.kid, ...report.kept].join(', ')}\n`);
    return 0;
  } catch (e: unknown) {
    err.write(`svc-server idp rotate-keys: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  } finally {
    await store.close();
  }
}
